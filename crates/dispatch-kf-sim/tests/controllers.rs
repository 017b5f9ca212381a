//! The controllers through the real client and the virtual clock: the Trainer (JobSet of
//! the TrainJob's name, template merge, suspend, conditions, active deadline), JobSet
//! (pod names and labels, completion, failure, maxRestarts), the scheduler and kubelet
//! (binding, Unschedulable, Running, exits, OOM, preemption, eviction), node loss and
//! pod GC, the garbage collector through owner references, and pods/log.

mod common;

use std::time::Duration;

use common::*;
use dispatch_kf_sim::Sim;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, LogParams, Patch, PatchParams};
use serde_json::{Value, json};

#[tokio::test]
async fn a_trainjob_gets_a_jobset_of_its_name_with_the_trainer_merged_in() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    let tjo = sim.get("trainjobs", "default", "job").unwrap();
    let js = sim.get("jobsets", "default", "job").expect("JobSet of the same name");
    assert_eq!(js["metadata"]["ownerReferences"][0]["uid"], tjo["metadata"]["uid"]);
    assert_eq!(js["metadata"]["ownerReferences"][0]["controller"], true);
    let rj = &js["spec"]["replicatedJobs"][0]["template"]["spec"];
    assert_eq!((rj["parallelism"].clone(), rj["completions"].clone()), (json!(2), json!(2)));
    let c = &rj["template"]["spec"]["containers"][0];
    assert_eq!(
        (c["image"].clone(), c["command"].clone()),
        (json!("trainer:1"), json!(["python", "train.py"]))
    );
    let env: Vec<&str> =
        c["env"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    for k in [
        "PET_NNODES",
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
        "A",
    ] {
        assert!(env.contains(&k), "{k} in {env:?}");
    }
    assert!(cond(&tjo, "Suspended").is_none(), "a running TrainJob has no condition");
}

#[tokio::test]
async fn jobset_pods_are_named_labelled_bound_and_running() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    let names = pod_names(&sim);
    assert_eq!(names.len(), 2);
    for (i, n) in names.iter().enumerate() {
        let prefix = format!("job-node-0-{i}-");
        assert!(n.starts_with(&prefix) && n.len() == prefix.len() + 5, "{n}");
    }
    let mut nodes: Vec<String> = Vec::new();
    for p in pods(&sim) {
        let l = &p["metadata"]["labels"];
        assert_eq!(l["jobset.sigs.k8s.io/jobset-name"], "job");
        assert_eq!(l["jobset.sigs.k8s.io/restart-attempt"], "0");
        assert!(l["batch.kubernetes.io/job-completion-index"].is_string());
        assert_eq!(p["status"]["phase"], "Running");
        nodes.push(p["spec"]["nodeName"].as_str().unwrap().to_string());
    }
    nodes.sort();
    assert_eq!(nodes, ["gpu-0", "gpu-1"], "one 8-GPU pod per 8-GPU node");
}

#[tokio::test]
async fn suspend_propagates_and_resume_sets_resumed() {
    let sim = demo().await;
    start(&sim, tj("job", 1, true, json!({}))).await;
    assert_eq!(sim.get("jobsets", "default", "job").unwrap()["spec"]["suspend"], true);
    assert!(pods(&sim).is_empty());
    let t = sim.get("trainjobs", "default", "job").unwrap();
    assert_eq!(cond(&t, "Suspended").unwrap()["reason"], "Suspended");
    trainjobs(&client(&sim).await)
        .patch("job", &PatchParams::default(), &Patch::Merge(json!({"spec": {"suspend": false}})))
        .await
        .unwrap();
    let t = sim.get("trainjobs", "default", "job").unwrap();
    let c = cond(&t, "Suspended").unwrap();
    assert_eq!((c["status"].clone(), c["reason"].clone()), (json!("False"), json!("Resumed")));
    assert_eq!(pods(&sim).len(), 1);
}

#[tokio::test]
async fn all_pods_exiting_zero_completes_the_jobset_and_the_trainjob() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    for n in pod_names(&sim) {
        sim.exit("default", &n, 0);
    }
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert_eq!(cond(&js, "Completed").unwrap()["reason"], "AllJobsCompleted");
    let t = sim.get("trainjobs", "default", "job").unwrap();
    let c = cond(&t, "Complete").unwrap();
    assert_eq!(
        (c["reason"].clone(), c["message"].clone()),
        (json!("AllJobsCompleted"), json!("jobset completed successfully"))
    );
}

#[tokio::test]
async fn a_failed_pod_without_failure_policy_fails_with_failed_jobs() {
    let sim = demo().await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    let pod = pod_names(&sim).remove(0);
    sim.exit("default", &pod, 3);
    let p = sim.get("pods", "default", &pod).expect("a failed pod stays");
    assert_eq!(p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
    let t = sim.get("trainjobs", "default", "job").unwrap();
    let c = cond(&t, "Failed").unwrap();
    assert_eq!(c["reason"], "FailedJobs");
    assert_eq!(
        c["message"],
        "jobset failed due to one or more job failures (first failed job: job-node-0)"
    );
}

#[tokio::test]
async fn max_restarts_raises_the_restart_attempt_then_fails_with_reached_max_restarts() {
    let sim = demo().await;
    install_torch_runtime(&sim, |rt| {
        rt["spec"]["template"]["spec"]["failurePolicy"] = json!({"maxRestarts": 1});
    });
    start(
        &sim,
        tj(
            "job",
            1,
            false,
            json!({"spec": {"runtimeRef": {"name": "rt", "kind": "TrainingRuntime"}}}),
        ),
    )
    .await;
    let first = pod_names(&sim).remove(0);
    sim.oom("default", &first);
    let now = pods(&sim);
    assert_eq!(now.len(), 1, "the old pod is deleted, a new one made");
    assert_ne!(now[0]["metadata"]["name"], first.as_str());
    assert_eq!(now[0]["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"], "1");
    sim.oom("default", now[0]["metadata"]["name"].as_str().unwrap());
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert_eq!(cond(&js, "Failed").unwrap()["reason"], "ReachedMaxRestarts");
    assert_eq!(js["status"]["restarts"], 1);
}

#[tokio::test]
async fn the_active_deadline_fails_the_trainjob_and_deletes_the_jobset() {
    let sim = demo().await;
    start(&sim, tj("job", 1, false, json!({"spec": {"activeDeadlineSeconds": 60}}))).await;
    sim.advance(Duration::from_secs(59));
    assert!(cond(&sim.get("trainjobs", "default", "job").unwrap(), "Failed").is_none());
    sim.advance(Duration::from_secs(1));
    let t = sim.get("trainjobs", "default", "job").unwrap();
    let c = cond(&t, "Failed").unwrap();
    assert_eq!(
        (c["reason"].clone(), c["message"].clone()),
        (json!("DeadlineExceeded"), json!("TrainJob exceeded its active deadline"))
    );
    assert!(sim.get("jobsets", "default", "job").is_none());
    assert!(pods(&sim).is_empty(), "the garbage collector removed the pods");
}

/// As Trainer v2.2 and v2.3 do: `Failed` is cleared at every reconcile, so a failed
/// TrainJob whose JobSet goes gets a new JobSet, which runs its ranks again unless the
/// TrainJob is suspended.
#[tokio::test]
async fn a_failed_trainjob_whose_jobset_goes_gets_a_new_one_that_runs_unless_suspended() {
    for suspend in [false, true] {
        let sim = demo().await;
        start(&sim, tj("job", 1, false, json!({}))).await;
        let pod = pod_names(&sim).remove(0);
        sim.exit("default", &pod, 1);
        let failed =
            cond(&sim.get("trainjobs", "default", "job").unwrap(), "Failed").unwrap().clone();
        if suspend {
            let patch = json!({"spec": {"suspend": true}});
            trainjobs(&client(&sim).await)
                .patch("job", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
            let t = sim.get("trainjobs", "default", "job").unwrap();
            assert_eq!(cond(&t, "Failed").unwrap(), &failed, "still failed, at the same time");
        }
        let old = sim.get("jobsets", "default", "job").unwrap()["metadata"]["uid"].clone();
        let dp = DeleteParams::background();
        let jobsets = Api::<kube::api::DynamicObject>::namespaced_with(
            client(&sim).await,
            "default",
            &jobsets_ar(),
        );
        jobsets.delete("job", &dp).await.unwrap();
        sim.settle();
        let again = sim.get("jobsets", "default", "job").expect("a new JobSet");
        assert_ne!(again["metadata"]["uid"], old);
        let t = sim.get("trainjobs", "default", "job").unwrap();
        assert!(cond(&t, "Failed").is_none(), "{t:#}");
        let running: Vec<Value> =
            pods(&sim).into_iter().filter(|p| p["status"]["phase"] == "Running").collect();
        assert_eq!(running.len(), if suspend { 0 } else { 1 }, "suspend {suspend}");
    }
}

/// JobSet's `ttlSecondsAfterFinished`: a finished JobSet is deleted that long after it
/// finished, not before.
#[tokio::test]
async fn a_finished_jobset_with_a_ttl_is_deleted_when_it_runs_out() {
    let sim = demo().await;
    install_torch_runtime(&sim, |rt| {
        rt["spec"]["template"]["spec"]["ttlSecondsAfterFinished"] = json!(15);
    });
    let on_rt = json!({"spec": {"runtimeRef": {"name": "rt", "kind": "TrainingRuntime"}}});
    start(&sim, tj("job", 1, false, on_rt)).await;
    sim.exit("default", &pod_names(&sim).remove(0), 1);
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert!(cond(&js, "Failed").is_some());
    sim.advance(Duration::from_secs(14));
    assert_eq!(
        sim.get("jobsets", "default", "job").unwrap()["metadata"]["uid"],
        js["metadata"]["uid"]
    );
    sim.advance(Duration::from_secs(1));
    let now = sim.get("jobsets", "default", "job");
    assert!(now.as_ref().is_none_or(|n| n["metadata"]["uid"] != js["metadata"]["uid"]), "{now:#?}");
}

#[tokio::test]
async fn a_pod_that_fits_no_node_is_unschedulable_with_the_scheduler_message() {
    let sim = demo().await;
    start(&sim, tj("job", 3, false, json!({}))).await;
    let pending: Vec<Value> =
        pods(&sim).into_iter().filter(|p| p["status"]["phase"] == "Pending").collect();
    assert_eq!(pending.len(), 1);
    let c = cond(&pending[0], "PodScheduled").unwrap();
    assert_eq!(
        (c["status"].clone(), c["reason"].clone()),
        (json!("False"), json!("Unschedulable"))
    );
    assert_eq!(
        c["message"],
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
}

#[tokio::test]
async fn preemption_and_eviction_mark_disruption_targets() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    let names = pod_names(&sim);
    sim.set_auto_settle(false);
    sim.preempt("default", &names[0]);
    sim.evict("default", &names[1]);
    let p0 = sim.get("pods", "default", &names[0]).unwrap();
    assert_eq!(cond(&p0, "DisruptionTarget").unwrap()["reason"], "PreemptionByScheduler");
    assert!(p0["metadata"]["deletionTimestamp"].is_string());
    let p1 = sim.get("pods", "default", &names[1]).unwrap();
    assert_eq!(cond(&p1, "DisruptionTarget").unwrap()["reason"], "EvictionByEvictionAPI");
    sim.settle();
    let t = sim.get("trainjobs", "default", "job").unwrap();
    assert_eq!(cond(&t, "Failed").unwrap()["reason"], "FailedJobs");
    assert!(pods(&sim).is_empty());
}

/// A one-node job running, then the node of its pod lost: the cluster, the pod, the node.
async fn one_pod_on_a_lost_node() -> (Sim, String, String) {
    let sim = demo().await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    let pod = pod_names(&sim).remove(0);
    let node =
        sim.get("pods", "default", &pod).unwrap()["spec"]["nodeName"].as_str().unwrap().to_string();
    sim.lose_node(&node);
    (sim, pod, node)
}

#[tokio::test]
async fn a_lost_node_leaves_pods_terminating_until_the_node_is_deleted() {
    let (sim, pod, node) = one_pod_on_a_lost_node().await;
    assert_eq!(cond(&sim.get("nodes", "", &node).unwrap(), "Ready").unwrap()["status"], "Unknown");
    sim.advance(Duration::from_secs(300));
    let p = sim.get("pods", "default", &pod).expect("stuck Terminating");
    assert_eq!(cond(&p, "DisruptionTarget").unwrap()["reason"], "DeletionByTaintManager");
    assert!(p["metadata"]["deletionTimestamp"].is_string());
    sim.advance(Duration::from_secs(3600));
    assert!(sim.get("pods", "default", &pod).is_some(), "nobody confirms on a lost node");
    sim.set_auto_settle(false);
    sim.delete_node(&node);
    sim.settle();
    assert!(sim.get("pods", "default", &pod).is_none(), "pod GC removed it");
    let t = sim.get("trainjobs", "default", "job").unwrap();
    assert_eq!(cond(&t, "Failed").unwrap()["reason"], "FailedJobs");
}

#[tokio::test]
async fn out_of_service_taint_lets_pod_gc_remove_terminating_pods() {
    let (sim, pod, node) = one_pod_on_a_lost_node().await;
    sim.advance(Duration::from_secs(300));
    sim.set_auto_settle(false);
    sim.taint_out_of_service(&node);
    sim.settle();
    assert!(sim.get("pods", "default", &pod).is_none());
}

#[tokio::test]
async fn background_delete_of_the_trainjob_collects_jobset_and_pods() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    let dp = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..Default::default()
    };
    trainjobs(&client(&sim).await).delete("job", &dp).await.unwrap();
    assert!(sim.get("jobsets", "default", "job").is_none());
    assert!(pods(&sim).is_empty());
}

#[tokio::test]
async fn pod_logs_return_the_text_set_by_the_test() {
    let sim = demo().await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    let pod = pod_names(&sim).remove(0);
    sim.set_log("default", &pod, "epoch 1\nepoch 2\n");
    let api: Api<Pod> = Api::default_namespaced(client(&sim).await);
    assert_eq!(api.logs(&pod, &LogParams::default()).await.unwrap(), "epoch 1\nepoch 2\n");
}

#[tokio::test]
async fn following_a_log_streams_appended_text_until_the_pod_ends() {
    use futures::{AsyncBufReadExt, StreamExt};
    let sim = demo().await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    let pod = pod_names(&sim).remove(0);
    sim.set_log("default", &pod, "line 1\n");
    let api: Api<Pod> = Api::default_namespaced(client(&sim).await);
    let reader =
        api.log_stream(&pod, &LogParams { follow: true, ..Default::default() }).await.unwrap();
    let mut lines = reader.lines();
    assert_eq!(lines.next().await.unwrap().unwrap(), "line 1");
    sim.append_log("default", &pod, "line 2\n");
    assert_eq!(lines.next().await.unwrap().unwrap(), "line 2");
    sim.exit("default", &pod, 0);
    assert!(lines.next().await.is_none(), "the stream ends with the pod");
}

/// `(manager, subresource)` of each managedFields entry of `obj`, in order.
fn managers(obj: &Value) -> Vec<(String, String)> {
    let entries = obj.pointer("/metadata/managedFields").and_then(Value::as_array);
    let text = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_string();
    entries.into_iter().flatten().map(|e| (text(e, "manager"), text(e, "subresource"))).collect()
}

/// Every write of the cluster's components goes through the registry: each is recorded
/// under its field manager (a status write under the status subresource), and a change
/// beyond metadata and status moves the generation.
#[tokio::test]
async fn each_components_writes_are_recorded_under_its_field_manager() {
    let sim = demo().await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    let get = |kind: &str, name: &str| sim.get(kind, "default", name).unwrap();
    let entry = |manager: &str, sub: &str| (manager.to_string(), sub.to_string());
    let pod = get("pods", &pod_names(&sim)[0]);
    let made_bound_and_run = [
        entry("kube-controller-manager", ""),
        entry("kube-scheduler", ""),
        entry("kubelet", "status"),
    ];
    assert_eq!(managers(&pod), made_bound_and_run);
    let job = get("jobs", "job-node-0");
    assert_eq!(managers(&job), [entry("jobset", ""), entry("kube-controller-manager", "status")]);
    assert_eq!(managers(&get("jobsets", "job")), [entry("trainer", ""), entry("jobset", "status")]);
    assert_eq!(job["metadata"]["generation"], 1);

    trainjobs(&client(&sim).await)
        .patch("job", &PatchParams::default(), &Patch::Merge(json!({"spec": {"suspend": true}})))
        .await
        .unwrap();
    assert_eq!(get("jobsets", "job")["metadata"]["generation"], 2, "the Trainer suspended it");
    assert_eq!(get("jobs", "job-node-0")["metadata"]["generation"], 2, "JobSet suspended it");
    assert!(managers(&get("trainjobs", "job")).contains(&entry("trainer", "status")));
}
