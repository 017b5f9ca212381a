//! Kueue through the real client: a Workload per queued TrainJob, the admission gate,
//! quota, admission checks with podSetUpdates, deactivation and check retries evicting
//! and suspending the TrainJob, and the gate annotation that can only shrink.

mod common;

use common::*;
use dispatch_kf_sim::{Sim, SimOptions};
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

async fn kueue_cluster(quota: u32) -> Sim {
    let sim = Sim::start_demo(SimOptions::default(), 2, 8).await.unwrap();
    sim.install_kueue(quota).unwrap();
    sim
}

fn queued(name: &str, gate: Option<&str>) -> DynamicObject {
    let mut meta = json!({"name": name, "labels": {"kueue.x-k8s.io/queue-name": "team-a"}});
    if let Some(g) = gate {
        meta["annotations"] = json!({"kueue.x-k8s.io/admission-gated-by": g});
    }
    serde_json::from_value(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
        "spec": {"runtimeRef": {"name": "torch-distributed"},
                 "trainer": {"image": "t:1", "numNodes": 1, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}}
    }))
    .unwrap()
}

fn workload(sim: &Sim) -> Value {
    sim.list("workloads", "default").pop().expect("a Workload")
}

fn cond<'a>(obj: &'a Value, typ: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == typ)
}

async fn set_check(sim: &Sim, state: &str) {
    let wl = workload(sim);
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client(sim).await, "default", &workloads_ar());
    let mut checks = wl["status"]["admissionChecks"].clone();
    checks[0]["state"] = json!(state);
    checks[0]["podSetUpdates"] = json!([{"name": "node", "annotations": {"d/admission": "1"}}]);
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"admissionChecks": checks}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_gated_trainjob_gets_a_suspended_gated_workload() {
    let sim = kueue_cluster(16).await;
    trainjobs(&client(&sim).await)
        .create(&PostParams::default(), &queued("job", Some("d/start")))
        .await
        .unwrap();
    let tj = sim.get("trainjobs", "default", "job").unwrap();
    assert_eq!(tj["spec"]["suspend"], true, "Kueue suspends a queued job at creation");
    let wl = workload(&sim);
    let name = wl["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("trainjob-job-") && name.len() == "trainjob-job-".len() + 5, "{name}");
    assert_eq!(wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], tj["metadata"]["uid"]);
    assert_eq!(wl["metadata"]["annotations"]["kueue.x-k8s.io/admission-gated-by"], "d/start");
    let c = cond(&wl, "QuotaReserved").unwrap();
    assert_eq!(
        (c["status"].clone(), c["reason"].clone()),
        (json!("False"), json!("AdmissionGated"))
    );
    assert_eq!(c["message"], "Admission is gated by: d/start");
    assert!(sim.list("pods", "default").is_empty());
}

#[tokio::test]
async fn removing_the_gate_reserves_quota_and_a_ready_check_admits_and_resumes() {
    let sim = kueue_cluster(16).await;
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &queued("job", Some("d/start"))).await.unwrap();
    let ungate = Patch::Merge(
        json!({"metadata": {"annotations": {"kueue.x-k8s.io/admission-gated-by": null}}}),
    );
    api.patch("job", &PatchParams::default(), &ungate).await.unwrap();
    let wl = workload(&sim);
    assert_eq!(cond(&wl, "QuotaReserved").unwrap()["status"], "True");
    assert_eq!(wl["status"]["admissionChecks"][0]["state"], "Pending");
    assert!(cond(&wl, "Admitted").is_none_or(|c| c["status"] != "True"));
    set_check(&sim, "Ready").await;
    assert_eq!(cond(&workload(&sim), "Admitted").unwrap()["status"], "True");
    let tj = sim.get("trainjobs", "default", "job").unwrap();
    assert_eq!(tj["spec"]["suspend"], false);
    let pods = sim.list("pods", "default");
    assert_eq!(pods.len(), 1);
    assert_eq!(
        pods[0]["metadata"]["annotations"]["d/admission"], "1",
        "podSetUpdates reach the pods"
    );
}

/// Kueue's "handle job is finished": a failed TrainJob's Workload is `Finished`, and
/// from then on Kueue leaves the TrainJob alone, even after the Trainer clears its
/// `Failed` (its JobSet gone) and someone suspends it.
#[tokio::test]
async fn a_failed_trainjobs_workload_is_finished_and_kueue_leaves_the_trainjob_alone() {
    let sim = kueue_cluster(16).await;
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &queued("job", None)).await.unwrap();
    set_check(&sim, "Ready").await;
    let pod = sim.list("pods", "default").pop().unwrap();
    sim.exit("default", pod["metadata"]["name"].as_str().unwrap(), 1);
    let wl = workload(&sim);
    let finished = cond(&wl, "Finished").expect("Finished");
    assert_eq!(
        (finished["status"].as_str(), finished["reason"].as_str()),
        (Some("True"), Some("Failed"))
    );
    let suspend = Patch::Merge(json!({"spec": {"suspend": true}}));
    api.patch("job", &PatchParams::default(), &suspend).await.unwrap();
    let jobsets: Api<DynamicObject> =
        Api::namespaced_with(client(&sim).await, "default", &jobsets_ar());
    jobsets.delete("job", &kube::api::DeleteParams::background()).await.unwrap();
    sim.settle();
    let tj = sim.get("trainjobs", "default", "job").unwrap();
    assert!(cond(&tj, "Failed").is_none(), "the Trainer cleared Failed: {tj:#}");
    assert_eq!(tj["spec"]["suspend"], true, "Kueue did not resume it");
    assert_eq!(workload(&sim), wl, "Kueue did not touch the finished Workload");
}

#[tokio::test]
async fn deactivating_or_a_retry_evicts_and_suspends_the_trainjob() {
    let sim = kueue_cluster(16).await;
    trainjobs(&client(&sim).await)
        .create(&PostParams::default(), &queued("job", None))
        .await
        .unwrap();
    set_check(&sim, "Ready").await;
    assert_eq!(sim.list("pods", "default").len(), 1);
    set_check(&sim, "Retry").await;
    let wl = workload(&sim);
    // Evicted, then requeued at once: quota is reserved again and the check waits.
    assert_eq!(
        cond(&wl, "Evicted").unwrap()["message"],
        "Previously: At least one admission check is false"
    );
    assert_eq!(cond(&wl, "Admitted").unwrap()["status"], "False");
    assert_eq!(wl["status"]["admissionChecks"][0]["state"], "Pending");
    assert_eq!(sim.get("trainjobs", "default", "job").unwrap()["spec"]["suspend"], true);
    assert!(sim.list("pods", "default").is_empty());
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client(&sim).await, "default", &workloads_ar());
    api.patch(&name, &PatchParams::default(), &Patch::Merge(json!({"spec": {"active": false}})))
        .await
        .unwrap();
    let wl = workload(&sim);
    assert_eq!(cond(&wl, "Evicted").unwrap()["reason"], "Deactivated");
    assert_eq!(cond(&wl, "QuotaReserved").unwrap()["status"], "False");
}

/// Kueue KEP-3258: a check set Retry with `requeueAfterSeconds` evicts at once, keeps
/// the check (and its message) as written, and queues the Workload again only after
/// the delay. The check is written by server-side apply of its own entry alone, as a
/// check controller writes it; the other entries stay.
#[tokio::test]
async fn a_retry_with_a_delay_evicts_at_once_and_requeues_after_it() {
    let sim = kueue_cluster(16).await;
    let mut cq = sim.get("clusterqueues", "", "gpu").unwrap();
    cq["spec"]["admissionChecksStrategy"]["admissionChecks"] =
        json!([{"name": "other-check"}, {"name": "dispatch-readmission"}]);
    sim.apply(cq).unwrap();
    trainjobs(&client(&sim).await)
        .create(&PostParams::default(), &queued("job", None))
        .await
        .unwrap();
    let wl = workload(&sim);
    assert_eq!(cond(&wl, "QuotaReserved").unwrap()["status"], "True");
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client(&sim).await, "default", &workloads_ar());
    let retry = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "status": {"admissionChecks": [{"name": "dispatch-readmission", "state": "Retry",
            "message": "waiting for Release", "lastTransitionTime": "2026-01-01T00:00:00Z",
            "requeueAfterSeconds": 60}]}});
    api.patch_status(&name, &PatchParams::apply("gate").force(), &Patch::Apply(&retry))
        .await
        .unwrap();
    let wl = workload(&sim);
    let checks = wl["status"]["admissionChecks"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "the apply touched only its own entry: {checks:?}");
    assert_eq!(checks[0]["name"], "other-check");
    assert_eq!(checks[1]["message"], "waiting for Release", "kept through the delay");
    assert_eq!(cond(&wl, "Evicted").unwrap()["reason"], "AdmissionCheck");
    assert_eq!(cond(&wl, "QuotaReserved").unwrap()["status"], "False");
    sim.advance(std::time::Duration::from_secs(59));
    assert_eq!(cond(&workload(&sim), "QuotaReserved").unwrap()["status"], "False");
    sim.advance(std::time::Duration::from_secs(2));
    let wl = workload(&sim);
    assert_eq!(cond(&wl, "QuotaReserved").unwrap()["status"], "True", "queued again");
    assert_eq!(wl["status"]["admissionChecks"][1]["state"], "Pending");
    assert_eq!(
        wl["status"]["admissionChecks"][1]["message"],
        "Reset to Pending after eviction. Previously: Retry"
    );
}

#[tokio::test]
async fn a_workload_over_quota_waits_with_pending() {
    let sim = kueue_cluster(8).await;
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &queued("a", None)).await.unwrap();
    api.create(&PostParams::default(), &queued("b", None)).await.unwrap();
    let waiting: Vec<Value> = sim
        .list("workloads", "default")
        .into_iter()
        .filter(|w| cond(w, "QuotaReserved").is_some_and(|c| c["status"] == "False"))
        .collect();
    assert_eq!(waiting.len(), 1);
    assert_eq!(cond(&waiting[0], "QuotaReserved").unwrap()["reason"], "Pending");
}

#[tokio::test]
async fn the_admission_gate_can_only_shrink() {
    let sim = kueue_cluster(16).await;
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &queued("job", Some("d/start,other/gate"))).await.unwrap();
    let shrink = Patch::Merge(
        json!({"metadata": {"annotations": {"kueue.x-k8s.io/admission-gated-by": "other/gate"}}}),
    );
    api.patch("job", &PatchParams::default(), &shrink).await.unwrap();
    let grow = Patch::Merge(
        json!({"metadata": {"annotations": {"kueue.x-k8s.io/admission-gated-by": "other/gate,new/gate"}}}),
    );
    let err = api_status(api.patch("job", &PatchParams::default(), &grow).await.unwrap_err());
    assert_eq!(err.code, 403);
    assert!(err.message.contains("new/gate"), "{}", err.message);
}
