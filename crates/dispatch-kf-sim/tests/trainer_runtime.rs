//! The Trainer's runtime snapshot ConfigMap (kubeflow/trainer `pkg/runtime/core/snapshot.go`)
//! and its `TrainingRuntimeNotSupported` failure, through the real client.

mod common;

use std::time::Duration;

use common::*;
use dispatch_kf_sim::Sim;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn snapshot(sim: &Sim, tj: &str) -> Option<Value> {
    sim.get("configmaps", "default", &format!("{tj}-runtime-snapshot"))
}

async fn resume(sim: &Sim, name: &str) {
    trainjobs(&client(sim).await)
        .patch(name, &PatchParams::default(), &Patch::Merge(json!({"spec": {"suspend": false}})))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_trainer_snapshots_the_runtime_into_a_configmap_the_trainjob_controls() {
    let sim = demo().await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    let cm = snapshot(&sim, "job").expect("the snapshot exists");
    let tjo = sim.get("trainjobs", "default", "job").unwrap();
    let owner = &cm["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].clone(), owner["uid"].clone()),
        (json!("TrainJob"), tjo["metadata"]["uid"].clone())
    );
    assert_eq!(
        (owner["controller"].clone(), owner["blockOwnerDeletion"].clone()),
        (json!(true), json!(true))
    );
    let rt: Value = serde_json::from_str(cm["data"]["runtime"].as_str().unwrap()).unwrap();
    assert_eq!(
        (rt["kind"].clone(), rt["metadata"]["name"].clone()),
        (json!("ClusterTrainingRuntime"), json!("torch-distributed"))
    );
    assert_eq!(rt["spec"], dispatch_kf_sim::torch_distributed()["spec"]);
    let mf = &cm["metadata"]["managedFields"][0];
    assert_eq!(
        (mf["manager"].clone(), mf["operation"].clone()),
        (json!("trainer"), json!("Apply"))
    );
}

#[tokio::test]
async fn a_runtime_edited_or_deleted_after_the_snapshot_no_longer_changes_the_trainjob() {
    let sim = demo().await;
    install_runtime(&sim, "rt");
    let extra = json!({"spec": {"runtimeRef": {"name": "rt", "kind": "TrainingRuntime"}}});
    start(&sim, tj("job", 1, true, extra)).await;
    let mut rt = sim.get("trainingruntimes", "default", "rt").unwrap();
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = json!(3);
    sim.apply(rt).unwrap();
    resume(&sim, "job").await;
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert_eq!(js["spec"]["replicatedJobs"][0]["replicas"], 1, "built from the snapshot");
    assert_eq!(sim.list("jobs", "default").len(), 1);
    sim.delete("trainingruntimes", "default", "rt", dispatch_kf_sim::Propagation::Background);
    let pod = pod_names(&sim).remove(0);
    sim.exit("default", &pod, 0);
    let t = sim.get("trainjobs", "default", "job").unwrap();
    assert_eq!(
        cond(&t, "Complete").unwrap()["reason"],
        "AllJobsCompleted",
        "the Trainer still follows its JobSet without the runtime"
    );
}

#[tokio::test]
async fn a_snapshot_controlled_by_another_object_stops_the_trainer() {
    let sim = demo().await;
    sim.apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "job-runtime-snapshot", "namespace": "default"},
        "data": {"runtime": "{}"}}))
        .unwrap();
    start(&sim, tj("job", 1, false, json!({}))).await;
    assert!(sim.get("jobsets", "default", "job").is_none());
    assert!(cond(&sim.get("trainjobs", "default", "job").unwrap(), "Failed").is_none());
}

#[tokio::test]
async fn background_deletion_of_the_trainjob_collects_its_snapshot_after_the_gc_lag() {
    let sim = demo_with_gc_lag(60).await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    delete_in_background(&sim, "job").await;
    assert!(snapshot(&sim, "job").is_some(), "an orphan for a while");
    sim.advance(Duration::from_secs(60));
    assert!(snapshot(&sim, "job").is_none());
}

#[tokio::test]
async fn an_unsupported_runtime_kind_fails_the_trainjob_with_training_runtime_not_supported() {
    let sim = demo().await;
    let mut job = serde_json::to_value(tj("job", 1, false, json!({}))).unwrap();
    job["spec"]["runtimeRef"] = json!({"name": "x", "apiGroup": "example.com", "kind": "Runtime"});
    job["metadata"]["namespace"] = json!("default");
    let api = trainjobs(&client(&sim).await);
    let obj: kube::api::DynamicObject = serde_json::from_value(job.clone()).unwrap();
    let err = api.create(&PostParams::default(), &obj).await.unwrap_err();
    let s = api_status(err);
    assert_eq!(s.code, 403);
    assert!(
        s.message.ends_with("denied the request: unsupported runtime: Runtime.example.com"),
        "{}",
        s.message
    );
    // Past the webhook (created while it was down), the controller fails the TrainJob.
    sim.apply(job).unwrap();
    let t = sim.get("trainjobs", "default", "job").unwrap();
    let c = cond(&t, "Failed").unwrap();
    assert_eq!(
        (c["reason"].clone(), c["message"].clone()),
        (json!("TrainingRuntimeNotSupported"), json!("unsupported runtime: Runtime.example.com"))
    );
    assert!(sim.get("jobsets", "default", "job").is_none());
    assert!(snapshot(&sim, "job").is_none());
}
