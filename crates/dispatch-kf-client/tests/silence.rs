//! A watch whose connection goes silent, as one a proxy or load balancer keeps open and
//! passes nothing on, is given up past its timeout and resumed from the last resource
//! version it saw: the change made meanwhile arrives, and the watch goes on. Nothing
//! here is timed; `NO_HANG` only turns a hang into a failure. How soon, with the
//! defaults, is the constants' test below and the figures in docs/errors.md.

mod common;

use std::time::Duration;

use common::CONFIG_MAP;
use dispatch_core::CallContext;
use dispatch_kf_client::{Change, Changes, Cluster, ClusterConfig, WATCH_TIMEOUT};
use dispatch_kf_sim::{Sim, SimOptions};
use dispatch_kf_testkit::Proxy;
use futures::StreamExt;
use serde_json::json;

const NS: &str = "default";

/// A guard, not a measure: a watch that would hang fails instead.
const NO_HANG: Duration = Duration::from_secs(60);

/// The sim's admin, through `proxy`, asking watches to stay open `watch_timeout`.
async fn cluster_through(sim: &Sim, proxy: &Proxy, watch_timeout: Duration) -> Cluster {
    let kubeconfig = proxy.kubeconfig_yaml(sim, "admin");
    let dir = std::env::temp_dir().join(format!("dispatch-kf-silence-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.kubeconfig", proxy.port()));
    std::fs::write(&path, kubeconfig).unwrap();
    let config = ClusterConfig {
        kubeconfig: Some(path),
        context: None,
        request_timeout: Duration::from_secs(2),
    };
    Cluster::connect(&config).await.unwrap().with_watch_timeout(watch_timeout).unwrap()
}

fn config_map(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NS}, "data": {"x": "1"}})
}

/// The names a change brings: the one applied, or every one listed anew.
fn names(change: Change) -> Vec<String> {
    match change {
        Change::Listed(views) => views.iter().map(|v| v.meta().name().to_owned()).collect(),
        Change::Applied(view) | Change::Deleted(view) => vec![view.meta().name().to_owned()],
    }
}

/// A sim behind a proxy holding the ConfigMap `before`, the sim's admin through the
/// proxy (watches asked to stay open `watch_timeout`), and a watch of ConfigMaps that
/// has listed `before`.
async fn watching_before(watch_timeout: Duration) -> (Sim, Proxy, Cluster, Changes) {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let proxy = Proxy::to(&sim).await;
    let cluster = cluster_through(&sim, &proxy, watch_timeout).await;
    let cms = cluster.objects(CONFIG_MAP, NS);
    cms.create(&CallContext::background(), &config_map("before")).await.unwrap();
    let mut watch = cms.watch("");
    let first = tokio::time::timeout(NO_HANG, watch.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(names(first), ["before"]);
    (sim, proxy, cluster, watch)
}

#[tokio::test]
async fn a_watch_whose_connection_goes_silent_resumes_and_sees_the_change_made_meanwhile() {
    let (sim, proxy, _, mut watch) = watching_before(Duration::from_secs(1)).await;

    proxy.freeze();
    sim.apply(config_map("meanwhile")).unwrap();
    let next = tokio::time::timeout(NO_HANG, watch.next())
        .await
        .expect("the silent connection is given up and the watch resumes")
        .expect("the watch goes on")
        .expect("one silent connection is not an error");
    assert!(names(next).contains(&"meanwhile".to_owned()), "the change made meanwhile arrives");

    sim.apply(config_map("after")).unwrap();
    let after = tokio::time::timeout(NO_HANG, watch.next()).await.unwrap().unwrap().unwrap();
    assert!(names(after).contains(&"after".to_owned()), "and the watch goes on");
}

/// With the defaults (a 30 s request timeout), a silent watch connection is given up
/// and replaced within a minute: the apiserver ends a quiet watch at its timeout, so
/// silence past it and the margin means the path is gone; the watcher's first backoff
/// (0.8 s, at most about 1.1 s with its jitter) comes before the new connection.
#[tokio::test]
async fn a_silent_watch_connection_is_replaced_within_a_minute_by_default() {
    let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    let cluster = Cluster::from_kube_config(config, Duration::from_secs(30)).unwrap();
    assert_eq!(cluster.watch_timeout(), WATCH_TIMEOUT);
    let first_backoff = Duration::from_millis(1_100);
    let replaced = cluster.watch_silence() + first_backoff;
    assert!(replaced < Duration::from_secs(60), "{replaced:?}");
}

/// A watch whose connection is cut (closed both ways mid-stream, as a load balancer's
/// restart leaves it) resumes from the last version it saw and sees the change made
/// meanwhile; a read through connections slowed below the request timeout answers.
#[tokio::test]
async fn a_watch_whose_connection_is_cut_resumes_and_a_slowed_read_still_answers() {
    let (sim, proxy, cluster, mut watch) = watching_before(Duration::from_secs(30)).await;
    let cms = cluster.objects(CONFIG_MAP, NS);

    let made = proxy.connections_made();
    proxy.cut();
    sim.apply(config_map("meanwhile")).unwrap();
    let next = tokio::time::timeout(NO_HANG, watch.next())
        .await
        .expect("the cut connection is replaced")
        .expect("the watch goes on")
        .expect("one cut connection is not an error");
    assert!(names(next).contains(&"meanwhile".to_owned()), "the change made meanwhile arrives");
    assert!(proxy.connections_made() > made, "the watch came back on a new connection");

    proxy.slow(Duration::from_millis(300));
    let began = std::time::Instant::now();
    let read = cms.get_opt(&CallContext::background(), "meanwhile").await.unwrap();
    assert!(read.is_some(), "a slowed read answers");
    // A bound below, not a measure: the request and its answer each waited.
    assert!(began.elapsed() >= Duration::from_millis(600), "{:?}", began.elapsed());
    proxy.slow(Duration::ZERO);
}
