//! The cause controller on the simulated cluster: TrainJobs made by hand and by
//! dispatch end, and each end is told as one Event regarding its TrainJob; a restart
//! or a second replica tells nothing twice, and nothing of before it watched.

use std::time::Duration;

use dispatch_core::Backend;
use dispatch_kf_events::telemetry::Telemetry;
use dispatch_kf_events::{Options, Running};
use dispatch_kf_replica::{Role, Telemetry as _};
use dispatch_kf_sim::{Sim, SimOptions};
use dispatch_kf_testkit::*;
use serde_json::{Value, json};

const LEASE_NS: &str = "dispatch-system";
const LEASE: &str = "dispatch-events";

async fn sim() -> Sim {
    let sim =
        cluster_with(SimOptions { start: jiff::Timestamp::now(), ..SimOptions::default() }).await;
    sim.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NS}}))
        .unwrap();
    sim
}

/// A replica named `identity`, on the sim's clock, which stands still unless
/// [`ends`] moves it.
async fn start(sim: &Sim, identity: &str) -> (Running, Telemetry) {
    let options = Options::new(identity);
    let mut replica = dispatch_kf_replica::Options::<Telemetry>::new(LEASE_NS, LEASE, identity);
    replica.retry_period = Duration::from_millis(50);
    replica.lease_duration = Duration::from_secs(3);
    replica.renew_deadline = Duration::from_secs(2);
    replica.clock = std::sync::Arc::new(sim.clock());
    let telemetry = replica.telemetry.clone();
    let running = dispatch_kf_events::spawn(
        connect(sim, "admin").await,
        kube_client(sim, "admin").await,
        options,
        replica,
    );
    eventually("the replica has listed everything", || telemetry.synced().then_some(())).await;
    (running, telemetry)
}

/// After an end: the sim's controllers settle; once the replicas of `telemetry` have
/// seen the moment, the sim's clock passes its settling time.
async fn ends(sim: &Sim, telemetry: &[&Telemetry]) {
    sim.settle();
    for t in telemetry {
        let pending = || (metric(t, "dispatch_events_pending") >= 1.0).then_some(());
        eventually("the moment is seen", pending).await;
    }
    sim.advance(Duration::from_secs(2));
}

async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    for _ in 0..500 {
        if let Some(value) = probe() {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never happened: {what}");
}

/// The Events regarding the TrainJob `name`.
fn told(sim: &Sim, name: &str) -> Vec<Value> {
    sim.list_in("events.k8s.io", "events", NS)
        .into_iter()
        .filter(|e| e["regarding"]["name"] == name)
        .collect()
}

/// A TrainJob made by hand on the sim's runtime, running once settled.
fn hand_made(sim: &Sim, name: &str) {
    sim.apply(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"namespace": NS, "name": name},
        "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
                 "trainer": {"numNodes": 1, "image": "ghcr.io/acme/train:1.4"}}
    }))
    .unwrap();
    sim.settle();
}

/// The running pods of the TrainJob `name`.
fn pods_of(sim: &Sim, name: &str) -> Vec<String> {
    sim.list("pods", NS)
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == name)
        .filter(|p| p["status"]["phase"] == "Running")
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

fn metric(telemetry: &Telemetry, series: &str) -> f64 {
    series_value(&telemetry.metrics_text(), series).unwrap_or(0.0)
}

const OOM_SERIES: &str = r#"dispatch_trainjob_executions_ended_total{namespace="training",runtime="torch-distributed",cause="out-of-memory",provenance="scheduler"}"#;

#[tokio::test]
async fn a_hand_made_train_job_out_of_memory_is_told_once_regarding_it() {
    let sim = sim().await;
    let (replica, telemetry) = start(&sim, "events-a").await;
    hand_made(&sim, "by-hand");
    let pods = pods_of(&sim, "by-hand");
    assert!(!pods.is_empty(), "the TrainJob runs");
    assert!(sim.oom(NS, &pods[0]));
    ends(&sim, &[&telemetry]).await;

    let events =
        eventually("its Event", || Some(told(&sim, "by-hand")).filter(|e| !e.is_empty())).await;
    let [event] = events.as_slice() else { panic!("{events:#?}") };
    assert_eq!((&event["reason"], &event["type"]), (&json!("OutOfMemory"), &json!("Warning")));
    assert_eq!(event["action"], "Ended");
    assert_eq!(event["reportingController"], "dispatch.phpboyscout.uk/events");
    assert_eq!(event["reportingInstance"], "events-a");
    let uid = sim.get("trainjobs", NS, "by-hand").unwrap()["metadata"]["uid"].clone();
    assert_eq!(event["regarding"]["uid"], uid);
    assert!(event["note"].as_str().unwrap().contains("OOMKilled"), "{event:#}");
    assert_eq!(metric(&telemetry, OOM_SERIES), 1.0);
    assert_eq!(telemetry.role(), Role::Leading);
    replica.shut_down().await;
}

/// The ends of all the TrainJobs told so far, whatever their labels.
fn ended_total(telemetry: &Telemetry) -> f64 {
    series_sum(&telemetry.metrics_text(), "dispatch_trainjob_executions_ended_total", "")
}

/// The rank exits 1.
fn exits_one(sim: &Sim, pod: &str) {
    assert!(sim.exit(NS, pod, 1));
}

/// The scheduler preempts the rank for a higher-priority pod.
fn preempted(sim: &Sim, pod: &str) {
    assert!(sim.preempt(NS, pod));
}

/// The rank's node stops reporting; its pods are evicted after 300 s, and once the
/// administrator takes the node out of service they go and the job fails.
fn node_lost(sim: &Sim, pod: &str) {
    let node = sim.get("pods", NS, pod).unwrap()["spec"]["nodeName"].as_str().unwrap().to_owned();
    assert!(sim.lose_node(&node));
    sim.advance(Duration::from_secs(301));
    sim.settle();
    assert!(sim.taint_out_of_service(&node));
}

/// One way a TrainJob ends: its name, what happens to its first rank, the reason of its
/// Event and the cause the counter labels.
struct End {
    name: &'static str,
    happens: fn(&Sim, &str),
    reason: &'static str,
    cause: &'static str,
}

#[tokio::test]
async fn each_way_a_hand_made_train_job_ends_is_told_once_with_its_reason() {
    let sim = sim().await;
    let (replica, telemetry) = start(&sim, "events-a").await;
    // The node loss last: its node stays lost.
    let ends_of = [
        End {
            name: "exits-one",
            happens: exits_one,
            reason: "NonZeroExit",
            cause: "non-zero-exit",
        },
        End { name: "preempted", happens: preempted, reason: "Preempted", cause: "preempted" },
        End { name: "node-lost", happens: node_lost, reason: "NodeLost", cause: "node-lost" },
    ];
    for (told_so_far, End { name, happens, reason, cause }) in ends_of.into_iter().enumerate() {
        hand_made(&sim, name);
        let pods = pods_of(&sim, name);
        assert!(!pods.is_empty(), "{name} runs");
        happens(&sim, &pods[0]);
        ends(&sim, &[&telemetry]).await;
        let events = eventually(name, || Some(told(&sim, name)).filter(|e| !e.is_empty())).await;
        let [event] = events.as_slice() else { panic!("{name}: {events:#?}") };
        assert_eq!((&event["reason"], &event["action"]), (&json!(reason), &json!("Ended")));
        assert_eq!(event["type"], "Warning", "{event:#}");
        let note = event["note"].as_str().unwrap_or_default();
        assert!(!note.contains("dispatch makes"), "{name}: explain's notes in {note}");
        // The counter moved once, under the cause.
        assert_eq!(ended_total(&telemetry), (told_so_far + 1) as f64, "{name}");
        let series = format!(r#"namespace="training",runtime="torch-distributed",cause="{cause}""#);
        assert!(telemetry.metrics_text().contains(&series), "{name}: {series}");
    }
    replica.shut_down().await;
}

#[tokio::test]
async fn a_hand_made_train_job_preempted_by_kueue_is_told_once_as_evicted() {
    let sim = sim().await;
    // Kueue as a cluster without dispatch runs it: the queue checks nothing.
    for mut object in dispatch_kf_sim::kueue_setup(16) {
        match object["kind"].as_str() {
            Some("LocalQueue") => object["metadata"]["namespace"] = NS.into(),
            Some("ClusterQueue") => {
                object["spec"].as_object_mut().unwrap().remove("admissionChecksStrategy");
            }
            _ => {}
        }
        sim.apply(object).unwrap();
    }
    let (replica, telemetry) = start(&sim, "events-a").await;
    sim.apply(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"namespace": NS, "name": "queued", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
        "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
                 "trainer": {"numNodes": 1, "image": "ghcr.io/acme/train:1.4"}}
    }))
    .unwrap();
    sim.settle();
    assert!(!pods_of(&sim, "queued").is_empty(), "Kueue admitted it and it runs");
    let workload = sim.list("workloads", NS).pop().expect("its Workload");
    assert!(sim.kueue_preempt(NS, workload["metadata"]["name"].as_str().unwrap()));
    ends(&sim, &[&telemetry]).await;

    let events =
        eventually("its Event", || Some(told(&sim, "queued")).filter(|e| !e.is_empty())).await;
    let [event] = events.as_slice() else { panic!("{events:#?}") };
    assert_eq!((&event["reason"], &event["action"]), (&json!("Preempted"), &json!("Evicted")));
    assert_eq!(ended_total(&telemetry), 1.0);
    replica.shut_down().await;
}

#[tokio::test]
async fn a_restart_tells_nothing_again_and_nothing_that_ended_before_it_watched() {
    let sim = sim().await;
    hand_made(&sim, "before");
    assert!(sim.exit(NS, &pods_of(&sim, "before")[0], 1));
    sim.settle();

    let (first, a) = start(&sim, "events-a").await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = running_job(&sim, &b, 1).await;
    let pod = eventually("the job's pods run", || pods_of(&sim, &object.name).pop()).await;
    assert!(sim.exit(NS, &pod, 1));
    ends(&sim, &[&a]).await;
    eventually("its Event", || (told(&sim, &object.name).len() == 1).then_some(())).await;
    first.abort().await;

    let (second, telemetry) = start(&sim, "events-b").await;
    // It takes the crashed replica's Lease a whole lease duration after it saw it.
    eventually("b stands by", || (telemetry.role() == Role::StandingBy).then_some(())).await;
    sim.advance(Duration::from_secs(4));
    eventually("the new replica leads", || (telemetry.role() == Role::Leading).then_some(())).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(told(&sim, &object.name).len(), 1, "not told again");
    assert!(told(&sim, "before").is_empty(), "it ended before any replica watched");
    assert!(!telemetry.metrics_text().contains("dispatch_trainjob_executions_ended_total{"));
    b.stop_job(&hold_cx(), &job(1)).await.unwrap();
    second.shut_down().await;
}

#[tokio::test]
async fn a_standby_that_takes_over_tells_what_it_saw_once_and_the_apiserver_refuses_the_rest() {
    let sim = sim().await;
    let (leader, a) = start(&sim, "events-a").await;
    eventually("a leads", || (a.role() == Role::Leading).then_some(())).await;
    let (standby, b) = start(&sim, "events-b").await;
    eventually("b stands by", || (b.role() == Role::StandingBy).then_some(())).await;

    hand_made(&sim, "both-saw");
    assert!(sim.oom(NS, &pods_of(&sim, "both-saw")[0]));
    ends(&sim, &[&a, &b]).await;
    eventually("its Event", || (told(&sim, "both-saw").len() == 1).then_some(())).await;
    leader.abort().await;
    // The standby saw the same end; once it leads, its create is refused by name.
    sim.advance(Duration::from_secs(4));
    eventually("b leads", || (b.role() == Role::Leading).then_some(())).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(told(&sim, "both-saw").len(), 1);
    assert_eq!(metric(&a, OOM_SERIES) + metric(&b, OOM_SERIES), 1.0);
    standby.shut_down().await;
}
