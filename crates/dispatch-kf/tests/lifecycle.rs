//! Open, Hold, Release, Inspect, Stop and StopJob on the simulated cluster, in plain
//! mode: the hold family's rules of `docs/start-gate-and-holds.md` and the reference
//! checks of `docs/errors.md#the-adapters-own-refusals`.

use std::time::Duration;

use dispatch_core::{Backend, CallContext, Capability, Kind, ObjectKind, ObjectRef, ObjectState};
use dispatch_kf_model::{keys, names};
use dispatch_kf_sim::{Fault, FaultAction};
use dispatch_kf_testkit::*;
use serde_json::json;

async fn started(sim: &dispatch_kf_sim::Sim) -> (dispatch_kf::KubeflowBackend, ObjectRef) {
    let b = backend(sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    (b, object)
}

fn admission(sim: &dispatch_kf_sim::Sim, name: &str) -> String {
    let tj = sim.get("trainjobs", NS, name).unwrap();
    tj["metadata"]["annotations"][keys::ANN_ADMISSION].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn open_lifts_the_gate_and_counts_the_first_admission() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    let tj = sim.get("trainjobs", NS, &object.name).unwrap();
    assert_eq!(tj["spec"]["suspend"], false);
    assert_eq!(admission(&sim, &object.name), "1");
    sim.settle();
    let obs = b.inspect(&cx(), &object).await.unwrap();
    assert_ne!(obs.state, ObjectState::Gated, "{obs:#?}");
    b.open(&hold_cx(), &object).await.expect("a second Open writes nothing and succeeds");
}

#[tokio::test]
async fn the_hold_family_needs_a_deadline() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    assert_eq!(b.open(&cx(), &object).await.unwrap_err().kind(), Kind::Invalid);
    let past = CallContext::with_deadline(std::time::Instant::now() - Duration::from_secs(1));
    let err = b.hold(&past, &object, 1).await.unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        (Kind::Rejected, "the call's deadline passed before the request was sent")
    );
}

#[tokio::test]
async fn a_hold_suspends_and_is_reported_with_its_instance() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    let tj = sim.get("trainjobs", NS, &object.name).unwrap();
    assert_eq!(tj["spec"]["suspend"], true);
    let obs = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!((obs.state, obs.hold_instance), (ObjectState::Held, Some(1)), "{obs:#?}");
    assert!(!obs.admin_held);
    b.hold(&hold_cx(), &object, 1).await.expect("the same instance again writes nothing");
    let err = b.hold(&hold_cx(), &object, 2).await.unwrap_err();
    assert!(err.is_stale_hold() && err.is(Kind::Rejected), "{err:?}");
    assert_eq!(b.hold(&hold_cx(), &object, 0).await.unwrap_err().kind(), Kind::Invalid);
}

#[tokio::test]
async fn release_runs_the_train_job_again_as_a_new_execution() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    sim.advance(Duration::from_secs(60));
    b.release(&hold_cx(), &object, 1).await.unwrap();
    assert_eq!(admission(&sim, &object.name), "2");
    let tj = sim.get("trainjobs", NS, &object.name).unwrap();
    assert_eq!(tj["spec"]["suspend"], false);
    assert!(tj["metadata"]["annotations"].get(keys::ANN_HOLD_INSTANCE).is_none());
    b.release(&hold_cx(), &object, 1).await.expect("a retried Release writes nothing");
    assert_eq!(admission(&sim, &object.name), "2", "never raised twice for one Release");
}

/// Open on a TrainJob whose name's earlier instance left pods still terminating: pods
/// remain, and nothing is written until they are gone.
#[tokio::test]
async fn open_while_pods_of_the_object_remain_is_pods_remain_and_writes_nothing() {
    let sim = cluster().await;
    let (b, first) = started(&sim).await;
    b.open(&hold_cx(), &first).await.unwrap();
    sim.settle();
    // The pods ignore SIGTERM: they stay Terminating until their grace period passes on
    // the virtual clock.
    sim.set_slow_termination(true);
    b.stop(&cx(), &first).await.unwrap();
    sim.settle();
    let second = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    assert_eq!(second.name, first.name);
    let before = sim.get("trainjobs", NS, &second.name).unwrap();
    let err = b.open(&hold_cx(), &second).await.unwrap_err();
    assert!(err.is_pods_remain() && err.is(Kind::Unreachable), "{err:?}");
    assert!(err.message().contains(&first.name), "names the pods: {}", err.message());
    assert_eq!(sim.get("trainjobs", NS, &second.name).unwrap(), before, "nothing written");

    sim.advance(Duration::from_secs(60));
    sim.settle();
    b.open(&hold_cx(), &second).await.expect("the pods are gone");
    assert_eq!(admission(&sim, &second.name), "1");
}

/// Release after a hold whose pods are still terminating: pods remain, the hold stays,
/// nothing is written until they are gone.
#[tokio::test]
async fn release_while_pods_of_the_object_remain_is_pods_remain_and_writes_nothing() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    sim.set_slow_termination(true);
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    let before = sim.get("trainjobs", NS, &object.name).unwrap();
    let err = b.release(&hold_cx(), &object, 1).await.unwrap_err();
    assert!(err.is_pods_remain() && err.is(Kind::Unreachable), "{err:?}");
    assert_eq!(sim.get("trainjobs", NS, &object.name).unwrap(), before, "nothing written");
    let obs = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(obs.hold_instance, Some(1), "the hold stays: {obs:#?}");

    sim.advance(Duration::from_secs(60));
    sim.settle();
    b.release(&hold_cx(), &object, 1).await.expect("the pods are gone");
    assert_eq!(admission(&sim, &object.name), "2");
}

/// Where the preflight probe's Hold then Release failed, the Hold capability is no, and
/// Hold and Release are *unsupported* with its reason, writing nothing; Open still works.
#[tokio::test]
async fn hold_and_release_where_the_hold_capability_is_not_yes_are_unsupported() {
    let sim = cluster().await;
    let refusal = FaultAction::Status {
        code: 422,
        reason: "Invalid".into(),
        message: "a policy refuses suspending TrainJobs".into(),
    };
    sim.add_fault(Fault::on("update", "trainjobs", refusal));
    let (b, object) = started(&sim).await;
    let hold = &b.preflight().capabilities[&Capability::Hold];
    assert!(!hold.is_yes(), "{hold:?}");
    b.open(&hold_cx(), &object).await.expect("the Backend is writable: Open works");
    let before = sim.get("trainjobs", NS, &object.name).unwrap();
    for err in [
        b.hold(&hold_cx(), &object, 1).await.unwrap_err(),
        b.release(&hold_cx(), &object, 1).await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), Kind::Unsupported, "{err:?}");
        assert!(err.message().contains(&hold.reason), "{} lacks {}", err.message(), hold.reason);
    }
    assert_eq!(sim.get("trainjobs", NS, &object.name).unwrap(), before, "nothing written");
}

#[tokio::test]
async fn references_that_are_not_this_adapters_are_refused() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    let other_backend = ObjectRef { backend: "slurm".into(), ..object.clone() };
    assert_eq!(b.inspect(&cx(), &other_backend).await.unwrap_err().kind(), Kind::Invalid);
    let no_uid = ObjectRef { uid: String::new(), ..object.clone() };
    assert_eq!(b.inspect(&cx(), &no_uid).await.unwrap_err().kind(), Kind::Invalid);
    let not_ours = ObjectRef { name: "someone-elses-job".into(), ..object.clone() };
    assert_eq!(b.inspect(&cx(), &not_ours).await.unwrap_err().kind(), Kind::Invalid);
    let elsewhere = ObjectRef { namespace: "default".into(), ..object.clone() };
    assert_eq!(b.inspect(&cx(), &elsewhere).await.unwrap_err().kind(), Kind::NotFound);
    let stale = ObjectRef { uid: "an-older-instance".into(), ..object.clone() };
    let err = b.inspect(&cx(), &stale).await.unwrap_err();
    assert_eq!(err.kind(), Kind::NotFound);
    assert!(err.message().contains("another UID"), "{}", err.message());
}

#[tokio::test]
async fn stop_deletes_the_train_job_and_stopping_it_again_succeeds() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.stop(&cx(), &object).await.unwrap();
    assert!(sim.get("trainjobs", NS, &object.name).is_none());
    b.stop(&cx(), &object).await.expect("an object already gone is stopped");
    let other_instance = ObjectRef { uid: "another".into(), ..object.clone() };
    b.stop(&cx(), &other_instance).await.expect("a UID that no longer matches is success");
}

#[tokio::test(start_paused = true)]
async fn stop_job_waits_for_the_orphans_background_deletion_leaves() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    sim.set_gc_lag(Duration::from_secs(120));
    b.stop(&cx(), &object).await.unwrap();
    let found = b.find(&cx(), &job(1)).await.unwrap();
    assert!(!found.objects.is_empty(), "orphans remain while the collector lags");
    assert!(
        found.objects.iter().all(|o| o.foreign && o.object.kind != ObjectKind::TrainJob),
        "{:#?}",
        found.objects
    );

    let stopping = tokio::spawn({
        let b = b.clone();
        async move { b.stop_job(&cx(), &job(1)).await }
    });
    while !stopping.is_finished() {
        sim.advance(Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stopping.await.unwrap().unwrap();
    assert!(b.find(&cx(), &job(1)).await.unwrap().objects.is_empty());
    assert!(names(&sim, "trainingruntimes").is_empty());
    assert_eq!(names::parse(&object.name).map(|(_, n)| n), Some(1));
}

/// The garbage collector far behind (kube-controller-manager restarting, say): StopJob
/// deletes the TrainJob, then the orphaned JobSet and pods itself. The JobSet's Jobs
/// remain, and their Job controller makes their pods again; StopJob must not answer
/// done while a Job of the job is left to do that.
#[tokio::test(start_paused = true)]
async fn stop_job_deletes_the_jobs_a_lagging_collector_leaves_so_no_pod_comes_back() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    assert!(!names(&sim, "jobs").is_empty(), "the JobSet made its Jobs");
    sim.set_gc_lag(Duration::from_secs(3600));
    b.stop_job(&cx(), &job(1)).await.expect("StopJob removes what the collector has not");
    assert_eq!(names(&sim, "jobs"), Vec::<String>::new());
    sim.settle();
    assert_eq!(names(&sim, "pods"), Vec::<String>::new(), "no Job made its pods again");
}

/// The Job controller's tracking finalizer: on a pod whose Job is gone the Job
/// controller takes it off, and StopJob leaves it that grace, writing no pod; with the
/// controller manager down (or a patch of the Job controller's failed, which it never
/// tries again), nothing does, and StopJob takes it off each deleted pod once, so that
/// it answers done rather than waiting out its deadline.
#[tokio::test(start_paused = true)]
async fn stop_job_takes_the_tracking_finalizer_off_a_pod_the_job_controller_missed() {
    let patches_of_pods = |sim: &dispatch_kf_sim::Sim| {
        sim.requests().iter().filter(|r| r.verb == "patch" && r.resource == "pods").count()
    };
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    b.stop_job(&cx(), &job(1)).await.expect("StopJob with the Job controller up");
    assert_eq!(patches_of_pods(&sim), 0, "the Job controller took its own finalizers off");

    let object = b.start(&cx(), &request(&job(2), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    let pods = names(&sim, "pods");
    assert!(!pods.is_empty(), "the job runs");
    sim.set_controller_manager_down(true);
    b.stop_job(&cx(), &job(2)).await.expect("StopJob with the controller manager down");
    assert_eq!(names(&sim, "pods"), Vec::<String>::new());
    assert_eq!(names(&sim, "jobs"), Vec::<String>::new());
    assert_eq!(patches_of_pods(&sim), pods.len(), "each pod released once");
}

#[tokio::test]
async fn open_hold_or_release_on_an_orphan_is_rejected() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    sim.set_gc_lag(Duration::from_secs(120));
    b.stop(&cx(), &object).await.unwrap();
    let orphan = b
        .find(&cx(), &job(1))
        .await
        .unwrap()
        .objects
        .into_iter()
        .next()
        .expect("the copy is an orphan");
    let err = b.hold(&hold_cx(), &orphan.object, 1).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
}

#[tokio::test]
async fn stop_job_whose_call_ends_while_objects_remain_is_unreachable() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    // The pods ignore SIGTERM: they stay Terminating until their grace period passes on
    // the virtual clock, which this test never advances.
    sim.set_slow_termination(true);
    let short = CallContext::with_deadline(std::time::Instant::now() + Duration::from_millis(1500));
    let err = b.stop_job(&short, &job(1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    assert!(err.message().contains("remain"), "{}", err.message());
}

/// A deadline that passes while the hold family reads is Rejected
/// with the fixed message, as one passing before its write: nothing was written.
#[tokio::test]
async fn a_deadline_that_passes_while_the_hold_family_reads_is_rejected() {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    sim.add_fault(
        Fault::on("get", "trainjobs", FaultAction::Delay(Duration::from_secs(3)))
            .named(&object.name),
    );
    let soon = CallContext::with_deadline(std::time::Instant::now() + Duration::from_millis(500));
    let err = b.open(&soon, &object).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(
        err.message().contains("the call's deadline passed before the request was sent"),
        "{}",
        err.message()
    );
    assert_eq!(admission(&sim, &object.name), "0", "nothing was written");
}

/// The decision (ended? pods remain?) is taken again on every try,
/// from what was just read: a TrainJob that ends while Hold reads it is not held.
#[tokio::test(start_paused = true)]
async fn a_hold_decides_again_from_what_it_just_read_so_a_train_job_that_ended_meanwhile_is_not_held()
 {
    let sim = cluster().await;
    let (b, object) = started(&sim).await;
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    let pod = sim
        .list("pods", NS)
        .into_iter()
        .find(|p| p["metadata"]["labels"][keys::JOBSET_NAME] == object.name.as_str())
        .and_then(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .expect("the job runs");
    // Hold's read of the TrainJob is answered late; meanwhile a rank runs out of memory
    // and the TrainJob ends.
    sim.add_fault(
        Fault::on("get", "trainjobs", FaultAction::Delay(Duration::from_secs(2)))
            .named(&object.name),
    );
    let hold = tokio::spawn({
        let (b, object) = (b.clone(), object.clone());
        async move { b.hold(&hold_cx(), &object, 1).await }
    });
    while !sim.requests().iter().any(|r| r.resource == "trainjobs" && r.fault.is_some()) {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(sim.oom(NS, &pod));
    sim.settle();
    let err = hold.await.unwrap().expect_err("a TrainJob that has ended cannot be held");
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    let tj = sim.get("trainjobs", NS, &object.name).unwrap();
    assert!(
        tj["metadata"]["annotations"][keys::ANN_HOLD_INSTANCE].is_null(),
        "no hold was written: {tj:#}"
    );
}

/// StopJob said done while a TrainJob create that went unanswered
/// could still land. Until the in-flight mark expires it waits; a call that ends first
/// is Unreachable, saying why.
#[tokio::test]
async fn stop_job_with_a_create_in_flight_is_unreachable_until_the_mark_expires() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::ResetBeforeApply));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    let short = CallContext::with_deadline(std::time::Instant::now() + Duration::from_secs(1));
    let err = b.stop_job(&short, &job(1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    assert!(err.message().contains("may still land"), "{}", err.message());
    assert!(names(&sim, "trainingruntimes").is_empty(), "what exists was deleted meanwhile");
}

/// Once the mark expires, StopJob looks again and is done.
#[tokio::test]
async fn stop_job_with_a_create_in_flight_returns_once_the_mark_expires() {
    let sim = cluster().await;
    let short_bound = json!({"timeouts": {"request": "1s", "workload": "2s", "stopJob": "30s", "callBound": "2s"}});
    let b = backend(&sim, settings(short_bound)).await;
    sim.add_fault(Fault::on("create", "trainjobs", FaultAction::ResetBeforeApply));
    let err = b.start(&cx(), &request(&job(1), 1)).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    b.stop_job(&cx(), &job(1)).await.expect("done once nothing can land");
    let found = b.find(&cx(), &job(1)).await.unwrap();
    assert_eq!((found.objects.len(), found.in_flight), (0, None));
}
