//! The controllers look only at the objects a change concerns (`controllers/wake.rs`).
//! After each step of a busy scenario (jobs started, pods exiting, deletions, a node
//! lost and deleted, a node added, Kueue admitting and preempting), a pass over every
//! object (`advance` by zero reconciles them all) finds nothing left to change: no
//! change was missed by the objects it woke.

mod common;

use std::time::Duration;

use common::*;
use dispatch_kf_sim::{Propagation, Sim};
use serde_json::json;

/// Asserts that reconciling every object writes nothing.
fn nothing_left(sim: &Sim, step: &str) {
    let before = sim.resource_version();
    sim.advance(Duration::ZERO);
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
