//! Start's nine steps against the simulated cluster: what each step's success and
//! failure leaves in the cluster, read back from the cluster itself.

use std::time::{Duration, Instant};

use dispatch_core::{Backend, CallContext, Capability, Error, Kind, ObjectState};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_model::internal::capabilities::Writability;
use dispatch_kf_model::{keys, names};
use dispatch_kf_sim::{Fault, FaultAction, Releases, SimOptions};
use dispatch_kf_testkit::*;
use serde_json::json;

/// Start of submission 1 of job 1 with `fault` in place: its error.
async fn start_refused(sim: &dispatch_kf_sim::Sim, b: &KubeflowBackend, fault: Fault) -> Error {
    sim.add_fault(fault);
    b.start(&cx(), &request(&job(1), 1)).await.unwrap_err()
}

/// Neither a TrainJob nor a runtime copy is in the namespace.
fn assert_nothing_left(sim: &dispatch_kf_sim::Sim) {
    assert!(names(sim, "trainjobs").is_empty(), "{:?}", names(sim, "trainjobs"));
    assert!(names(sim, "trainingruntimes").is_empty(), "{:?}", names(sim, "trainingruntimes"));
}

/// Trainer v2.1 serves a TrainJob without `spec.runtimePatches`: a writing Factory
/// refuses it from the served schema in one line naming the Trainer to install,
/// before the probe writes anything; a read-only one observes it.
#[tokio::test]
async fn a_trainer_without_runtime_patches_is_refused_at_factory_naming_the_version_needed() {
    let releases = Releases { trainer_runtime_patches: false, ..Releases::default() };
    let sim = cluster_with(SimOptions { releases, ..SimOptions::default() }).await;
    let err =
        KubeflowBackend::with_cluster(settings(json!({})), connect(&sim, "admin").await, &cx())
            .await
            .err()
            .expect("Trainer v2.1 is refused");
    assert_eq!(err.kind(), Kind::Unsupported, "{err:?}");
    assert_eq!(err.message(), dispatch_kf_model::internal::served::TRAINER_WITHOUT_RUNTIME_PATCHES);
    assert_nothing_left(&sim);
    let observer = backend(&sim, settings(json!({"readOnly": true}))).await;
    assert_eq!(observer.preflight().access, Writability::ReadOnly);
}

#[tokio::test]
async fn factory_on_a_complete_cluster_is_writable_and_its_probe_leaves_nothing() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    assert_eq!(b.preflight().access, Writability::Writable);
    assert!(
        b.preflight().capabilities[&Capability::Hold].is_yes(),
        "{:?}",
        b.preflight().capabilities[&Capability::Hold]
    );
    assert!(names(&sim, "trainjobs").is_empty(), "the probe's TrainJob is stopped");
}

#[tokio::test]
async fn start_creates_a_gated_train_job_on_an_owned_runtime_copy() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let name = names::make(&job(1), 1);
    assert_eq!((object.namespace.as_str(), object.name.as_str()), (NS, name.as_str()));
    let tj = sim.get("trainjobs", NS, &name).unwrap();
    assert_eq!(tj["spec"]["suspend"], true);
    assert_eq!(tj["metadata"]["uid"], object.uid.as_str());
    let copy = sim.get("trainingruntimes", NS, &name).unwrap();
    assert_eq!(copy["metadata"]["ownerReferences"][0]["uid"], object.uid.as_str());

    let found = b.find(&cx(), &job(1)).await.unwrap();
    assert_eq!(found.objects.len(), 1, "{:#?}", found.objects);
    assert_eq!(found.objects[0].state, ObjectState::Gated);
    assert_eq!(found.in_flight, None);
}

#[tokio::test]
async fn a_plain_start_makes_five_requests() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    sim.clear_requests();
    b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let requests = sim.requests();
    let made: Vec<(&str, &str)> =
        requests.iter().map(|r| (r.verb.as_str(), r.resource.as_str())).collect();
    assert_eq!(
        made,
        [
            ("get", "clustertrainingruntimes"),
            ("create", "trainingruntimes"),
            ("create", "trainjobs"),
            ("patch", "trainingruntimes"),
            ("get", "trainjobs"),
        ],
        "the stock runtime read, its copy made, the TrainJob made, the copy's owner set, \
         the TrainJob read back: {requests:#?}"
    );
}

#[tokio::test]
async fn a_refused_request_creates_nothing() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let mut bad = request(&job(1), 1);
    bad.spec.nodes = 0;
    let err = b.start(&cx(), &bad).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Invalid, "{err:?}");
    let mut other = request(&job(1), 1);
    other.spec.extensions.insert(
        "kubeflow/RuntimeRef".into(),
        json!({"kind": "ClusterTrainingRuntime", "name": "not-configured"}),
    );
    assert_eq!(b.start(&cx(), &other).await.unwrap_err().kind(), Kind::Unsupported);
    assert!(names(&sim, "trainjobs").is_empty());
    assert!(names(&sim, "trainingruntimes").is_empty());
}

#[tokio::test]
async fn a_retried_start_over_an_owned_copy_is_rejected() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("owned"), "{}", err.message());
    assert_eq!(names(&sim, "trainjobs").len(), 1);
}

#[tokio::test]
async fn an_unanswered_copy_create_is_unreachable_and_no_train_job_is_made_then_a_retry_reuses_it()
{
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    sim.add_fault(Fault::on("create", "trainingruntimes", FaultAction::ResetAfterApply));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    assert!(names(&sim, "trainjobs").is_empty());
    assert_eq!(names(&sim, "trainingruntimes").len(), 1, "the copy may exist");
    b.start(&cx(), &request(&job(1), 1)).await.expect("a retry reuses the unowned copy");
    assert_eq!(names(&sim, "trainjobs").len(), 1);
}

#[tokio::test]
async fn an_unanswered_train_job_create_is_outcome_unknown_and_find_reports_in_flight() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::ResetBeforeApply));
    let err = b.start(&cx(), &request(&job(1), 3)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    let found = b.find(&cx(), &job(1)).await.unwrap();
    assert_eq!(found.in_flight.map(|f| f.submission), Some(3));
}

#[tokio::test]
async fn a_train_job_create_refused_definitely_deletes_the_copy() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let refused = Fault::status(422, "Invalid", "spec.trainer: Invalid value");
    let err = start_refused(&sim, &b, Fault::on("create", "trainjobs", refused)).await;
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert_nothing_left(&sim);
}

/// The Trainer's webhook reads runtimes from its cache, which lags the apiserver: on the
/// real control plane, a hundred Starts in a row met "TrainingRuntime ... not found:
/// specified trainingRuntime must be created before the TrainJob is created" (403) for
/// a copy made a moment before. Start sends the create again until the webhook has
/// seen it; when it never does, the refusal is the answer and the copy goes.
#[tokio::test(start_paused = true)]
async fn a_train_job_refused_until_the_webhook_sees_its_runtime_copy_is_created_again() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let unseen = || {
        Fault::status(
            403,
            "Forbidden",
            &format!(
                "admission webhook \"validator.trainjob.trainer.kubeflow.org\" denied the request: \
                 TrainingRuntime \"x\" not found: specified trainingRuntime {}",
                keys::TRAINER_RUNTIME_NOT_SEEN
            ),
        )
    };
    sim.add_fault(Fault::on("create", "trainjobs", unseen()).times(3));
    b.start(&cx(), &request(&job(1), 1)).await.expect("created once the webhook saw the copy");
    assert_eq!(names(&sim, "trainjobs").len(), 1);

    sim.add_fault(Fault::on("create", "trainjobs", unseen()).always());
    let err = b.start(&cx(), &request(&job(2), 1)).await.unwrap_err();
    assert!(err.message().contains(keys::TRAINER_RUNTIME_NOT_SEEN), "{err:?}");
    assert_eq!(names(&sim, "trainingruntimes").len(), 1, "the refused Start's copy is gone");
    sim.clear_faults();
}

#[tokio::test]
async fn an_owner_that_cannot_be_set_stops_the_train_job_and_is_rejected() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    sim.add_fault(Fault::on(
        "patch",
        "trainingruntimes",
        Fault::status(500, "InternalError", "etcd"),
    ));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.object().is_some(), "the refusal names the TrainJob it stopped");
    assert!(names(&sim, "trainjobs").is_empty());
}

/// The owner's patch refused before anything was stored (the Trainer's webhook could
/// not be called, as the chaos run met while the Trainer restarted): the TrainJob is
/// stopped and the copy deleted, and Start says "try again", not "refused".
#[tokio::test]
async fn an_owner_the_apiserver_could_not_store_yet_stops_the_train_job_and_is_unreachable() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let webhook = "validator.trainingruntime.trainer.kubeflow.org";
    let down = Fault::status(
        500,
        "InternalError",
        &format!(
            "Internal error occurred: failed calling webhook \"{webhook}\": failed to call webhook: Post \"https://127.0.0.1:29444/validate\": read: connection reset by peer"
        ),
    );
    sim.add_fault(Fault::on("patch", "trainingruntimes", down));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    assert!(err.message().contains("start it again"), "{}", err.message());
    assert!(err.object().is_some(), "the answer names the TrainJob it stopped");
    assert!(names(&sim, "trainjobs").is_empty() && names(&sim, "trainingruntimes").is_empty());
    let found = b.find(&cx(), &job(1)).await.unwrap();
    assert!(found.objects.is_empty() && found.in_flight.is_none(), "{found:?}");
    b.start(&cx(), &request(&job(1), 1)).await.expect("the same Start, again");
}

#[tokio::test]
async fn start_on_a_read_only_backend_is_read_only_and_probes_nothing() {
    let sim = cluster().await;
    sim.clear_requests();
    let b = backend(&sim, settings(json!({"readOnly": true}))).await;
    assert_eq!(b.preflight().access, Writability::ReadOnly);
    assert!(
        sim.requests()
            .iter()
            .all(|r| r.method == "GET" || r.path.contains("selfsubjectaccessreviews")),
        "{:#?}",
        sim.requests()
    );
    assert_eq!(b.start(&cx(), &request(&job(1), 1)).await.unwrap_err().kind(), Kind::ReadOnly);
}

#[tokio::test]
async fn a_closed_backend_is_unreachable() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    b.close().await;
    assert_eq!(b.start(&cx(), &request(&job(1), 1)).await.unwrap_err().kind(), Kind::Unreachable);
    assert_eq!(b.find(&cx(), &job(1)).await.unwrap_err().kind(), Kind::Unreachable);
}

#[tokio::test]
async fn a_train_job_changed_on_read_back_is_stopped_and_rejected_naming_the_difference() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    // A policy webhook rewrites the submission label of every TrainJob created.
    sim.add_mutating_webhook("trainjobs", |tj| {
        tj["metadata"]["labels"]["dispatch.phpboyscout.uk/submission"] = json!("7");
    });
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("dispatch.phpboyscout.uk/submission"), "{}", err.message());
    assert!(err.object().is_some(), "the refusal names the TrainJob it stopped");
    assert!(names(&sim, "trainjobs").is_empty(), "the changed TrainJob is stopped");
}

#[tokio::test]
async fn kueue_mode_on_a_cluster_that_does_not_serve_kueue_is_unsupported() {
    let opts = dispatch_kf_sim::SimOptions {
        unserved: vec!["kueue.x-k8s.io/v1beta2".into()],
        ..dispatch_kf_sim::SimOptions::default()
    };
    let sim = dispatch_kf_sim::Sim::start(opts).await.unwrap();
    let settings = settings(json!({"mode": "kueue", "kueue": {"queue": "team-a"}}));
    let err =
        dispatch_kf::KubeflowBackend::with_cluster(settings, connect(&sim, "admin").await, &cx())
            .await
            .err()
            .expect("Kueue is required in Kueue mode");
    assert_eq!(err.kind(), Kind::Unsupported);
    assert!(err.message().contains("kueue.x-k8s.io/v1beta2"), "{}", err.message());
}

/// Found by `start_faults`: a conflict answering the stop of a refused TrainJob used to
/// be taken for "another instance holds the name", so Start refused while its TrainJob
/// was still there.
#[tokio::test]
async fn a_stop_answered_with_a_conflict_while_the_train_job_remains_is_outcome_unknown() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    sim.add_fault(Fault::on("patch", "trainingruntimes", FaultAction::ResetBeforeApply));
    sim.add_fault(Fault::on(
        "delete",
        "trainjobs",
        Fault::status(409, "Conflict", "the object has been modified"),
    ));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    assert_eq!(
        names(&sim, "trainjobs").len(),
        1,
        "the TrainJob is still there, as the sentinel says it may be"
    );
}

/// A refused create of the runtime copy was taken for "it exists",
/// read, and ended as NotFound, which the supervisor takes for an unknown outcome.
#[tokio::test]
async fn a_refused_copy_create_is_rejected_not_not_found() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let refused = Fault::status(422, "Invalid", "spec.template: Invalid value");
    let err = start_refused(&sim, &b, Fault::on("create", "trainingruntimes", refused)).await;
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("Invalid value"), "{}", err.message());
    assert_nothing_left(&sim);
}

/// A Start retried after an unanswered TrainJob create reuses the
/// unowned copy, meets the earlier TrainJob, and must not delete the copy it runs on.
#[tokio::test]
async fn a_retry_that_meets_the_earlier_train_job_leaves_the_copy_it_runs_on() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let name = names::make(&job(1), 1);
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::ResetAfterApply));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    let earlier = sim.get("trainjobs", NS, &name).expect("the unanswered create landed");

    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("already exists"), "{}", err.message());
    assert_eq!(
        sim.get("trainjobs", NS, &name).map(|t| t["metadata"]["uid"].clone()),
        Some(earlier["metadata"]["uid"].clone()),
        "the earlier TrainJob is untouched"
    );
    assert_eq!(names(&sim, "trainingruntimes"), vec![name], "the copy it runs on stays");
}

/// When the TrainJob's create is refused definitely, Start deletes
/// the copy it made, by UID: a copy of the name made since by someone else stays.
#[tokio::test]
async fn a_refused_train_job_create_deletes_only_the_copy_this_call_made() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let name = names::make(&job(1), 1);
    // An earlier Start's copy create went unanswered but landed: this Start reuses it.
    let unanswered = Fault::on("create", "trainingruntimes", FaultAction::ResetAfterApply);
    let err = start_refused(&sim, &b, unanswered).await;
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    let refused = Fault::status(422, "Invalid", "spec.trainer: Invalid value");
    let err = start_refused(&sim, &b, Fault::on("create", "trainjobs", refused)).await;
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert_eq!(
        names(&sim, "trainingruntimes"),
        vec![name],
        "a reused copy is not this call's to delete"
    );
    assert!(
        sim.requests()
            .iter()
            .filter(|r| r.verb == "delete")
            .all(|r| r.resource != "trainingruntimes"),
        "no delete of the copy was sent"
    );
}

/// A probe whose TrainJob create went unanswered (it landed) used to
/// leave its TrainJob and copy behind. It met no definite answer, so Factory decides
/// nothing and fails *unreachable*.
#[tokio::test]
async fn a_probe_whose_train_job_create_went_unanswered_leaves_nothing_behind() {
    let sim = cluster().await;
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::ResetAfterApply));
    let made =
        KubeflowBackend::with_cluster(settings(json!({})), connect(&sim, "admin").await, &cx())
            .await;
    let err = made.err().expect("Factory decides nothing");
    assert!(err.is(Kind::Unreachable) && err.message().contains("no definite answer"), "{err:?}");
    assert_nothing_left(&sim);
}

/// A probe refused by a webhook that cannot be called met no definite answer: Factory
/// fails *unreachable*, "try again", rather than make a Backend observe-only for as
/// long as it lives (or a command keep that verdict: the random-fault run found every
/// command answering read-only for minutes after a Trainer restart of seconds). A
/// webhook's definite denial is a verdict a person must act on: observe-only, naming it.
#[tokio::test]
async fn a_probe_that_met_no_answer_fails_factory_and_one_denied_is_observe_only() {
    let sim = cluster().await;
    let unreachable = Fault::status(
        500,
        "InternalError",
        "Internal error occurred: failed calling webhook \"validator.trainingruntime.trainer.kubeflow.org\": failed to call webhook: Post \"https://127.0.0.1:29444/validate\": dial tcp 127.0.0.1:29444: connect: connection refused",
    );
    sim.add_fault(Fault::on("create", "trainingruntimes", unreachable).times(1));
    let made =
        KubeflowBackend::with_cluster(settings(json!({})), connect(&sim, "admin").await, &cx())
            .await;
    let err = made.err().expect("Factory decides nothing");
    assert!(
        err.is(Kind::Unreachable) && err.message().contains("failed calling webhook"),
        "{err:?}"
    );
    assert_nothing_left(&sim);
    let b = backend(&sim, settings(json!({}))).await;
    assert_eq!(b.preflight().access, Writability::Writable, "once the webhook answers");

    let denied = Fault::status(422, "Invalid", "TrainJob.trainer.kubeflow.org is invalid: x");
    sim.add_fault(Fault::on("create", "trainjobs", denied).times(1));
    let b = backend(&sim, settings(json!({}))).await;
    let Writability::ObserveOnly { missing } = &b.preflight().access else {
        panic!("{:?}", b.preflight().access)
    };
    assert!(missing.contains("is invalid: x"), "{missing}");
    assert!(dispatch_kf_model::internal::capabilities::lasting(&b.preflight().facts));
    assert_nothing_left(&sim);
}

/// The probe's clean-up used the caller's context, which had just
/// ended, so the probe's TrainJob stayed. A call that ends during the probe's Hold
/// leaves the round trip unanswered: Factory decides nothing and fails *unreachable*.
#[tokio::test]
async fn a_probe_whose_call_ends_during_its_hold_is_still_cleaned_up() {
    let sim = cluster().await;
    sim.add_fault(Fault::on("update", "trainjobs", FaultAction::Delay(Duration::from_secs(3))));
    let soon = CallContext::with_deadline(Instant::now() + Duration::from_secs(1));
    let made =
        KubeflowBackend::with_cluster(settings(json!({})), connect(&sim, "admin").await, &soon)
            .await;
    let err = made.err().expect("Factory decides nothing");
    assert!(err.is(Kind::Unreachable) && err.message().contains("Hold and Release"), "{err:?}");
    assert!(names(&sim, "trainjobs").is_empty(), "{:?}", names(&sim, "trainjobs"));
}

/// With default waits, plain mode on a cluster that serves Kueue made
/// the probe look for a Workload for `timeouts.workload` (60 s) inside a call of 30 s,
/// so Factory failed at its deadline and left the probe's objects behind.
#[tokio::test]
async fn the_plain_mode_kueue_check_fits_in_the_deadline_factory_runs_under() {
    let sim = cluster().await;
    let defaults = settings(json!({"timeouts": {"workload": "60s", "request": "5s"}}));
    let soon = CallContext::with_deadline(Instant::now() + Duration::from_secs(3));
    let b = KubeflowBackend::with_cluster(defaults, connect(&sim, "admin").await, &soon)
        .await
        .expect("Factory finishes within its deadline");
    assert_eq!(b.preflight().access, Writability::Writable);
    assert!(names(&sim, "trainjobs").is_empty(), "{:?}", names(&sim, "trainjobs"));
}

/// Sets the probe expiry of every probe object of `plural` to `expires`, as the passing
/// of time would make it past.
async fn expire_probes(sim: &dispatch_kf_sim::Sim, plural: &str, kind: &str, expires: &str) {
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
    let gvk = GroupVersionKind::gvk(keys::TRAINER_GROUP, "v1alpha1", kind);
    let api: Api<DynamicObject> = Api::namespaced_with(
        kube_client(sim, "admin").await,
        NS,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    );
    for name in names(sim, plural) {
        let patch = json!({"metadata": {"annotations": {(keys::ANN_PROBE_EXPIRES): expires}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    }
}

/// A process killed mid-probe leaves the probe's objects, whose random job id no
/// supervisor will stop (here its deletes are refused, as they would be never sent).
/// They carry the probe's label and expiry: a later probe leaves them while their
/// probe may still run, and deletes them once past the expiry and the clock allowance.
#[tokio::test]
async fn a_probe_left_behind_is_deleted_by_a_later_probe_once_past_its_expiry() {
    let sim = cluster().await;
    let refused = Fault::status(403, "Forbidden", "the process is gone");
    let every_delete = Fault { resource: None, ..Fault::on("delete", "", refused) }.always();
    sim.add_fault(every_delete);
    let _ = backend(&sim, settings(json!({}))).await;
    sim.clear_faults();
    let left = names(&sim, "trainjobs");
    assert_eq!(left.len(), 1, "the probe's TrainJob stays: {left:?}");
    let train_job = sim.get("trainjobs", NS, &left[0]).unwrap();
    assert_eq!(train_job["metadata"]["labels"][keys::LABEL_PURPOSE], "probe");
    let expires = train_job["metadata"]["annotations"][keys::ANN_PROBE_EXPIRES].as_str().unwrap();
    let expires: jiff::Timestamp = expires.parse().unwrap();
    assert!(expires > jiff::Timestamp::now(), "{expires}: its probe may still run");

    let b = backend(&sim, settings(json!({}))).await;
    assert_eq!(b.preflight().access, Writability::Writable);
    assert_eq!(names(&sim, "trainjobs"), left, "not yet past its expiry");

    let past = "2026-01-01T00:00:00Z";
    expire_probes(&sim, "trainjobs", "TrainJob", past).await;
    expire_probes(&sim, "trainingruntimes", "TrainingRuntime", past).await;
    let b = backend(&sim, settings(json!({}))).await;
    assert_eq!(b.preflight().access, Writability::Writable);
    assert_nothing_left(&sim);
    assert!(sim.list("jobsets", NS).is_empty() && sim.list("pods", NS).is_empty());
}
