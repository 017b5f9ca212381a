//! Kueue mode on the simulated cluster: the readmission gate's proof decides whether
//! the Backend writes; with it, Start waits for a gated Workload, and holds live on the
//! Workload. Also the refusals of an observe-only Backend.

use dispatch_core::{Backend, Capability, Kind, ObjectState};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_model::internal::capabilities::Writability;
use dispatch_kf_model::keys;
use dispatch_kf_sim::{Identity, Releases, Rule, Sim, SimOptions};
use dispatch_kf_testkit::*;
use serde_json::json;

fn kueue_settings() -> dispatch_kf_model::Settings {
    settings(json!({"mode": "kueue", "kueue": {"queue": "team-a"}}))
}

/// The Kueue objects of the readmission gate, with a Lease renewed now.
fn install_gate(sim: &Sim, lease_fresh: bool) {
    install_gate_with_quota(sim, lease_fresh, 32);
}

/// The sim's Kueue setup with a ClusterQueue of `gpus` GPUs, as the gate would leave
/// it: its AdmissionCheck Active, and its Lease renewed now (or long ago).
fn install_gate_with_quota(sim: &Sim, lease_fresh: bool, gpus: u32) {
    sim.install_kueue_in(gpus, NS).unwrap();
    let mut check = sim.get("admissionchecks", "", "dispatch-readmission").unwrap();
    check["status"] = json!({"conditions": [{"type": "Active", "status": "True", "reason": "Active", "message": "served"}]});
    sim.apply(check).unwrap();
    let renewed =
        if lease_fresh { jiff::Timestamp::now() } else { "2020-01-01T00:00:00Z".parse().unwrap() };
    sim.apply(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "dispatch-readmission-gate", "namespace": "dispatch-system"},
        "spec": {"holderIdentity": "gate-0", "leaseDurationSeconds": 3600,
                 "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()}}))
        .unwrap();
}

#[tokio::test]
async fn without_a_proven_gate_kueue_mode_is_observe_only_naming_what_is_missing() {
    let sim = cluster().await;
    let b = backend(&sim, kueue_settings()).await;
    let Writability::ObserveOnly { missing } = &b.preflight().access else {
        panic!("{:?}", b.preflight().access)
    };
    assert!(missing.contains("LocalQueue team-a does not exist"), "{missing}");
    assert_eq!(b.preflight().gate_proof_expires, None, "no proof, no expiry");
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unsupported, "Start on an observe-only adapter");
    assert!(err.message().contains("observe-only"), "{}", err.message());
    let object = dispatch_core::ObjectRef {
        backend: "kubeflow-sim".into(),
        kind: dispatch_core::ObjectKind::TrainJob,
        namespace: NS.into(),
        name: dispatch_kf_model::names::make(&job(1), 1),
        uid: "u".into(),
    };
    assert_eq!(b.stop(&cx(), &object).await.unwrap_err().kind(), Kind::ReadOnly, "any other write");
    assert_eq!(b.open(&hold_cx(), &object).await.unwrap_err().kind(), Kind::ReadOnly);
}

#[tokio::test]
async fn a_stale_lease_is_named_in_the_readmission_gate_reason() {
    let sim = cluster().await;
    install_gate(&sim, false);
    let b = backend(&sim, kueue_settings()).await;
    let gate = &b.preflight().capabilities[&Capability::ReadmissionGate];
    assert!(!gate.is_yes());
    assert!(gate.reason.contains("expired"), "{}", gate.reason);
}

#[tokio::test]
async fn with_the_gate_proven_start_waits_for_a_gated_workload_and_holds_go_on_it() {
    let sim = cluster().await;
    install_gate(&sim, true);
    let b = backend(&sim, kueue_settings()).await;
    assert_eq!(
        b.preflight().access,
        Writability::Writable,
        "{:?}",
        b.preflight().capabilities[&Capability::ReadmissionGate]
    );
    let lease = sim.get("leases", "dispatch-system", "dispatch-readmission-gate").unwrap();
    let renewed: jiff::Timestamp = lease["spec"]["renewTime"].as_str().unwrap().parse().unwrap();
    let expires = renewed + jiff::SignedDuration::from_secs(3600);
    assert_eq!(
        b.preflight().gate_proof_expires,
        Some(expires),
        "the proof holds until the Lease's last renewal runs out"
    );
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let tj = sim.get("trainjobs", NS, &object.name).unwrap();
    assert_eq!(tj["metadata"]["annotations"][keys::KUEUE_ADMISSION_GATED_BY], keys::START_GATE);
    assert_eq!(tj["metadata"]["labels"][keys::KUEUE_QUEUE_NAME], "team-a");
    assert_eq!(b.inspect(&cx(), &object).await.unwrap().state, ObjectState::Gated);

    b.open(&hold_cx(), &object).await.unwrap();
    let tj = sim.get("trainjobs", NS, &object.name).unwrap();
    assert!(tj["metadata"]["annotations"].get(keys::KUEUE_ADMISSION_GATED_BY).is_none());

    b.hold(&hold_cx(), &object, 1).await.unwrap();
    let workload = sim
        .list("workloads", NS)
        .into_iter()
        .find(|w| w["metadata"]["labels"][keys::KUEUE_JOB_UID] == object.uid.as_str())
        .unwrap();
    assert_eq!(workload["spec"]["active"], false);
    assert_eq!(workload["metadata"]["annotations"][keys::ANN_HOLD_INSTANCE], "1");
    b.release(&hold_cx(), &object, 1).await.unwrap();
    let workload =
        sim.get("workloads", NS, workload["metadata"]["name"].as_str().unwrap()).unwrap();
    assert_eq!(workload["spec"]["active"], true);
}

#[tokio::test]
/// Jobs used to start, and after a preemption Hold and Release could
/// not readmit them.
async fn kueue_mode_without_permission_to_update_workloads_is_observe_only_naming_it() {
    let sim = cluster().await;
    install_gate(&sim, true);
    let mut user = Identity::new("no-workload-updates");
    for (group, resources) in [
        ("", &["*"][..]),
        ("trainer.kubeflow.org", &["*"][..]),
        ("jobset.x-k8s.io", &["*"][..]),
        ("coordination.k8s.io", &["*"][..]),
        ("authorization.k8s.io", &["*"][..]),
    ] {
        user = user.allow(Rule::new(&["*"], group, resources));
    }
    user = user.allow(Rule::new(&["get", "list", "watch"], "kueue.x-k8s.io", &["*"]));
    sim.add_identity(user);
    let b = KubeflowBackend::with_cluster(
        kueue_settings(),
        connect(&sim, "no-workload-updates").await,
        &cx(),
    )
    .await
    .unwrap();
    assert!(!b.preflight().capabilities[&Capability::Hold].is_yes());
    assert!(!b.preflight().capabilities[&Capability::ReadmissionGate].is_yes());
    assert!(
        matches!(&b.preflight().access, Writability::ObserveOnly { missing } if missing.contains("update workloads")),
        "{:?}",
        b.preflight().access
    );
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unsupported, "{err:?}");
    assert!(err.message().contains("update workloads"), "{}", err.message());
    assert!(names(&sim, "trainjobs").is_empty(), "nothing was probed or started");
}

/// A Kueue-mode Hold or Release finds the Workload with one list by the TrainJob's UID
/// and reads the job once, after the Workload, for what it decides on: releasing many
/// jobs at once is some 9 requests each, not 15.
#[tokio::test]
async fn a_kueue_hold_finds_its_workload_in_one_list_and_reads_the_job_once() {
    let sim = cluster().await;
    install_gate(&sim, true);
    let b = backend(&sim, kueue_settings()).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.clear_requests();
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    let requests = sim.requests();
    let count = |verb: &str, resource: &str| {
        requests.iter().filter(|r| r.verb == verb && r.resource == resource).count()
    };
    assert_eq!(count("list", "trainjobs"), 1, "the job read once: {requests:#?}");
    assert_eq!(count("list", "workloads"), 2, "by UID, then with the job: {requests:#?}");
    assert_eq!((count("get", "workloads"), count("update", "workloads")), (1, 1));
}

#[tokio::test]
async fn a_missing_read_permission_is_unauthorized_at_factory_naming_it() {
    let sim = cluster().await;
    sim.add_identity(Identity::new("blind").allow(Rule::new(
        &["*"],
        "trainer.kubeflow.org",
        &["*"],
    )));
    let err =
        KubeflowBackend::with_cluster(settings(json!({})), connect(&sim, "blind").await, &cx())
            .await
            .err()
            .expect("it cannot observe");
    assert_eq!(err.kind(), Kind::Unauthorized);
    assert!(
        err.message().contains("list pods") && err.message().contains("watch jobsets"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn a_workload_that_never_gets_the_check_stops_the_train_job_and_is_rejected() {
    let sim = cluster().await;
    install_gate(&sim, true);
    let b = backend(&sim, kueue_settings()).await;
    assert_eq!(b.preflight().access, Writability::Writable);
    // The ClusterQueue stops listing dispatch's check: new Workloads never carry it.
    let mut cq = sim.list("clusterqueues", "").into_iter().next().unwrap();
    cq["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": []});
    sim.apply(cq).unwrap();
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(
        err.message().contains("does not list admission check dispatch-readmission"),
        "{}",
        err.message()
    );
    assert!(names(&sim, "trainjobs").is_empty(), "the TrainJob is stopped");
}

#[tokio::test]
async fn on_a_queue_that_covers_only_gpus_a_job_without_gpus_is_refused_and_one_with_gpus_starts() {
    let sim = cluster().await;
    install_gate(&sim, true);
    let mut cq = sim.list("clusterqueues", "").into_iter().next().unwrap();
    cq["spec"]["resourceGroups"] = json!([{"coveredResources": ["nvidia.com/gpu"],
        "flavors": [{"name": "default-flavor", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "32"}]}]}]);
    sim.apply(cq).unwrap();
    let b = backend(&sim, kueue_settings()).await;
    // The preflight probe asks for no GPU, and is never admitted: it is not checked.
    assert_eq!(b.preflight().access, Writability::Writable);

    let mut bare = request(&job(1), 1);
    bare.spec.gpus_per_node = 0;
    let err = b.start(&cx(), &bare).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(
        err.message()
            .contains("requests none of the resources ClusterQueue gpu covers (nvidia.com/gpu)")
            && err.message().contains("add `pods` to the ClusterQueue's coveredResources"),
        "{}",
        err.message()
    );
    assert!(names(&sim, "trainjobs").is_empty(), "the TrainJob is stopped");

    let object = b.start(&cx(), &request(&job(2), 1)).await.unwrap();
    assert_eq!(b.inspect(&cx(), &object).await.unwrap().state, ObjectState::Gated);
}

#[tokio::test]
async fn plain_mode_where_kueue_manages_queue_less_jobs_is_unsupported() {
    let sim = cluster().await;
    sim.set_kueue_manages_jobs_without_queue_name(true);
    let err =
        KubeflowBackend::with_cluster(settings(json!({})), connect(&sim, "admin").await, &cx())
            .await
            .err()
            .expect("plain mode would fight Kueue over spec.suspend");
    assert_eq!(err.kind(), Kind::Unsupported);
    assert!(err.message().contains("set mode to kueue"), "{}", err.message());
    assert!(names(&sim, "trainjobs").is_empty(), "the probe's TrainJob is stopped");
}

/// Kueue v0.17 and v0.18 without the AdmissionGatedBy feature gate make Workloads
/// without dispatch's start gate: Factory refuses the cluster at the probe, naming the
/// feature gate, in one line, and nothing of the probe is left.
#[tokio::test]
async fn kueue_without_admission_gated_by_is_refused_at_factory_naming_the_feature_gate() {
    let releases = Releases { kueue_admission_gated_by: false, ..Releases::default() };
    let sim = cluster_with(SimOptions { releases, ..SimOptions::default() }).await;
    install_gate(&sim, true);
    let err = KubeflowBackend::with_cluster(kueue_settings(), connect(&sim, "admin").await, &cx())
        .await
        .err()
        .expect("a Kueue that does not gate admission is refused");
    assert_eq!(err.kind(), Kind::Unsupported, "{err:?}");
    let message = err.message();
    assert!(message.starts_with("Kueue does not gate admission: it made Workload "), "{message}");
    assert!(message.contains("need the AdmissionGatedBy feature gate"), "{message}");
    assert!(!message.contains('\n') && !message.contains('{'), "one line, no JSON: {message}");
    assert!(names(&sim, "trainjobs").is_empty(), "the probe's TrainJob is stopped");
}

#[tokio::test]
async fn kueue_holds_on_a_train_job_without_a_workload_are_rejected() {
    let sim = cluster().await;
    install_gate(&sim, true);
    let b = backend(&sim, kueue_settings()).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    sim.set_auto_settle(false);
    for workload in sim.list("workloads", NS) {
        let name = workload["metadata"]["name"].as_str().unwrap().to_owned();
        sim.delete("workloads", NS, &name, dispatch_kf_sim::Propagation::Background);
    }
    let err = b.hold(&hold_cx(), &object, 1).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("has no Workload"), "{}", err.message());
}

#[tokio::test]
async fn a_call_that_ends_while_start_waits_for_the_workload_is_outcome_unknown() {
    let sim = cluster().await;
    install_gate(&sim, true);
    let settings = settings(json!({"mode": "kueue", "kueue": {"queue": "team-a"},
        "timeouts": {"request": "5s", "workload": "60s", "stopJob": "30s", "callBound": "90s"}}));
    let b = backend(&sim, settings).await;
    let mut cq = sim.list("clusterqueues", "").into_iter().next().unwrap();
    cq["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": []});
    sim.apply(cq).unwrap();
    let short = dispatch_core::CallContext::with_deadline(
        std::time::Instant::now() + std::time::Duration::from_millis(1500),
    );
    let err = b.start(&short, &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    assert!(err.message().contains("may remain"), "{}", err.message());
}

/// Approves the Workload's dispatch check, as the readmission gate controller would,
/// with the admission count `n` for the pods.
fn approve(sim: &Sim, workload: &str, n: u64) {
    let mut wl = sim.get("workloads", NS, workload).unwrap();
    wl["status"]["admissionChecks"] = json!([{"name": "dispatch-readmission", "state": "Ready",
        "message": "approved", "lastTransitionTime": "2026-01-01T00:00:00Z",
        "podSetUpdates": [{"name": "node", "annotations": {keys::ANN_ADMISSION: n.to_string()}}]}]);
    sim.apply(wl).unwrap();
    sim.settle();
}

/// A Kueue-mode job started, opened and admitted, its check approved with admission 1;
/// its reference and its Workload's name.
async fn admitted(sim: &Sim, b: &KubeflowBackend) -> (dispatch_core::ObjectRef, String) {
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    let name = sim
        .list("workloads", NS)
        .into_iter()
        .find(|w| w["metadata"]["labels"][keys::KUEUE_JOB_UID] == object.uid.as_str())
        .and_then(|w| w["metadata"]["name"].as_str().map(str::to_owned))
        .unwrap();
    approve(sim, &name, 1);
    (object, name)
}

#[tokio::test]
async fn a_kueue_preemption_is_preempted_not_failed_and_the_job_waits_for_its_gate() {
    let sim = cluster().await;
    install_gate_with_quota(&sim, true, 16);
    let b = backend(&sim, kueue_settings()).await;
    let (object, name) = admitted(&sim, &b).await;
    let running = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(running.state, ObjectState::Running, "{running:#?}");
    assert_eq!(running.execution.map(|e| e.admission), Some(1));

    assert!(sim.kueue_preempt(NS, &name));
    let preempted = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(preempted.state, ObjectState::Pending, "{preempted:#?}");
    assert_eq!(preempted.cause.kind, dispatch_core::CauseKind::Preempted, "{preempted:#?}");
    assert!(
        preempted.cause.detail.starts_with(&format!("Workload {name} Evicted: Preempted")),
        "{}",
        preempted.cause.detail
    );
}

#[tokio::test]
async fn after_a_kueue_preemption_hold_then_release_readmits_as_a_new_execution() {
    let sim = cluster().await;
    install_gate_with_quota(&sim, true, 16);
    let b = backend(&sim, kueue_settings()).await;
    let (object, name) = admitted(&sim, &b).await;
    assert!(sim.kueue_preempt(NS, &name));

    b.hold(&hold_cx(), &object, 1).await.unwrap();
    assert_eq!(b.inspect(&cx(), &object).await.unwrap().state, ObjectState::Held);
    sim.delete(
        "workloads",
        NS,
        &format!("preemptor-{name}"),
        dispatch_kf_sim::Propagation::Background,
    );
    b.release(&hold_cx(), &object, 1).await.unwrap();
    // The readmission gate (dispatch-kf-gate, not built yet) would now permit admission 2.
    approve(&sim, &name, 2);
    let again = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(again.state, ObjectState::Running, "{again:#?}");
    assert_eq!(again.execution.map(|e| (e.admission, e.index)), Some((2, 2)), "{again:#?}");
    let pods = sim.list("pods", NS);
    assert!(!pods.is_empty());
    assert!(pods.iter().all(|p| p["metadata"]["annotations"][keys::ANN_ADMISSION] == "2"));
}

#[tokio::test]
async fn a_pods_ready_timeout_eviction_is_requeued() {
    let sim = cluster().await;
    install_gate_with_quota(&sim, true, 16);
    let b = backend(&sim, kueue_settings()).await;
    let (object, name) = admitted(&sim, &b).await;
    // A placeholder holds the quota, so the evicted Workload waits (as with no capacity).
    assert!(sim.kueue_preempt(NS, &name));
    sim.delete(
        "workloads",
        NS,
        &format!("preemptor-{name}"),
        dispatch_kf_sim::Propagation::Background,
    );
    approve(&sim, &name, 1);
    assert!(sim.kueue_pods_ready_timeout(NS, &name));
    let obs = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(obs.cause.kind, dispatch_core::CauseKind::Requeued, "{obs:#?}");
    assert!(obs.cause.detail.contains("PodsReadyTimeout"), "{}", obs.cause.detail);
}

/// Factory asks about every verb the adapter uses. Without the writes
/// the Backend observes only, naming each missing one, and probes nothing; without the
/// deletes of orphans it still writes, and says what StopJob cannot do.
#[tokio::test]
async fn missing_write_permissions_make_the_backend_observe_only_naming_each_and_probe_nothing() {
    let sim = cluster().await;
    sim.add_identity(
        Identity::new("half")
            .allow(Rule::new(&["get", "list", "watch"], "trainer.kubeflow.org", &["*"]))
            .allow(Rule::new(
                &["create", "patch", "delete"],
                "trainer.kubeflow.org",
                &["trainingruntimes"],
            ))
            .allow(Rule::new(&["get", "list", "watch"], "jobset.x-k8s.io", &["*"]))
            .allow(Rule::new(&["get", "list", "watch"], "", &["*"])),
    );
    sim.clear_requests();
    let b = KubeflowBackend::with_cluster(settings(json!({})), connect(&sim, "half").await, &cx())
        .await
        .unwrap();
    match &b.preflight().access {
        Writability::ObserveOnly { missing } => assert!(
            missing.contains("create trainjobs, update trainjobs, delete trainjobs"),
            "{missing}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        sim.requests()
            .iter()
            .all(|r| r.verb != "create" || r.resource == "selfsubjectaccessreviews"),
        "the probe did not run: {:#?}",
        sim.requests()
    );
    assert!(names(&sim, "trainingruntimes").is_empty());
    let lacking = b.preflight().lacking.join("; ");
    assert!(lacking.contains("delete jobsets") && lacking.contains("delete pods"), "{lacking}");
    assert!(lacking.contains("patch pods: StopJob cannot take the Job controller's finalizer off"));
}

/// The Workload annotation counting Releases (docs/names-labels-annotations.md).
const RELEASES: &str = "dispatch.phpboyscout.uk/releases";

/// Release right after Hold, in Kueue mode: the held execution's pods are still going
/// (here: the cluster has not acted on the Hold yet), so Release answers pods-remain
/// and counts no Release; once they are gone it is taken. Before, it was taken at once,
/// Kueue admitted the Workload again, and on a busy real cluster the resumed Jobs' pods
/// ran beside the held ones still terminating (found by the chaos run, docs/dev/chaos.md).
#[tokio::test]
async fn a_kueue_release_while_the_held_pods_remain_is_pods_remain_and_counts_no_release() {
    let sim = cluster().await;
    install_gate_with_quota(&sim, true, 16);
    let b = backend(&sim, kueue_settings()).await;
    let (object, name) = admitted(&sim, &b).await;
    // From now on the cluster acts on a write only when the test lets it (`settle`).
    sim.set_auto_settle(false);
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    let err = b.release(&hold_cx(), &object, 1).await.unwrap_err();
    assert!(err.is_pods_remain() && err.is(Kind::Unreachable), "{err:?}");
    let workload = sim.get("workloads", NS, &name).unwrap();
    assert_eq!(workload["spec"]["active"], false, "still held");
    let releases = |w: &serde_json::Value| w["metadata"]["annotations"][RELEASES].clone();
    assert!(releases(&workload).is_null(), "{workload:#}");
    sim.settle();
    b.release(&hold_cx(), &object, 1).await.expect("the held pods are gone");
    let workload = sim.get("workloads", NS, &name).unwrap();
    assert_eq!(releases(&workload), "1");
}
