//! The controllers look only at the objects a change concerns (`controllers/wake.rs`).
//! After each step of a busy scenario (jobs started, pods exiting, deletions, a node
//! lost and deleted, a node added, Kueue admitting and preempting, and each time the
//! clock passes a deadline, a toleration, a grace period or a requeue backoff), a pass
//! over every object (`settle` reconciles them all) finds nothing left to change: no
//! change was missed by the objects it woke. Moving the clock wakes only the units due.

mod common;

use std::time::Duration;

use common::*;
use dispatch_kf_sim::{Propagation, Sim, SimOptions};
use serde_json::json;

/// Asserts that reconciling every object writes nothing.
fn nothing_left(sim: &Sim, step: &str) {
    let before = sim.resource_version();
    sim.settle();
    assert_eq!(
        sim.resource_version(),
        before,
        "after {step}, a pass over every object still found something to change"
    );
}

fn first_pod_of(sim: &Sim, job: &str) -> String {
    pod_names(sim).into_iter().find(|n| n.starts_with(&format!("{job}-"))).expect("a pod")
}

#[tokio::test]
async fn a_pass_over_every_object_finds_nothing_the_woken_ones_missed() {
    let sim = demo().await;
    sim.install_kueue(16).unwrap();
    nothing_left(&sim, "setup");
    start(&sim, tj("big", 2, false, json!({}))).await;
    start(&sim, tj("small", 1, false, json!({}))).await;
    start(&sim, tj("waits", 1, false, json!({}))).await;
    let queued = json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}});
    start(&sim, tj("queued", 1, true, queued)).await;
    nothing_left(&sim, "four TrainJobs started");

    sim.exit("default", &first_pod_of(&sim, "big"), 0);
    nothing_left(&sim, "a pod succeeded");
    sim.exit("default", &first_pod_of(&sim, "small"), 1);
    nothing_left(&sim, "a pod failed");

    sim.delete("trainjobs", "default", "big", Propagation::Background);
    nothing_left(&sim, "a TrainJob deleted in the background");
    sim.delete("trainjobs", "default", "small", Propagation::Foreground);
    nothing_left(&sim, "a TrainJob deleted in the foreground");

    sim.lose_node("gpu-0");
    nothing_left(&sim, "a node lost");
    sim.advance(Duration::from_secs(301));
    nothing_left(&sim, "the taint manager evicting");
    sim.delete_node("gpu-0");
    nothing_left(&sim, "a node deleted");
    sim.add_gpu_node("gpu-9", 8);
    nothing_left(&sim, "a node added");

    let workload =
        sim.list("workloads", "default")[0]["metadata"]["name"].as_str().unwrap().to_string();
    sim.kueue_preempt("default", &workload);
    nothing_left(&sim, "a Workload preempted");
    sim.delete("workloads", "default", &format!("preemptor-{workload}"), Propagation::Background);
    nothing_left(&sim, "the preemptor deleted");
}

#[tokio::test]
async fn each_time_the_clock_passes_is_seen_by_the_units_it_concerns() {
    let sim = Sim::start_demo(SimOptions::default(), 4, 8).await.unwrap();
    sim.install_kueue(16).unwrap();
    // The Job of `rt`'s trainer has an active deadline of its own.
    install_torch_runtime(&sim, |rt| {
        rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] =
            json!(500);
    });
    let limited = json!({"spec": {"activeDeadlineSeconds": 400}});
    start(&sim, tj("limited", 1, false, limited)).await;
    let on_rt = json!({"spec": {"runtimeRef": {"name": "rt", "kind": "TrainingRuntime"}}});
    start(&sim, tj("job-limited", 1, false, on_rt)).await;
    start(&sim, tj("graceful", 1, false, json!({}))).await;
    let queued = json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}});
    start(&sim, tj("queued", 1, true, queued)).await;
    nothing_left(&sim, "four TrainJobs started");

    let workload =
        sim.list("workloads", "default")[0]["metadata"]["name"].as_str().unwrap().to_string();
    assert!(sim.kueue_pods_ready_timeout("default", &workload));
    nothing_left(&sim, "a Workload evicted for its PodsReady timeout");
    sim.advance(Duration::from_secs(61));
    nothing_left(&sim, "the requeue backoff passed");

    sim.set_slow_termination(true);
    sim.delete("pods", "default", &first_pod_of(&sim, "graceful"), Propagation::Background);
    nothing_left(&sim, "a pod deleted with a grace period");
    sim.advance(Duration::from_secs(30));
    nothing_left(&sim, "the grace period passed");
    sim.set_slow_termination(false);
    // A setting makes every object due once more: done here, so that no advance below
    // finds its deadline through it.
    nothing_left(&sim, "slow termination turned off");

    sim.advance(Duration::from_secs(310));
    nothing_left(&sim, "the TrainJob's active deadline passed");
    sim.advance(Duration::from_secs(100));
    nothing_left(&sim, "the Job's active deadline passed");
    let failed = |name: &str| {
        let tj = sim.get("trainjobs", "default", name).unwrap();
        cond(&tj, "Failed").map(|c| c["reason"].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(failed("limited").as_deref(), Some("DeadlineExceeded"));
    let job = sim.get("jobs", "default", "job-limited-node-0").unwrap();
    assert_eq!(cond(&job, "Failed").unwrap()["reason"], "DeadlineExceeded");
    assert!(failed("job-limited").is_some(), "the Job's deadline failed its TrainJob");
}

#[tokio::test]
async fn a_second_with_nothing_due_reconciles_nothing() {
    let sim = demo().await;
    for i in 0..20 {
        start(&sim, tj(&format!("idle-{i}"), 1, true, json!({}))).await;
    }
    let limited = json!({"spec": {"activeDeadlineSeconds": 120}});
    start(&sim, tj("limited", 1, false, limited)).await;
    sim.settle();
    let before = sim.reconciles();
    sim.advance(Duration::from_secs(1));
    assert_eq!(sim.reconciles(), before, "a second with nothing due woke units");
    sim.advance(Duration::from_secs(119));
    assert!(sim.reconciles() > before, "the deadline woke its TrainJob");
    let limited = sim.get("trainjobs", "default", "limited").unwrap();
    assert_eq!(cond(&limited, "Failed").unwrap()["reason"], "DeadlineExceeded");
}
