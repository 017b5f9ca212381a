//! batch/v1 Jobs between JobSet and pods, through the real client (k8s-openapi's strict
//! `Job` and `Pod` types must read them): discovery, the Jobs the JobSet controller
//! makes (names, JobSet's keys, owner), the pods the Job controller makes (names,
//! completion index, owner, tracking finalizer), Job status and conditions
//! (`SuccessCriteriaMet` before `Complete`, `FailureTarget` before `Failed`), suspend and
//! resume, restarts, and the garbage collector's cascade TrainJob → JobSet → Jobs → pods.

mod common;

use std::time::Duration;

use common::*;
use dispatch_kf_sim::Sim;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn jobs(sim: &Sim) -> Vec<Value> {
    sim.list("jobs", "default")
}

fn job(sim: &Sim, name: &str) -> Value {
    sim.get("jobs", "default", name).unwrap_or_else(|| panic!("Job {name} exists"))
}

fn cond_types(obj: &Value) -> Vec<String> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter(|c| c["status"] == "True")
                .map(|c| c["type"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn node_of(sim: &Sim, pod: &str) -> String {
    sim.get("pods", "default", pod).unwrap()["spec"]["nodeName"].as_str().unwrap().to_string()
}

/// A runtime `rt` whose trainer job has `replicas` replicas.
fn install_replicated_runtime(sim: &Sim, replicas: i64) {
    install_torch_runtime(sim, |rt| {
        rt["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = json!(replicas);
    });
}

fn on_rt() -> Value {
    json!({"spec": {"runtimeRef": {"name": "rt", "kind": "TrainingRuntime"}}})
}

#[tokio::test]
async fn discovery_serves_batch_v1_jobs_and_their_status() {
    let sim = demo().await;
    let list = client(&sim).await.list_api_group_resources("batch/v1").await.unwrap();
    let names: Vec<&str> = list.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["jobs", "jobs/status"]);
    assert!(list.resources[0].verbs.iter().any(|v| v == "deletecollection"));
}

#[tokio::test]
async fn the_jobset_makes_one_job_per_replica_with_jobset_keys_and_its_controller_reference() {
    let sim = demo().await;
    install_replicated_runtime(&sim, 2);
    start(&sim, tj("job", 1, false, on_rt())).await;
    let api: Api<Job> = Api::default_namespaced(client(&sim).await);
    let list = api.list(&ListParams::default()).await.expect("k8s-openapi reads the Jobs");
    let names: Vec<String> = list.items.iter().map(|j| j.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["job-node-0", "job-node-1"]);
    let js = sim.get("jobsets", "default", "job").unwrap();
    for (i, j) in jobs(&sim).iter().enumerate() {
        let owner = &j["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["kind"].clone(), owner["uid"].clone()),
            (json!("JobSet"), js["metadata"]["uid"].clone())
        );
        assert_eq!(
            (owner["controller"].clone(), owner["blockOwnerDeletion"].clone()),
            (json!(true), json!(true))
        );
        let name = format!("job-node-{i}");
        let want = json!({
            "jobset.sigs.k8s.io/jobset-name": "job",
            "jobset.sigs.k8s.io/jobset-uid": js["metadata"]["uid"],
            "jobset.sigs.k8s.io/replicatedjob-name": "node",
            "jobset.sigs.k8s.io/replicatedjob-replicas": "2",
            "jobset.sigs.k8s.io/global-replicas": "2",
            "jobset.sigs.k8s.io/job-index": i.to_string(),
            "jobset.sigs.k8s.io/job-global-index": i.to_string(),
            "jobset.sigs.k8s.io/restart-attempt": "0",
        });
        for (k, v) in want.as_object().unwrap() {
            assert_eq!(&j["metadata"]["labels"][k], v, "label {k} of {name}");
            assert_eq!(&j["metadata"]["annotations"][k], v, "annotation {k} of {name}");
            assert_eq!(&j["spec"]["template"]["metadata"]["labels"][k], v, "template label {k}");
        }
        let key = j["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"].as_str().unwrap();
        assert_eq!(key.len(), 40, "the SHA-1 of default/{name}");
        let uid = j["metadata"]["uid"].clone();
        assert_eq!(j["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"], uid);
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
            name.as_str()
        );
        assert_eq!(j["spec"]["template"]["spec"]["subdomain"], "job");
        assert_eq!(
            j["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"],
            "trainer"
        );
    }
    assert_eq!(
        jobs(&sim)[0]["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"],
        "2d71db4f238b5fc7d9e840027701eae3853423e9"
    );
}

#[tokio::test]
async fn the_job_controller_makes_indexed_pods_owned_by_their_job() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    let api: Api<Pod> = Api::default_namespaced(client(&sim).await);
    assert_eq!(
        api.list(&ListParams::default()).await.expect("k8s-openapi reads the pods").items.len(),
        2
    );
    let j = job(&sim, "job-node-0");
    for (i, p) in pods(&sim).iter().enumerate() {
        let m = &p["metadata"];
        let owner = &m["ownerReferences"][0];
        assert_eq!(
            (owner["kind"].clone(), owner["uid"].clone()),
            (json!("Job"), j["metadata"]["uid"].clone())
        );
        assert_eq!(owner["controller"], true);
        assert_eq!(m["generateName"], format!("job-node-0-{i}-"));
        assert_eq!(m["annotations"]["batch.kubernetes.io/job-completion-index"], i.to_string());
        assert_eq!(m["labels"]["batch.kubernetes.io/job-completion-index"], i.to_string());
        assert_eq!(m["labels"]["batch.kubernetes.io/job-name"], "job-node-0");
        assert_eq!(m["labels"]["jobset.sigs.k8s.io/jobset-name"], "job");
        assert_eq!(m["annotations"]["jobset.sigs.k8s.io/restart-attempt"], "0");
        assert_eq!(m["finalizers"], json!(["batch.kubernetes.io/job-tracking"]));
        assert_eq!(p["spec"]["hostname"], format!("job-node-0-{i}"));
        assert_eq!(p["spec"]["subdomain"], "job");
        let env = p["spec"]["containers"][0]["env"].as_array().unwrap();
        assert!(env.iter().any(|e| e["name"] == "JOB_COMPLETION_INDEX"), "{env:?}");
    }
    let s = &j["status"];
    assert_eq!(
        (s["active"].clone(), s["ready"].clone(), s["terminating"].clone()),
        (json!(2), json!(2), json!(0))
    );
    let rjs = &sim.get("jobsets", "default", "job").unwrap()["status"]["replicatedJobsStatus"][0];
    assert_eq!((rjs["active"].clone(), rjs["ready"].clone()), (json!(1), json!(1)));
}

#[tokio::test]
async fn a_job_meets_its_success_criteria_then_completes_and_releases_its_pods() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    let names = pod_names(&sim);
    sim.exit("default", &names[0], 0);
    let j = job(&sim, "job-node-0");
    assert_eq!(
        (j["status"]["completedIndexes"].clone(), j["status"]["active"].clone()),
        (json!("0"), json!(1))
    );
    assert!(cond_types(&j).is_empty(), "{:?}", j["status"]);
    sim.exit("default", &names[1], 0);
    let j = job(&sim, "job-node-0");
    assert_eq!(cond_types(&j), ["SuccessCriteriaMet", "Complete"]);
    for t in ["SuccessCriteriaMet", "Complete"] {
        let c = cond(&j, t).unwrap();
        assert_eq!(c["reason"], "CompletionsReached");
        assert_eq!(c["message"], "Reached expected number of succeeded pods");
    }
    assert_eq!(
        (j["status"]["succeeded"].clone(), j["status"]["completedIndexes"].clone()),
        (json!(2), json!("0-1"))
    );
    assert!(j["status"]["completionTime"].is_string());
    assert!(
        pods(&sim).iter().all(|p| p["metadata"]["finalizers"] == json!([])),
        "counted pods are let go"
    );
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert_eq!(cond(&js, "Completed").unwrap()["reason"], "AllJobsCompleted");
    assert_eq!(js["status"]["replicatedJobsStatus"][0]["succeeded"], 1);
}

/// A node loss leaves pods Terminating and the Job at FailureTarget until the
/// Node is deleted; JobSet (which reads only `Failed`) and the Trainer wait with it.
#[tokio::test]
async fn a_node_loss_leaves_pods_terminating_and_the_job_at_failure_target_until_the_node_is_deleted()
 {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    let names = pod_names(&sim);
    let (lost, healthy) = (&names[0], &names[1]);
    let node = node_of(&sim, lost);
    sim.lose_node(&node);
    sim.advance(Duration::from_secs(300));
    let p = sim.get("pods", "default", lost).expect("stuck Terminating on the lost node");
    assert!(p["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(p["metadata"]["finalizers"], json!([]), "counted as failed and let go");
    assert!(sim.get("pods", "default", healthy).is_none(), "the Job deleted its other active pod");
    let j = job(&sim, "job-node-0");
    assert_eq!(cond_types(&j), ["FailureTarget"]);
    let c = cond(&j, "FailureTarget").unwrap();
    assert_eq!(
        (c["reason"].clone(), c["message"].clone()),
        (json!("BackoffLimitExceeded"), json!("Job has reached the specified backoff limit"))
    );
    assert_eq!(
        (j["status"]["failed"].clone(), j["status"]["terminating"].clone()),
        (json!(2), json!(1))
    );
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert!(cond(&js, "Failed").is_none(), "JobSet reacts to Failed only");
    assert_eq!(js["status"]["replicatedJobsStatus"][0]["failed"], 0);
    assert!(cond(&sim.get("trainjobs", "default", "job").unwrap(), "Failed").is_none());
    sim.advance(Duration::from_secs(3600));
    assert_eq!(
        cond_types(&job(&sim, "job-node-0")),
        ["FailureTarget"],
        "nothing moves while it hangs"
    );

    sim.delete_node(&node);
    assert!(sim.get("pods", "default", lost).is_none(), "pod GC removed it");
    let j = job(&sim, "job-node-0");
    assert_eq!(cond_types(&j), ["FailureTarget", "Failed"]);
    assert_eq!(cond(&j, "Failed").unwrap()["reason"], "BackoffLimitExceeded");
    assert_eq!(j["status"]["terminating"], 0);
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert_eq!(
        cond(&js, "Failed").unwrap()["message"],
        "jobset failed due to one or more job failures (first failed job: job-node-0)"
    );
    assert_eq!(
        cond(&sim.get("trainjobs", "default", "job").unwrap(), "Failed").unwrap()["reason"],
        "FailedJobs"
    );
}

#[tokio::test]
async fn a_suspended_jobset_suspends_its_jobs_and_resuming_merges_the_new_pod_template() {
    let sim = demo().await;
    start(&sim, tj("job", 1, true, json!({}))).await;
    let j = job(&sim, "job-node-0");
    assert_eq!(j["spec"]["suspend"], true);
    assert_eq!(cond(&j, "Suspended").unwrap()["reason"], "JobSuspended");
    assert!(pods(&sim).is_empty());
    let patch = json!({"spec": {"suspend": false, "runtimePatches": [{"manager": "test", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"metadata": {"labels": {"admission": "2"}}}}}}
    ]}}}}]}});
    trainjobs(&client(&sim).await)
        .patch("job", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    let j = job(&sim, "job-node-0");
    assert_eq!(j["spec"]["suspend"], false);
    assert_eq!(j["spec"]["template"]["metadata"]["labels"]["admission"], "2");
    let c = cond(&j, "Suspended").unwrap();
    assert_eq!((c["status"].clone(), c["reason"].clone()), (json!("False"), json!("JobResumed")));
    assert_eq!(
        pods(&sim)[0]["metadata"]["labels"]["admission"],
        "2",
        "the pod has the merged label"
    );

    trainjobs(&client(&sim).await)
        .patch("job", &PatchParams::default(), &Patch::Merge(json!({"spec": {"suspend": true}})))
        .await
        .unwrap();
    assert!(pods(&sim).is_empty(), "suspend deletes the active pods");
    let j = job(&sim, "job-node-0");
    assert_eq!(
        (j["status"]["failed"].clone(), j["status"]["active"].clone()),
        (json!(0), json!(0)),
        "uncounted"
    );
}

#[tokio::test]
async fn a_restart_deletes_the_old_job_in_the_foreground_before_its_successor_exists() {
    let sim = demo().await;
    install_torch_runtime(&sim, |rt| {
        rt["spec"]["template"]["spec"]["failurePolicy"] = json!({"maxRestarts": 1});
    });
    start(&sim, tj("job", 1, false, on_rt())).await;
    let first_uid = job(&sim, "job-node-0")["metadata"]["uid"].clone();
    let pod = pod_names(&sim).remove(0);
    sim.set_auto_settle(false);
    sim.exit("default", &pod, 1);
    sim.settle();
    let j = job(&sim, "job-node-0");
    assert_ne!(j["metadata"]["uid"], first_uid, "a new Job of the same name");
    assert_eq!(j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"], "1");
    assert!(sim.get("pods", "default", &pod).is_none(), "the old Job's pod went with it");
    let js = sim.get("jobsets", "default", "job").unwrap();
    assert_eq!(
        (js["status"]["restarts"].clone(), js["status"]["restartsCountTowardsMax"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(pods(&sim)[0]["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"], "1");
}

#[tokio::test]
async fn background_deletion_cascades_trainjob_jobset_jobs_and_pods_one_gc_lag_each() {
    let sim = demo_with_gc_lag(30).await;
    start(&sim, tj("job", 1, false, json!({}))).await;
    delete_in_background(&sim, "job").await;
    let counts =
        |sim: &Sim| ["jobsets", "jobs", "pods", "configmaps"].map(|r| sim.list(r, "default").len());
    assert_eq!(counts(&sim), [1, 1, 1, 1], "orphans wait for the collector");
    sim.advance(Duration::from_secs(30));
    assert_eq!(counts(&sim), [0, 1, 1, 0]);
    sim.advance(Duration::from_secs(30));
    assert_eq!(counts(&sim), [0, 0, 1, 0]);
    assert_eq!(
        pods(&sim)[0]["metadata"]["finalizers"],
        json!([]),
        "the Job controller let its orphan go"
    );
    sim.advance(Duration::from_secs(30));
    assert_eq!(counts(&sim), [0, 0, 0, 0]);
}

#[tokio::test]
async fn a_job_created_through_the_api_runs_non_indexed_pods_to_completion() {
    let sim = demo().await;
    let api: Api<Job> = Api::default_namespaced(client(&sim).await);
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 1, "completionMode": "NonIndexed",
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &job).await.unwrap();
    let first = pod_names(&sim).remove(0);
    assert!(first.starts_with("pi-") && first.len() == 8, "{first}");
    sim.exit("default", &first, 1);
    let second: Vec<String> = pod_names(&sim).into_iter().filter(|n| *n != first).collect();
    assert_eq!(second.len(), 1, "one failure is within backoffLimit 1: a replacement");
    sim.exit("default", &second[0], 0);
    let j = api.get_status("pi").await.unwrap();
    let status = j.status.unwrap();
    assert_eq!((status.succeeded, status.failed), (Some(1), Some(1)));
    let types: Vec<String> = status.conditions.unwrap().into_iter().map(|c| c.type_).collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
}

#[tokio::test]
async fn a_malformed_job_is_left_alone_and_the_cluster_keeps_serving() {
    let sim = demo().await;
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client(&sim).await,
        "default",
        &kube::api::ApiResource::erase::<Job>(&()),
    );
    let bad: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad"},
        "spec": {"completions": "two", "template": {"metadata": {"labels": "x"}, "spec": "nothing"}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &bad).await.unwrap();
    let odd: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "odd"},
        "spec": {"completionMode": "Indexed", "completions": 1, "parallelism": 1,
                 "template": {"spec": {"containers": ["not a container", {"name": "c"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &odd).await.unwrap();
    assert!(pods(&sim).iter().all(|p| p["metadata"]["generateName"] != "bad-"));
    assert_eq!(pod_names(&sim).len(), 1, "the odd Job still gets its pod");
    start(&sim, tj("job", 1, false, json!({}))).await;
    assert_eq!(pod_names(&sim).len(), 2, "and the controllers still run");
}
