//! Admission webhooks' answers read as what they are (`docs/errors.md#webhook-denials`),
//! on the simulated cluster, which plays them in the upstream words: a webhook that
//! cannot be called stored nothing (*unreachable*, never *outcome-unknown*), a denial
//! that passes on its own says "retry" (*unreachable*, pods-remain where it means that),
//! and no denial is *unauthorized*.

use dispatch_core::{Backend, Kind, ObjectRef};
use dispatch_kf_sim::{Fault, Sim, SimOptions};
use dispatch_kf_testkit::*;
use serde_json::json;

const TRAINER: &str = "validator.trainjob.trainer.kubeflow.org";

/// The apiserver's answer while the Trainer's webhook server is down (Kubernetes 1.34 to
/// 1.37, `pkg/admission/plugin/webhook/validating/dispatcher.go`).
fn webhook_down() -> dispatch_kf_sim::FaultAction {
    Fault::status(
        500,
        "InternalError",
        &format!(
            "Internal error occurred: failed calling webhook \"{TRAINER}\": failed to call webhook: Post \"https://kubeflow-trainer-controller-manager.kubeflow-system.svc:443/validate-trainer-kubeflow-org-v1alpha1-trainjob?timeout=10s\": dial tcp 10.96.41.7:443: connect: connection refused"
        ),
    )
}

fn denied(words: &str) -> dispatch_kf_sim::FaultAction {
    Fault::status(
        403,
        "Forbidden",
        &format!("admission webhook \"{TRAINER}\" denied the request: {words}"),
    )
}

fn suspended(sim: &Sim, object: &ObjectRef) -> bool {
    sim.get("trainjobs", NS, &object.name).unwrap()["spec"]["suspend"] == json!(true)
}

#[tokio::test]
async fn start_open_and_hold_against_a_webhook_that_cannot_be_called_answer_unreachable_and_leave_nothing()
 {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;

    sim.add_fault(Fault::on("create", "trainjobs", webhook_down()).always());
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert!(err.is(Kind::Unreachable), "{err:?}");
    assert!(err.message().contains("nothing was stored"), "{}", err.message());
    assert!(sim.list("trainjobs", NS).is_empty());
    assert!(sim.list("trainingruntimes", NS).is_empty(), "the copy goes too");
    let found = b.find(&cx(), &job(1)).await.unwrap();
    assert!(found.objects.is_empty() && found.in_flight.is_none(), "not in flight: {found:?}");
    sim.clear_faults();

    let object = b.start(&cx(), &request(&job(1), 1)).await.expect("the webhook is back");
    for verb in ["update", "patch"] {
        sim.add_fault(Fault::on(verb, "trainjobs", webhook_down()).always());
    }
    let err = b.open(&hold_cx(), &object).await.unwrap_err();
    assert!(err.is(Kind::Unreachable), "{err:?}");
    assert!(suspended(&sim, &object), "the gate stays closed");
    sim.clear_faults();
    b.open(&hold_cx(), &object).await.expect("the webhook is back");

    for verb in ["update", "patch"] {
        sim.add_fault(Fault::on(verb, "trainjobs", webhook_down()).always());
    }
    let err = b.hold(&hold_cx(), &object, 1).await.unwrap_err();
    assert!(err.is(Kind::Unreachable), "{err:?}");
    assert!(!suspended(&sim, &object), "no hold was written");
    sim.clear_faults();
    b.hold(&hold_cx(), &object, 1).await.expect("the webhook is back");
}

/// The Trainer's webhook reads the JobSet's count of active Jobs from its cache, which
/// lags the pods' going: its denial of Release's `runtimePatches` change is the same
/// state as pods remaining.
#[tokio::test]
async fn a_release_the_trainers_webhook_refuses_while_the_jobset_counts_active_jobs_is_pods_remain()
{
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    let words = "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob node is still active";
    for verb in ["update", "patch"] {
        sim.add_fault(Fault::on(verb, "trainjobs", denied(words)));
    }
    let err = b.release(&hold_cx(), &object, 1).await.unwrap_err();
    assert!(err.is_pods_remain() && err.is(Kind::Unreachable), "{err:?}");
    assert!(err.message().contains(words), "the webhook's words: {}", err.message());
    assert!(suspended(&sim, &object), "the hold stays");
    sim.clear_faults();
    b.release(&hold_cx(), &object, 1).await.expect("the JobSet caught up");
    assert!(!suspended(&sim, &object));
}

/// The same state, seen by the Backend itself: the JobSet still counts an active Job
/// when no pod remains. Release refuses before writing, naming the count.
#[tokio::test]
async fn release_waits_while_the_jobset_still_counts_active_jobs_after_the_pods_have_gone() {
    let sim = cluster_with(SimOptions { auto_settle: false, ..SimOptions::default() }).await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    sim.settle();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    assert!(sim.list("pods", NS).is_empty(), "the pods have gone");
    // The JobSet's status lags: it still counts an active Job in `node`.
    let mut job_set = sim.get("jobsets", NS, &object.name).unwrap();
    job_set["status"]["replicatedJobsStatus"][0]["active"] = json!(1);
    sim.apply(job_set).unwrap();
    let before = sim.get("trainjobs", NS, &object.name).unwrap();
    let err = b.release(&hold_cx(), &object, 1).await.unwrap_err();
    assert!(err.is_pods_remain() && err.is(Kind::Unreachable), "{err:?}");
    assert!(err.message().contains("still counts 1 active Job in node"), "{}", err.message());
    assert_eq!(sim.get("trainjobs", NS, &object.name).unwrap(), before, "nothing written");
    sim.settle();
    b.release(&hold_cx(), &object, 1).await.expect("the JobSet caught up");
}

/// A denial nobody listed is *rejected* with the webhook's words, never *unauthorized*.
#[tokio::test]
async fn an_unlisted_denial_is_rejected_with_the_webhooks_words() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let words = "spec.trainer.env: Invalid value: [...]: must not have reserved envs";
    sim.add_fault(Fault::on("create", "trainjobs", denied(words)));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert!(err.is(Kind::Rejected), "{err:?}");
    assert!(err.message().contains(words), "{}", err.message());
    assert!(sim.list("trainjobs", NS).is_empty());
}
