//! Every fault kind through the real `kube::Client`, and the request log that tells a
//! test what reached the server and whether it took effect.

mod common;

use std::error::Error as _;
use std::io;
use std::time::Duration;

use common::*;
use dispatch_kf_sim::{Fault, FaultAction};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};

/// The first `io::Error` kind in an error's source chain.
fn io_kind(e: &kube::Error) -> Option<io::ErrorKind> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            return Some(io.kind());
        }
        cur = err.source();
    }
    None
}

/// Whether the error chain says the client gave up waiting for a response.
fn timed_out(e: &kube::Error) -> bool {
    io_kind(e) == Some(io::ErrorKind::TimedOut) || format!("{e:?}").contains("TimedOut")
}

fn plain() -> WatchParams {
    WatchParams { bookmarks: false, ..Default::default() }
}

#[tokio::test]
async fn refusing_connections_fails_even_a_pooled_client_with_connection_refused() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.list(&ListParams::default()).await.unwrap(); // leaves a keep-alive connection in the pool
    sim.set_refusing(true).await;
    sim.clear_requests();
    let err = api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err();
    assert_eq!(io_kind(&err), Some(io::ErrorKind::ConnectionRefused), "{err:?}");
    assert!(sim.requests().is_empty(), "nothing reached the server");
    assert!(sim.list("trainjobs", "default").is_empty());
    sim.set_refusing(false).await;
    api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap();
}

#[tokio::test]
async fn reset_before_apply_answers_nothing_and_creates_nothing() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::ResetBeforeApply));
    let api = trainjobs(&client(&sim).await);
    let err = api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err();
    assert!(!matches!(err, kube::Error::Api(_)), "no answer expected, got {err:?}");
    assert!(sim.list("trainjobs", "default").is_empty());
    let rec = sim.requests().into_iter().find(|r| r.verb == "create").unwrap();
    assert_eq!((rec.status, rec.effect), (None, false));
}

#[tokio::test]
async fn reset_after_apply_answers_nothing_but_the_object_exists() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::ResetAfterApply));
    let api = trainjobs(&client(&sim).await);
    let err = api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err();
    assert!(!matches!(err, kube::Error::Api(_)), "no answer expected, got {err:?}");
    assert_eq!(sim.list("trainjobs", "default").len(), 1, "exactly one TrainJob exists");
    let rec = sim.requests().into_iter().find(|r| r.verb == "create").unwrap();
    assert_eq!((rec.status, rec.effect), (None, true));
}

#[tokio::test]
async fn a_delayed_answer_trips_the_client_read_timeout_after_the_write_applied() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::Delay(Duration::from_secs(600))));
    let api = trainjobs(&client_with_timeout(&sim, Duration::from_millis(300)).await);
    let err = api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err();
    assert!(timed_out(&err), "{err:?}");
    assert_eq!(sim.list("trainjobs", "default").len(), 1);
}

#[tokio::test]
async fn a_chosen_status_is_answered_and_nothing_applied() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let action = Fault::status(503, "ServiceUnavailable", "etcd is down");
    sim.add_fault(Fault::on("create", "trainjobs", action));
    let api = trainjobs(&client(&sim).await);
    let err = api_status(
        api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err(),
    );
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (503, "ServiceUnavailable", "etcd is down")
    );
    assert!(sim.list("trainjobs", "default").is_empty());
}

#[tokio::test]
async fn the_nth_match_fires_and_only_it() {
    let sim = sim().await;
    sim.add_fault(
        Fault::on("create", "configmaps", Fault::status(500, "InternalError", "boom")).nth(2),
    );
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let cm =
        |n: &str| serde_json::from_value(serde_json::json!({"metadata": {"name": n}})).unwrap();
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert_eq!(
        api_status(api.create(&PostParams::default(), &cm("b")).await.unwrap_err()).code,
        500
    );
    api.create(&PostParams::default(), &cm("c")).await.unwrap();
    assert_eq!(sim.list("configmaps", "default").len(), 2);
}

#[tokio::test]
async fn an_expired_list_is_410_expired() {
    let sim = sim().await;
    sim.add_fault(Fault::on("list", "configmaps", FaultAction::ExpireList));
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let err = api_status(api.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    api.list(&ListParams::default()).await.unwrap();
}

#[tokio::test]
async fn an_expired_watch_sends_an_error_event_inside_a_200_stream() {
    let sim = sim().await;
    sim.add_fault(Fault::on("watch", "configmaps", FaultAction::ExpireWatch));
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let mut s = api.watch(&plain(), "0").await.unwrap().boxed();
    let Some(Ok(WatchEvent::Error(status))) = s.next().await else {
        panic!("expected an ERROR event")
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(s.next().await.is_none(), "the stream ends after the error");
}

#[tokio::test]
async fn a_closed_watch_ends_after_its_initial_events() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let cm = serde_json::from_value(serde_json::json!({"metadata": {"name": "a"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    sim.add_fault(Fault::on("watch", "configmaps", FaultAction::CloseWatch));
    let mut s = api.watch(&plain(), "0").await.unwrap().boxed();
    assert!(matches!(s.next().await, Some(Ok(WatchEvent::Added(_)))));
    assert!(s.next().await.is_none(), "the stream is closed");
}

#[tokio::test]
async fn close_watches_ends_every_open_stream() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let rv = sim.resource_version().to_string();
    let mut s = api.watch(&plain(), &rv).await.unwrap().boxed();
    sim.close_watches();
    assert!(s.next().await.is_none());
}

#[tokio::test]
async fn the_request_log_records_user_verb_status_and_effect() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    sim.clear_requests();
    let _ = api.get("missing").await;
    let cm = serde_json::from_value(serde_json::json!({"metadata": {"name": "a"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    let log = sim.requests();
    let summary: Vec<_> = log
        .iter()
        .map(|r| {
            (
                r.user.as_deref(),
                r.verb.as_str(),
                r.resource.as_str(),
                r.name.as_str(),
                r.status,
                r.effect,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Some("admin"), "get", "configmaps", "missing", Some(404), false),
            (Some("admin"), "create", "configmaps", "", Some(201), true),
        ]
    );
}
