//! The end-to-end suite: the same scenarios on the simulated cluster (the default, run
//! by `cargo xtask test`) and on a real cluster (`cargo xtask e2e --kubeconfig FILE`,
//! which sets `DISPATCH_KF_E2E_KUBECONFIG`). A scenario speaks only the Backend's public
//! API and plain Kubernetes reads; the target (`e2e/target.rs`) is the only part that
//! knows which cluster it is on. What the suite fixes and what a real cluster needs:
//! `docs/dev/e2e.md`.
//!
//! The Kueue-mode scenario needs Kueue and the readmission gate: on the sim the target
//! brings both; a real cluster must run them (`cargo xtask cluster up --kueue` and
//! `cargo xtask cluster gate`), and one that does not serve Kueue's API skips it.

#[path = "e2e/by_hand.rs"]
mod by_hand;
#[path = "e2e/suite.rs"]
mod suite;
#[path = "e2e/target.rs"]
mod target;
#[path = "e2e/told.rs"]
mod told;

use by_hand::ByHand;
use dispatch_core::{
    Answer, Backend, Capability, CauseKind, CessationSignal, JobId, Kind as Sentinel, ObjectObs,
    ObjectRef, ObjectState, OutputStream, Provenance, Source, StartRequest,
};
use dispatch_kf_model::internal::capabilities::Writability;
use dispatch_kf_model::keys;
use futures::StreamExt;
use serde_json::json;
use suite::{
    BackendOnTarget, FIRST_INSTANCE_NODE, Kind, LOST_NODE, PREEMPTION_NODE, Program, Runtime,
    SECOND_INSTANCE_NODE, job, name_an_unlisted_runtime, patient_cx, rank_output, request,
    request_on, request_with_gpus,
};
use target::Component;

impl BackendOnTarget {
    /// Waits until an opened job runs on its two pods, on admission `admission`.
    async fn until_running(&self, job: &JobId, object: &ObjectRef, admission: u64) -> ObjectObs {
        let what = format!("{} running on admission {admission}", object.name);
        let obs = self
            .until_found(job, &what, |o| {
                o.state == ObjectState::Running
                    && o.execution.is_some_and(|e| e.admission == admission)
            })
            .await;
        self.until_pods_run(job, &object.name, 2).await;
        obs
    }

    /// StopJob, then proves nothing of the job is left.
    async fn stop_leaves_nothing(&self, job: &JobId) {
        self.backend.stop_job(&patient_cx(), job).await.expect("StopJob");
        self.nothing_of(job, "after StopJob").await;
    }

    /// Proves nothing of `job` exists: Find reports no object and nothing in flight, and
    /// the cluster holds no TrainJob, runtime copy, JobSet, Job or pod labelled with it.
    async fn nothing_of(&self, job: &JobId, when: &str) {
        let found = self.backend.find(&patient_cx(), job).await.expect("Find");
        assert!(found.objects.is_empty() && found.in_flight.is_none(), "{when}: {found:#?}");
        for kind in Kind::ALL {
            let left = self.labelled(kind, job).await;
            assert!(left.is_empty(), "{when}: {kind:?} found: {left:#?}");
        }
    }

    /// Starts `job` running `program`, opens it, waits until it ends, records how
    /// (`BackendOnTarget::record`, as `scenario`), checks the cause controller told the
    /// end once with `reason`, and stops it; returns how it ended.
    async fn run_to_the_end(
        &self,
        scenario: &str,
        job: &JobId,
        program: Program,
        reason: &str,
    ) -> ObjectObs {
        let controller = self.cause_controller().await;
        let object = self.backend.start(&patient_cx(), &request(job, program)).await.unwrap();
        self.backend.open(&patient_cx(), &object).await.unwrap();
        let ended = self.until_found(job, "the job ended", |o| o.state == ObjectState::Ended).await;
        self.record(scenario, &ended).await;
        if controller.is_some() {
            self.told_once(&object, reason, "Ended").await;
        }
        self.stop_leaves_nothing(job).await;
        ended
    }
}

#[tokio::test]
async fn a_plain_job_runs_is_held_released_and_stops_leaving_nothing() {
    let job = job(1);
    let w = BackendOnTarget::for_job(&job).await;
    let object = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();
    w.until_found(&job, "the job gated", |o| o.state == ObjectState::Gated).await;
    assert_eq!(w.train_job(&object.name).await.data["spec"]["suspend"], true);

    w.backend.open(&patient_cx(), &object).await.unwrap();
    let first = w.until_running(&job, &object, 1).await;
    assert_eq!(first.object.uid, object.uid);

    w.backend.hold(&patient_cx(), &object, 1).await.unwrap();
    let held = w
        .until_found(&job, "the job held", |o| {
            o.state == ObjectState::Held && o.hold_instance == Some(1)
        })
        .await;
    assert!(!held.admin_held, "{held:#?}");
    let train_job = w.train_job(&object.name).await;
    assert_eq!(train_job.data["spec"]["suspend"], true);
    assert_eq!(train_job.metadata.annotations.unwrap()[keys::ANN_HOLD_INSTANCE], "1");
    w.until_pods_run(&job, &object.name, 0).await;

    w.backend.release(&patient_cx(), &object, 1).await.unwrap();
    let again = w.until_running(&job, &object, 2).await;
    let (before, after) = (first.execution.unwrap(), again.execution.unwrap());
    assert!(after.index > before.index, "{before:?} then {after:?}");

    w.backend.stop(&patient_cx(), &object).await.unwrap();
    w.stop_leaves_nothing(&job).await;
}

#[tokio::test]
async fn find_of_a_job_never_started_reports_nothing() {
    let w = BackendOnTarget::new().await;
    let found = w.backend.find(&patient_cx(), &job(2)).await.unwrap();
    assert!(found.objects.is_empty() && found.in_flight.is_none(), "{found:#?}");
}

#[tokio::test]
async fn capabilities_answer_for_the_suites_runtime_and_refuse_another() {
    let w = BackendOnTarget::new().await;
    let spec = request(&job(6), Program::Sleep).spec;
    let answers = w.backend.capabilities(&patient_cx(), Some(&spec)).await.unwrap();
    let answer = |c: Capability| (answers[&c].answer, answers[&c].source);
    assert_eq!(answer(Capability::Hold), (Answer::Yes, Source::Probed), "{answers:#?}");
    assert_eq!(answer(Capability::AttemptInjection).0, Answer::Yes);
    assert_eq!(answer(Capability::ProcsPerNode), (Answer::Yes, Source::Declared));
    assert_eq!(answer(Capability::OutputRead).0, Answer::Yes);

    let mut elsewhere = spec.clone();
    name_an_unlisted_runtime(&mut elsewhere);
    let err = w.backend.capabilities(&patient_cx(), Some(&elsewhere)).await.unwrap_err();
    assert_eq!(err.kind(), Sentinel::Unsupported, "{err}");
}

/// What makes a good request bad.
type Spoil = fn(&mut StartRequest);

#[tokio::test]
async fn start_refuses_a_bad_request_and_creates_nothing() {
    let job = job(3);
    let w = BackendOnTarget::for_job(&job).await;
    let refusals: [(&str, Spoil, Sentinel); 5] = [
        ("no node", |r| r.spec.nodes = 0, Sentinel::Invalid),
        (
            "a reserved environment key",
            |r| drop(r.spec.env.insert("DISPATCH_JOB_ID".into(), "mine".into())),
            Sentinel::Invalid,
        ),
        ("no image", |r| drop(r.spec.extensions.remove("dispatch/Image")), Sentinel::Invalid),
        (
            "an extension this backend does not know",
            |r| drop(r.spec.extensions.insert("acme/Turbo".into(), json!(true))),
            Sentinel::Unsupported,
        ),
        (
            "a runtime outside the settings",
            |r| name_an_unlisted_runtime(&mut r.spec),
            Sentinel::Unsupported,
        ),
    ];
    for (what, spoil, sentinel) in refusals {
        let mut bad = request(&job, Program::Sleep);
        spoil(&mut bad);
        let err = w.backend.start(&patient_cx(), &bad).await.expect_err(what);
        assert_eq!(err.kind(), sentinel, "{what}: {err}");
        w.nothing_of(&job, what).await;
    }
}

#[tokio::test]
async fn a_program_that_exits_zero_ends_succeeded() {
    let job = job(4);
    let ended = BackendOnTarget::for_job(&job)
        .await
        .run_to_the_end("exit-0", &job, Program::Succeed, "Completed")
        .await;
    assert_eq!((ended.cause.kind, ended.cause.exit_code), (CauseKind::None, None), "{ended:#?}");
}

#[tokio::test]
async fn a_program_that_exits_one_ends_failed_with_its_exit_code() {
    let job = job(5);
    let ended = BackendOnTarget::for_job(&job)
        .await
        .run_to_the_end("exit-1", &job, Program::Fail, "NonZeroExit")
        .await;
    assert_eq!(
        (ended.cause.kind, ended.cause.provenance, ended.cause.exit_code),
        (CauseKind::NonZeroExit, Some(Provenance::Application), Some(1)),
        "{ended:#?}"
    );
}

#[tokio::test]
async fn a_rank_out_of_memory_ends_the_job_out_of_memory() {
    let job = job(7);
    let ended = BackendOnTarget::for_job(&job)
        .await
        .run_to_the_end("oom", &job, Program::ExhaustMemory, "OutOfMemory")
        .await;
    assert_eq!(
        (ended.cause.kind, ended.cause.exit_code),
        (CauseKind::OutOfMemory, Some(137)),
        "{ended:#?}"
    );
}

#[tokio::test]
async fn a_missing_working_directory_ends_the_job_launch_failed_with_125() {
    let job = job(8);
    let ended = BackendOnTarget::for_job(&job)
        .await
        .run_to_the_end("prologue-125", &job, Program::MissingWorkdir, "LaunchFailed")
        .await;
    assert_eq!(
        (ended.cause.kind, ended.cause.provenance, ended.cause.exit_code),
        (CauseKind::LaunchFailed, Some(Provenance::Application), Some(125)),
        "{ended:#?}"
    );
}

#[tokio::test]
async fn a_kueue_job_is_admitted_by_the_gate_preempted_turned_away_then_readmitted() {
    let job = job(9);
    let Some(w) = BackendOnTarget::for_kueue_job(&job).await else { return };
    let controller = w.cause_controller().await;
    let object =
        w.backend.start(&patient_cx(), &request_with_gpus(&job, Program::Sleep, 8)).await.unwrap();
    w.until_found(&job, "the job gated", |o| o.state == ObjectState::Gated).await;
    w.backend.open(&patient_cx(), &object).await.unwrap();
    let first = w.until_running(&job, &object, 1).await;

    let workload = w.workload_of(&object.uid).await;
    w.target.kueue_preempt(w.kube(), &workload).await;
    let preempted = w
        .until_found(&job, "the job preempted by Kueue", |o| {
            o.cause.kind == CauseKind::Preempted && o.state != ObjectState::Running
        })
        .await;
    assert_eq!(preempted.cause.provenance, Some(Provenance::Scheduler), "{preempted:#?}");
    w.record("kueue-preempted", &preempted).await;
    if controller.is_some() {
        w.told_once(&object, "Preempted", "Evicted").await;
    }

    w.target.end_preemption(w.kube(), &workload).await;
    let turned_away = w
        .until_found(&job, "the gate turning the readmission away", |o| {
            o.cause.detail.contains("waiting for Release")
        })
        .await;
    assert_ne!(turned_away.state, ObjectState::Running, "{turned_away:#?}");
    w.record("kueue-turned-away", &turned_away).await;

    w.backend.hold(&patient_cx(), &object, 1).await.unwrap();
    w.until_found(&job, "the job held", |o| o.state == ObjectState::Held).await;
    w.backend.release(&patient_cx(), &object, 1).await.unwrap();
    let again = w.until_running(&job, &object, 2).await;
    let (before, after) = (first.execution.unwrap(), again.execution.unwrap());
    assert!(after.index > before.index, "{before:?} then {after:?}");
    w.record("kueue-readmitted", &again).await;
    if controller.is_some() {
        // The hold deactivated the Workload, an eviction an actor made: not told.
        let told = w.told(&object).await;
        let said: Vec<_> = told.iter().map(|e| (&e["reason"], &e["action"], &e["note"])).collect();
        assert_eq!(told.len(), 1, "{said:#?}");
    }
    w.stop_leaves_nothing(&job).await;
}

#[tokio::test]
async fn a_kueue_job_without_gpus_is_admitted_by_the_gate_and_its_pods_carry_the_count() {
    let job = job(14);
    let Some(w) = BackendOnTarget::for_kueue_job(&job).await else { return };
    // No GPU: on the setup's ClusterQueue, which covers `pods`, Kueue still assigns a
    // flavor, so dispatch's admission check applies.
    let object = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();
    w.until_found(&job, "the job gated", |o| o.state == ObjectState::Gated).await;
    w.backend.open(&patient_cx(), &object).await.unwrap();
    let first = w.until_running(&job, &object, 1).await;
    assert!(!first.cause.detail.contains("admitted without"), "{first:#?}");
    assert_eq!(w.pod_admissions(&job, &object.name).await, [Some("1".into()), Some("1".into())]);

    w.backend.hold(&patient_cx(), &object, 1).await.unwrap();
    w.until_found(&job, "the job held", |o| o.state == ObjectState::Held).await;
    w.until_pods_run(&job, &object.name, 0).await;
    w.backend.release(&patient_cx(), &object, 1).await.unwrap();
    w.until_running(&job, &object, 2).await;
    assert_eq!(w.pod_admissions(&job, &object.name).await, [Some("2".into()), Some("2".into())]);
    w.stop_leaves_nothing(&job).await;
}

#[tokio::test]
async fn a_kueue_job_its_queue_would_not_check_is_refused_at_start_or_reported_running_unguarded() {
    const UNCHECKED: &str = "dispatch-e2e-gpu-only";
    let job = job(15);
    let Some(w) = BackendOnTarget::for_kueue_job(&job).await else { return };
    w.apply_queue(UNCHECKED, &["nvidia.com/gpu"]).await;
    let backend = w.backend_on(UNCHECKED).await;
    backend.stop_job(&patient_cx(), &job).await.expect("StopJob of an earlier run's leftovers");

    // A job without GPUs on a queue that covers only GPUs would get no flavor, and so
    // no admission check: Start refuses it and leaves nothing.
    let refused = backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap_err();
    assert_eq!(refused.kind(), Sentinel::Rejected, "{refused}");
    assert!(refused.message().contains("requests none of the resources"), "{refused}");
    assert!(w.labelled(Kind::TrainJob, &job).await.is_empty(), "the refused TrainJob remains");
    backend.stop_job(&patient_cx(), &job).await.expect("StopJob");
    w.nothing_of(&job, "after the refused Start").await;

    // The queue covers `pods` at Start, and no longer at Open (an administrator's
    // edit). Kueue v0.18 and later admit the job with no flavor and so with no check,
    // and Find says so while it runs; Kueue v0.17 runs a check that covers all flavors
    // on every Workload, so there the gate admits it as A=1. Either way the job never
    // runs on an unknown execution without saying why.
    w.apply_queue(UNCHECKED, &["nvidia.com/gpu", "pods"]).await;
    let object = backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();
    w.apply_queue(UNCHECKED, &["nvidia.com/gpu"]).await;
    backend.open(&patient_cx(), &object).await.unwrap();
    let unguarded = w
        .target
        .until("the job running, on A=1 or reported unguarded", async || {
            let found = backend.find(&patient_cx(), &job).await.map_err(|e| e.to_string())?;
            match found.objects.as_slice() {
                [o] if o.state == ObjectState::Running
                    && (o.execution.is_some_and(|e| e.admission == 1)
                        || o.cause
                            .detail
                            .contains("admitted without dispatch's admission check")) =>
                {
                    Ok(o.clone())
                }
                objects => Err(format!("{objects:#?}")),
            }
        })
        .await;
    if unguarded.execution.is_none() {
        assert!(unguarded.cause.detail.contains("admitted without"), "{unguarded:#?}");
    }
    w.record("kueue-unguarded", &unguarded).await;
    backend.stop_job(&patient_cx(), &job).await.expect("StopJob");
    w.nothing_of(&job, "after StopJob").await;
}

#[tokio::test]
async fn rank_zeros_output_reads_back_through_output() {
    let job = job(10);
    let w = BackendOnTarget::for_job(&job).await;
    let object = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();
    w.backend.open(&patient_cx(), &object).await.unwrap();
    w.until_running(&job, &object, 1).await;
    let printed = w
        .target
        .until("rank 0's output", async || {
            let stream =
                w.backend.output(&patient_cx(), &job, 1, OutputStream::Stdout, false).await;
            let chunks: Vec<_> = stream.map_err(|e| e.to_string())?.collect().await;
            let bytes: Vec<u8> = chunks.into_iter().flatten().flatten().collect();
            let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
            if text.is_empty() { Err("nothing yet".into()) } else { Ok(text) }
        })
        .await;
    assert_eq!(printed, rank_output());
    w.stop_leaves_nothing(&job).await;
}

#[tokio::test]
async fn a_jobset_restart_is_a_new_execution_of_the_same_admission() {
    let job = job(11);
    let w = BackendOnTarget::for_job(&job).await;
    let request = request_on(&job, Program::FailFirstAttempt, Runtime::Restarting);
    let object = w.backend.start(&patient_cx(), &request).await.unwrap();
    w.backend.open(&patient_cx(), &object).await.unwrap();
    let restarted = w
        .until_found(&job, "the JobSet restarted and running", |o| {
            o.state == ObjectState::Running && o.execution.is_some_and(|e| e.restart_attempt == 1)
        })
        .await;
    let execution = restarted.execution.unwrap();
    assert_eq!((execution.admission, execution.restart_attempt, execution.index), (1, 1, 2));
    w.until_pods_run(&job, &object.name, 2).await;
    w.record("jobset-restart", &restarted).await;
    w.stop_leaves_nothing(&job).await;
}

#[tokio::test]
async fn the_scheduler_preempting_a_rank_ends_the_job_preempted() {
    let job = job(12);
    let w = BackendOnTarget::for_job(&job).await;
    let controller = w.cause_controller().await;
    w.own_node(PREEMPTION_NODE, 8).await;
    let watched = w.watch(&job);
    let mut request = request_on(&job, Program::Sleep, Runtime::OnOwnNode(PREEMPTION_NODE));
    request.spec.gpus_per_node = 4;
    let object = w.backend.start(&patient_cx(), &request).await.unwrap();
    w.backend.open(&patient_cx(), &object).await.unwrap();
    w.until_running(&job, &object, 1).await;

    let ranks = w.ranks(&job, &object.name).await;
    w.target.scheduler_preempt(w.kube(), &ranks[0].0, PREEMPTION_NODE, 4).await;
    let ended = w
        .until_watched(&watched, "the job ended preempted", |o| o.state == ObjectState::Ended)
        .await;
    assert_eq!(
        (ended.cause.kind, ended.cause.provenance),
        (CauseKind::Preempted, Some(Provenance::Scheduler)),
        "{ended:#?}"
    );
    w.record("scheduler-preempted", &ended).await;
    if controller.is_some() {
        w.told_once(&object, "Preempted", "Ended").await;
    }
    w.target.end_scheduler_preemption(w.kube()).await;
    w.stop_leaves_nothing(&job).await;
    w.target.remove_node(w.kube(), PREEMPTION_NODE).await;
}

#[tokio::test]
async fn a_lost_node_is_node_lost_and_ceased_only_once_out_of_service() {
    let job = job(13);
    let w = BackendOnTarget::for_job(&job).await;
    let controller = w.cause_controller().await;
    w.own_node(LOST_NODE, 8).await;
    let watched = w.watch(&job);
    let request = request_on(&job, Program::Sleep, Runtime::OnOwnNode(LOST_NODE));
    let object = w.backend.start(&patient_cx(), &request).await.unwrap();
    w.backend.open(&patient_cx(), &object).await.unwrap();
    w.until_running(&job, &object, 1).await;

    w.target.lose_node(w.kube(), LOST_NODE).await;
    let lost = w
        .until_watched(&watched, "the job's node lost", |o| o.cause.kind == CauseKind::NodeLost)
        .await;
    assert_ne!(lost.state, ObjectState::Ended, "{lost:#?}");
    let cessation = w.backend.ceased(&patient_cx(), &object).await.unwrap();
    assert!(!cessation.ceased, "an unreachable node may still run its ranks: {cessation:#?}");
    w.until_watched(&watched, "the ranks evicted", |o| o.cause.detail.contains("terminating"))
        .await;

    w.target.take_out_of_service(w.kube(), LOST_NODE).await;
    let ended = w.until_watched(&watched, "the job ended", |o| o.state == ObjectState::Ended).await;
    assert_eq!(ended.cause.kind, CauseKind::NodeLost, "{ended:#?}");
    let cessation = w.backend.ceased(&patient_cx(), &object).await.unwrap();
    let nodes: Vec<&str> = cessation.nodes.iter().map(|n| n.node.as_str()).collect();
    assert!(cessation.ceased && nodes == [LOST_NODE], "{cessation:#?}");
    w.record("node-lost", &ended).await;
    if controller.is_some() {
        w.told_once(&object, "NodeLost", "Ended").await;
    }
    w.stop_leaves_nothing(&job).await;
    w.target.remove_node(w.kube(), LOST_NODE).await;
}

/// A failed job never runs again (`docs/execution-identity.md#an-ended-execution-stays-ended`):
/// the runtime copy goes without the JobSet TTL its source sets, and once the job has
/// failed the adapter closes its gate and records how it ended, so the JobSet the Trainer
/// makes again after someone deletes the failed one runs nothing, and Find still says
/// how the execution ended.
#[tokio::test]
async fn a_failed_job_whose_jobset_is_deleted_runs_no_more_and_stays_ended() {
    let job = job(16);
    let w = BackendOnTarget::for_job(&job).await;
    w.failed_job_whose_jobset_is_deleted(&job).await;
}

/// The same in Kueue mode, where the Workload is finished and Kueue does not suspend
/// the TrainJob again when the Trainer clears its `Failed`.
#[tokio::test]
async fn a_failed_kueue_job_whose_jobset_is_deleted_runs_no_more_and_stays_ended() {
    let job = job(17);
    let Some(w) = BackendOnTarget::for_kueue_job(&job).await else { return };
    w.failed_job_whose_jobset_is_deleted(&job).await;
}

impl BackendOnTarget {
    /// Runs `job` to failure on [`Runtime::CleaningUp`], deletes its failed JobSet by
    /// hand, and proves nothing of it runs again and Find still says how it ended.
    async fn failed_job_whose_jobset_is_deleted(&self, job: &JobId) {
        use kube::api::{DeleteParams, DynamicObject, ListParams};
        let w = self;
        let watched = w.watch(job);
        let request = request_on(job, Program::Fail, Runtime::CleaningUp);
        let object = w.backend.start(&patient_cx(), &request).await.unwrap();
        let copy = w.objects(Kind::TrainingRuntime).get(&object.name).await.expect("the copy");
        assert_eq!(copy.data.pointer("/spec/template/spec/ttlSecondsAfterFinished"), None);
        w.backend.open(&patient_cx(), &object).await.unwrap();
        let ended =
            w.until_watched(&watched, "the job ended", |o| o.state == ObjectState::Ended).await;
        assert_eq!((ended.cause.kind, ended.cause.exit_code), (CauseKind::NonZeroExit, Some(1)));
        let train_job = w.train_job(&object.name).await;
        assert_eq!(train_job.data["spec"]["suspend"], true, "the gate closed again at the end");
        assert!(train_job.metadata.annotations.unwrap().contains_key(keys::ANN_ENDED));

        let old = w.objects(Kind::JobSet).get(&object.name).await.expect("the failed JobSet");
        assert_eq!(old.data.pointer("/spec/ttlSecondsAfterFinished"), None);
        let old_uid = old.metadata.uid.unwrap();
        w.objects(Kind::JobSet)
            .delete(&object.name, &DeleteParams::background())
            .await
            .expect("delete the failed JobSet by hand");
        // The Trainer makes the JobSet again, suspended, and JobSet makes its Jobs
        // suspended: nothing of it runs.
        let of_jobset =
            ListParams::default().labels(&format!("{}={}", keys::JOBSET_NAME, object.name));
        w.target
            .until("the JobSet made again, its Jobs suspended", async || {
                let again =
                    w.objects(Kind::JobSet).get(&object.name).await.map_err(|e| e.to_string())?;
                if again.metadata.uid.as_deref() == Some(old_uid.as_str()) {
                    return Err("the old JobSet is still there".into());
                }
                let jobs =
                    w.objects(Kind::Job).list(&of_jobset).await.map_err(|e| e.to_string())?.items;
                let suspended = |j: &DynamicObject| j.data["spec"]["suspend"] == true;
                match (again.data["spec"]["suspend"] == true, jobs.len()) {
                    (true, 1..) if jobs.iter().all(suspended) => Ok(()),
                    _ => Err(format!("JobSet {:?}, Jobs {:?}", again.data["spec"], jobs.len())),
                }
            })
            .await;
        w.until_pods_run(job, &object.name, 0).await;
        let after = w
            .until_found(job, "the job still ended, as recorded", |o| {
                o.state == ObjectState::Ended && o.cause.detail.contains("as dispatch recorded it")
            })
            .await;
        assert_eq!(
            (after.cause.kind, after.cause.exit_code, after.execution),
            (ended.cause.kind, ended.cause.exit_code, ended.execution),
            "{after:#?}"
        );
        w.stop_leaves_nothing(job).await;
    }
}

/// Hold, then Release at once, again and again: the previous execution may not have
/// gone yet (its pods, or the JobSet's count of active Jobs, which the Trainer's webhook
/// reads from its cache and which lags the pods), and the only refusal Release gives
/// meanwhile is pods-remain (*unreachable*, exit 8), never *unauthorized* or
/// *rejected* (`docs/errors.md#webhook-denials`).
#[tokio::test]
async fn holding_and_releasing_at_once_again_and_again_is_refused_only_while_pods_remain() {
    let job = job(18);
    let w = BackendOnTarget::for_job(&job).await;
    let object = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();
    w.hold_and_release_at_once_three_times(&job, &object).await;
}

/// The same in Kueue mode: the readmission gate would admit the Workload again at once
/// and the resumed Jobs would make their pods beside the held ones still terminating,
/// so Release answers pods-remain there too until they are gone (found by the chaos
/// run, docs/dev/chaos.md).
#[tokio::test]
async fn in_kueue_mode_holding_and_releasing_at_once_is_refused_only_while_pods_remain() {
    let job = job(26);
    let Some(w) = BackendOnTarget::for_kueue_job(&job).await else { return };
    let request = request_with_gpus(&job, Program::Sleep, 8);
    let object = w.backend.start(&patient_cx(), &request).await.unwrap();
    w.hold_and_release_at_once_three_times(&job, &object).await;
}

impl BackendOnTarget {
    /// Opens the started `object` and, three times, Hold then Release at once, retried
    /// while refused; each time it runs again on the next admission, and no pod of the
    /// held execution runs beside the new one. Then Stop and StopJob.
    async fn hold_and_release_at_once_three_times(&self, job: &JobId, object: &ObjectRef) {
        self.backend.open(&patient_cx(), object).await.unwrap();
        self.until_running(job, object, 1).await;
        let mut waits = 0;
        for instance in 1..=3u64 {
            self.backend.hold(&patient_cx(), object, instance).await.unwrap();
            self.target
                .until(&format!("release {instance} taken"), async || {
                    match self.backend.release(&patient_cx(), object, instance).await {
                        Ok(()) => Ok(()),
                        Err(e) if e.is_pods_remain() && e.is(Sentinel::Unreachable) => {
                            waits += 1;
                            Err(e.to_string())
                        }
                        Err(e) => panic!("release {instance} refused otherwise: {e:?}"),
                    }
                })
                .await;
            let admissions = self.pod_admissions(job, &object.name).await;
            let held = instance.to_string();
            assert!(
                !admissions.iter().any(|a| a.as_deref() == Some(held.as_str())),
                "a pod of the held admission {held} is there once Release is taken: {admissions:?}"
            );
            self.until_running(job, object, instance + 1).await;
        }
        eprintln!("{}: Release answered pods-remain {waits} times", self.target.describe());
        self.backend.stop(&patient_cx(), object).await.unwrap();
        self.stop_leaves_nothing(job).await;
    }
}

/// While the TrainJobs' admission webhook cannot be called (its server down), Start,
/// Open and Hold answer *unreachable*: admission runs before anything is stored, so
/// nothing was (`docs/errors.md#how-the-client-classifies-a-failed-request`), and no
/// call is left in flight; once it can be called again, each succeeds.
#[tokio::test]
async fn start_open_and_hold_while_a_webhook_cannot_be_called_are_unreachable_and_make_nothing() {
    let job = job(19);
    let w = BackendOnTarget::for_job(&job).await;
    let suspended = async |name: &str| w.train_job(name).await.data["spec"]["suspend"] == true;

    w.target.break_webhook(w.kube(), job.as_str()).await;
    let err = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap_err();
    assert!(err.is(Sentinel::Unreachable), "{err:?}");
    w.nothing_of(&job, "after the Start the webhook refused").await;
    w.target.mend_webhook(w.kube(), job.as_str()).await;
    let object = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();

    w.target.break_webhook(w.kube(), job.as_str()).await;
    let err = w.backend.open(&patient_cx(), &object).await.unwrap_err();
    assert!(err.is(Sentinel::Unreachable), "{err:?}");
    assert!(suspended(&object.name).await, "the gate stays closed");
    w.target.mend_webhook(w.kube(), job.as_str()).await;
    w.backend.open(&patient_cx(), &object).await.unwrap();
    w.until_running(&job, &object, 1).await;

    w.target.break_webhook(w.kube(), job.as_str()).await;
    let err = w.backend.hold(&patient_cx(), &object, 1).await.unwrap_err();
    assert!(err.is(Sentinel::Unreachable), "{err:?}");
    assert!(!suspended(&object.name).await, "no hold was written");
    w.target.mend_webhook(w.kube(), job.as_str()).await;
    w.backend.hold(&patient_cx(), &object, 1).await.unwrap();
    w.stop_leaves_nothing(&job).await;
}

/// Two instances of one name are not mixed (`docs/classification.md`, the instance
/// rule): the first restarts once on its node with a Watch open, which captures its
/// pods; Stop, StopJob, and that node is deleted; the same submission starts again on
/// another node. Ceased of the second answers for its own pods, not the first's
/// restarted execution (whose R is higher).
#[tokio::test]
async fn ceased_of_a_name_started_again_answers_for_its_own_pods_not_an_earlier_instances() {
    let job = job(20);
    let w = BackendOnTarget::for_job(&job).await;
    w.own_node(FIRST_INSTANCE_NODE, 8).await;
    w.own_node(SECOND_INSTANCE_NODE, 8).await;
    let watched = w.watch(&job);
    let restarting = Runtime::RestartingOnOwnNode(FIRST_INSTANCE_NODE);
    let request_first = request_on(&job, Program::FailFirstAttempt, restarting);
    let first = w.backend.start(&patient_cx(), &request_first).await.unwrap();
    w.backend.open(&patient_cx(), &first).await.unwrap();
    w.until_watched(&watched, "the first instance restarted and running", |o| {
        o.state == ObjectState::Running && o.execution.is_some_and(|e| e.restart_attempt == 1)
    })
    .await;
    w.until_pods_run(&job, &first.name, 2).await;
    w.backend.stop(&patient_cx(), &first).await.unwrap();
    w.stop_leaves_nothing(&job).await;
    w.target.remove_node(w.kube(), FIRST_INSTANCE_NODE).await;

    let on_second = request_on(&job, Program::Sleep, Runtime::OnOwnNode(SECOND_INSTANCE_NODE));
    let second = w.backend.start(&patient_cx(), &on_second).await.unwrap();
    assert_eq!(second.name, first.name);
    assert_ne!(second.uid, first.uid);
    w.backend.open(&patient_cx(), &second).await.unwrap();
    let running = w.until_running(&job, &second, 1).await;
    assert_eq!(running.execution.map(|e| e.restart_attempt), Some(0), "{running:#?}");
    let cessation = w.backend.ceased(&patient_cx(), &second).await.unwrap();
    let nodes: Vec<&str> = cessation.nodes.iter().map(|n| n.node.as_str()).collect();
    assert!(!cessation.ceased && nodes == [SECOND_INSTANCE_NODE], "{cessation:#?}");
    w.stop_leaves_nothing(&job).await;
    w.target.remove_node(w.kube(), SECOND_INSTANCE_NODE).await;
}

/// A runtime whose JobSet restarts only the Job that failed (`failurePolicy.rules[].
/// action: RestartJob`; the control plane's JobSet runs with its `RestartJob` feature
/// gate on, so it would do so) would run ranks again under the restart attempt they
/// already carry, two executions with one identity: Start refuses it, *unsupported*,
/// naming the field (runtime rule 8, `docs/runtime-requirements.md`), and nothing is
/// made. A Trainer built against a JobSet without the action (v2.2) refuses the
/// runtime itself, which is as good.
#[tokio::test]
async fn a_runtime_whose_jobset_restarts_one_job_is_refused_and_nothing_runs() {
    let job = job(21);
    let w = BackendOnTarget::for_job(&job).await;
    if let Err(refused) = w.bring(Runtime::RestartsOneJob).await {
        assert!(refused.contains("RestartJob"), "{refused}");
        eprintln!("{}: the apiserver refuses the runtime: {refused}", w.target.describe());
        return;
    }
    let request = request_on(&job, Program::FailFirstAttempt, Runtime::RestartsOneJob);
    let err = w.backend.start(&patient_cx(), &request).await.unwrap_err();
    assert!(err.is(Sentinel::Unsupported), "{err:?}");
    assert!(err.message().contains("failurePolicy.rules[0].action"), "{}", err.message());
    w.nothing_of(&job, "after the refused Start").await;
}

/// A TrainJob a Kubeflow user made, not dispatch, is explained like dispatch's own:
/// running, flagged foreign, and among the namespace's; once deleted it is not found.
#[tokio::test]
async fn a_train_job_made_by_hand_is_explained_running_and_foreign_then_told_out_of_memory() {
    use dispatch_kf::{Explain, ModeChoice, explain};
    use dispatch_kf_client::Scope;
    const NAME: &str = "dispatch-e2e-by-hand";
    let w = BackendOnTarget::new().await;
    let controller = w.cause_controller().await;
    let counted_before = match &controller {
        Some(c) => c.ended_here(&w.target).await,
        None => None,
    };
    let by_hand = ByHand::make(&w, NAME, Runtime::Plain, Program::Sleep, (1, 0)).await;
    let running = by_hand
        .until("the TrainJob made by hand running", |o| o.state == ObjectState::Running)
        .await;
    assert!(running.foreign, "{running:#?}");
    assert!(running.cause.detail.contains(&format!("name {NAME} is not one dispatch makes")));
    let namespace = Explain {
        scope: Scope::Namespace(suite::NAMESPACE),
        mode: ModeChoice::Auto,
        backend: "kubeflow-e2e",
    };
    let all = explain(by_hand.cluster(), &patient_cx(), namespace).await.unwrap();
    assert!(all.iter().any(|o| o.object == running.object), "{all:#?}");

    // Its rank runs out of memory: explained so, and told so by the cause controller.
    let (rank, _) = by_hand.until_pods_run(1).await.into_iter().next().expect("its pod");
    w.target.oom(w.kube(), &rank).await;
    let ended =
        by_hand.until("the TrainJob made by hand ended", |o| o.state == ObjectState::Ended).await;
    assert_eq!(ended.cause.kind, CauseKind::OutOfMemory, "{ended:#?}");
    if let Some(controller) = &controller {
        // The Event says why it stopped, not whose it is: none of explain's notes.
        let event = w.told_once(&running.object, "OutOfMemory", "Ended").await;
        let note = event["note"].as_str().unwrap_or_default();
        assert!(note.contains("OOMKilled") && !note.contains("dispatch makes"), "{event:#}");
        controller.until_counted(&w.target, counted_before.map(|c| c + 1.0)).await;
    }
    by_hand.delete().await;
}

/// TrainJobs made by hand end as dispatch's do, and each end is told once with its
/// reason, and counted once: a rank that exits 1, a rank the scheduler preempts for a pod of higher
/// priority, and a node lost under a rank (`docs/events.md`). `explain`, a read after the
/// end, names the cause where the pods are still there (the exit); once the preempted
/// or lost ranks' pods are gone only a watcher that saw them knows, as the cause
/// controller and a Watch do.
#[tokio::test]
async fn train_jobs_made_by_hand_that_exit_one_are_preempted_or_lose_their_node_are_told_why() {
    let w = BackendOnTarget::new().await;
    let Some(controller) = w.cause_controller().await else {
        println!("skipped: no cause controller runs on this cluster");
        return;
    };
    let ended = |o: &ObjectObs| o.state == ObjectState::Ended;
    let counted = controller.ended_here(&w.target).await;

    let exits =
        ByHand::make(&w, "dispatch-e2e-by-hand-exit", Runtime::Plain, Program::Fail, (1, 0)).await;
    let obs = exits.until("exit 1 ended", ended).await;
    assert_eq!(obs.cause.kind, CauseKind::NonZeroExit, "{obs:#?}");
    w.told_once(&obs.object, "NonZeroExit", "Ended").await;
    controller.until_counted(&w.target, counted.map(|c| c + 1.0)).await;
    exits.delete().await;

    // Two ranks of four GPUs fill the node; the preemptor needs four.
    w.own_node(PREEMPTION_NODE, 8).await;
    let runtime = Runtime::OnOwnNode(PREEMPTION_NODE);
    let preempted =
        ByHand::make(&w, "dispatch-e2e-by-hand-preempted", runtime, Program::Sleep, (2, 4)).await;
    preempted.until("both ranks running", |o| o.state == ObjectState::Running).await;
    let (victim, _) = preempted.until_pods_run(2).await.into_iter().next().expect("a rank");
    w.target.scheduler_preempt(w.kube(), &victim, PREEMPTION_NODE, 4).await;
    let obs = preempted.until("the preempted job ended", ended).await;
    w.told_once(&obs.object, "Preempted", "Ended").await;
    controller.until_counted(&w.target, counted.map(|c| c + 2.0)).await;
    w.target.end_scheduler_preemption(w.kube()).await;
    preempted.delete().await;
    w.target.remove_node(w.kube(), PREEMPTION_NODE).await;

    w.own_node(LOST_NODE, 8).await;
    let runtime = Runtime::OnOwnNode(LOST_NODE);
    let lost = ByHand::make(&w, "dispatch-e2e-by-hand-lost", runtime, Program::Sleep, (1, 0)).await;
    lost.until("its rank running", |o| o.state == ObjectState::Running).await;
    lost.until_pods_run(1).await;
    w.target.lose_node(w.kube(), LOST_NODE).await;
    lost.until("its rank evicted", |o| o.cause.detail.contains("terminating")).await;
    w.target.take_out_of_service(w.kube(), LOST_NODE).await;
    let obs = lost.until("the job on the lost node ended", ended).await;
    w.told_once(&obs.object, "NodeLost", "Ended").await;
    controller.until_counted(&w.target, counted.map(|c| c + 3.0)).await;
    lost.delete().await;
    w.target.remove_node(w.kube(), LOST_NODE).await;
}

/// A TrainJob made by hand in the suite's LocalQueue, admitted through the readmission
/// gate as any Workload's first admission is, then preempted by Kueue for a Workload of
/// higher priority: told once as an eviction (`Preempted`, action `Evicted`) and
/// counted once. It is not readmitted (the gate waits for a Release, which only dispatch
/// sends), so it is deleted.
#[tokio::test]
async fn a_train_job_made_by_hand_preempted_by_kueue_is_told_once_as_an_eviction() {
    let Some(w) = BackendOnTarget::in_mode(suite::Mode::Kueue).await else { return };
    let Some(controller) = w.cause_controller().await else {
        println!("skipped: no cause controller runs on this cluster");
        return;
    };
    let counted = controller.ended_here(&w.target).await;
    let name = "dispatch-e2e-by-hand-queued";
    let shape = (1, 8);
    let queued =
        ByHand::make_in(&w, name, Runtime::Plain, Program::Sleep, shape, Some(suite::QUEUE)).await;
    let running = queued.until("admitted and running", |o| o.state == ObjectState::Running).await;
    let workload = w.workload_of(&running.object.uid).await;
    w.target.kueue_preempt(w.kube(), &workload).await;
    w.told_once(&running.object, "Preempted", "Evicted").await;
    controller.until_counted(&w.target, counted.map(|c| c + 1.0)).await;
    w.target.end_preemption(w.kube(), &workload).await;
    queued.delete().await;
}

/// The cause controller tells each end once: a restart of it tells nothing again, and
/// it tells what ends once it is back (`docs/events.md#once-per-moment-the-ledger`).
#[tokio::test]
async fn the_cause_controller_tells_nothing_twice_across_its_restart() {
    let (first, second) = (job(30), job(31));
    let w = BackendOnTarget::for_job(&first).await;
    if !w.target.controls_processes() {
        println!("skipped: restarting the cause controller needs {}", target::CONTROL_VAR);
        return;
    }
    let Some(mut controller) = w.cause_controller().await else { return };
    w.backend.stop_job(&patient_cx(), &second).await.expect("StopJob of leftovers");
    let failed = w.backend.start(&patient_cx(), &request(&first, Program::Fail)).await.unwrap();
    w.backend.open(&patient_cx(), &failed).await.unwrap();
    w.until_found(&first, "the first job ended", |o| o.state == ObjectState::Ended).await;
    w.told_once(&failed, "NonZeroExit", "Ended").await;

    controller.restart(&w).await;
    let done = w.backend.start(&patient_cx(), &request(&second, Program::Succeed)).await.unwrap();
    w.backend.open(&patient_cx(), &done).await.unwrap();
    w.until_found(&second, "the second job ended", |o| o.state == ObjectState::Ended).await;
    // Told after the restart, so the restarted controller has read the first end too.
    w.told_once(&done, "Completed", "Ended").await;
    assert_eq!(w.told(&failed).await.len(), 1, "the first end told again after the restart");
    // The restarted controller counts from nothing: the second end, not the first again.
    controller.until_counted(&w.target, Some(1.0)).await;
    w.stop_leaves_nothing(&first).await;
    w.stop_leaves_nothing(&second).await;
}

/// Start while a process the call goes through is down and comes back: the Trainer,
/// whose webhook cannot be called and then reads the runtime copy from a cache that
/// lags; the apiserver, which refuses connections and may cut a write. Each refusal
/// says "try again" (*unreachable*, or *outcome-unknown* for a write the apiserver's
/// going may have cut), never *unauthorized* or *rejected*
/// (`docs/errors.md#webhook-denials`); a supervisor that retries gets its job, once.
/// After an *outcome-unknown* StopJob answers *unreachable* until the call bound has
/// passed, since the cut write could still land; the supervisor calls it again.
#[tokio::test]
async fn start_while_the_trainer_or_the_apiserver_restarts_only_ever_says_try_again() {
    let w = BackendOnTarget::new().await;
    if !w.target.controls_processes() {
        eprintln!("skipped: {} cannot restart its processes", w.target.describe());
        return;
    }
    for (job, component) in [(job(22), Component::Trainer), (job(23), Component::Apiserver)] {
        let may_have_cut = component == Component::Apiserver;
        let try_again = |e: &dispatch_core::Error| {
            e.is(Sentinel::Unreachable) || may_have_cut && e.is(Sentinel::OutcomeUnknown)
        };
        w.backend.stop_job(&patient_cx(), &job).await.expect("StopJob of leftovers");
        w.target.kill(w.kube(), component).await;
        let down = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await;
        let down = down.expect_err("Start with {component:?} down");
        assert!(down.is(Sentinel::Unreachable), "Start with {component:?} down: {down:?}");
        if component == Component::Trainer {
            // The apiserver that refused the connection can only be read once it is back.
            w.nothing_of(&job, "after Start with the Trainer down").await;
            // A Backend made now (as each command makes one) meets the webhook in its
            // preflight probe: Factory decides nothing rather than observe only.
            let made = w.try_another_backend().await.err().expect("Factory with the Trainer down");
            assert!(made.is(Sentinel::Unreachable), "Factory with the Trainer down: {made:?}");
            assert!(made.message().contains("no definite answer"), "{made:?}");
        }

        let mut refusals = Vec::new();
        let what = format!("Start through {component:?}'s restart");
        let starting = w.target.until(&what, async || {
            match w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await {
                Ok(object) => Ok(object),
                Err(e) if try_again(&e) => {
                    refusals.push(e.kind());
                    Err(e.to_string())
                }
                Err(e) => panic!("Start through {component:?}'s restart refused for good: {e:?}"),
            }
        });
        let (object, ()) = tokio::join!(starting, w.target.restart(component));
        eprintln!("{}: Start through {component:?}'s restart: {refusals:?}", w.target.describe());
        w.target
            .until("a Backend made now writes", async || {
                let made = w.try_another_backend().await.map_err(|e| e.to_string())?;
                match made.preflight().access {
                    Writability::Writable => Ok(()),
                    ref other => Err(format!("{other:?}")),
                }
            })
            .await;
        let train_jobs = w.labelled(Kind::TrainJob, &job).await;
        assert_eq!(train_jobs.len(), 1, "one TrainJob: {train_jobs:#?}");
        w.backend.open(&patient_cx(), &object).await.unwrap();
        w.until_running(&job, &object, 1).await;
        w.target
            .until("StopJob once no cut write can land", async || {
                match w.backend.stop_job(&patient_cx(), &job).await {
                    Err(e) if may_have_cut && e.is(Sentinel::Unreachable) => Err(e.to_string()),
                    done => {
                        done.expect("StopJob");
                        Ok(())
                    }
                }
            })
            .await;
        w.nothing_of(&job, "after StopJob").await;
    }
}

/// The readmission gate killed: once its Lease has run out, a Backend made then
/// (as each command makes one) is observe-only and refuses writes *read-only*; once a
/// gate leads again, the next Backend made writes at once. Nothing of the outage is
/// kept past it (`docs/cli.md`).
#[tokio::test]
async fn writes_refused_while_the_gate_is_down_pass_once_a_gate_leads_again() {
    let job = job(24);
    let Some(w) = BackendOnTarget::for_kueue_job(&job).await else { return };
    if !w.target.controls_processes() {
        eprintln!("skipped: {} cannot restart its processes", w.target.describe());
        return;
    }
    let object =
        w.backend.start(&patient_cx(), &request_with_gpus(&job, Program::Sleep, 8)).await.unwrap();
    w.until_found(&job, "the job gated", |o| o.state == ObjectState::Gated).await;

    w.target.kill(w.kube(), Component::Gate).await;
    let killed = jiff::Timestamp::now();
    let unproven = w
        .target
        .until("a Backend made now finds the gate unproven", async || {
            let backend = w.another_backend().await;
            match backend.preflight().gate_proof_expires {
                None => Ok(backend),
                Some(end) => Err(format!("the gate is proven until {end}")),
            }
        })
        .await;
    let refused = unproven.open(&patient_cx(), &object).await.unwrap_err();
    assert!(refused.is(Sentinel::ReadOnly), "{refused:?}");
    assert!(refused.message().contains("Lease"), "{refused:?}");

    w.target.restart(Component::Gate).await;
    w.target
        .until("the gate leads again", async || {
            let renewed = w.gate_lease_renewed().await;
            if renewed.is_some_and(|t| t > killed) { Ok(()) } else { Err(format!("{renewed:?}")) }
        })
        .await;
    let backend = w.another_backend().await;
    backend.open(&patient_cx(), &object).await.expect("a write once a gate leads again");
    w.until_running(&job, &object, 1).await;
    w.stop_leaves_nothing(&job).await;
}

/// The first Ended a Watch sends is the right one while its pods watch lags: the
/// Watch's every request goes through a proxy, which stalls the connection of its
/// pods watch (as a stuck connection or a lagging watch cache would); a rank runs out
/// of memory and its pod is deleted at once, and the JobSet's teardown deletes the
/// other. The Watch's reads list the pods fresh and find them gone while its pods
/// watch still holds them: it sends no Ended until those deletions arrive, and then
/// says out-of-memory (`docs/backend.md`, the Watch's held-back Ended).
#[tokio::test]
async fn the_first_ended_a_watch_sends_waits_for_deletions_its_pods_watch_has_not_seen() {
    let job = job(25);
    let w = BackendOnTarget::for_job(&job).await;
    let (proxy, watching) = w.backend_through_proxy().await;
    let object = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();
    w.backend.open(&patient_cx(), &object).await.unwrap();
    w.until_running(&job, &object, 1).await;
    let watched = BackendOnTarget::watch_with(&watching, &job);
    w.until_watched(&watched, "the Watch says running", |o| o.state == ObjectState::Running).await;

    proxy.freeze_carrying(&["/pods?", "watch=true"]);
    let ranks = w.ranks(&job, &object.name).await;
    let (rank, _) = &ranks[0];
    w.target.oom(w.kube(), rank).await;
    w.delete_pod(rank).await;
    w.until_pods_run(&job, &object.name, 0).await;
    w.until_found(&job, "the job ended", |o| o.state == ObjectState::Ended).await;
    // A few of the Watch's looks while its pods watch still stalls.
    for _ in 0..3 {
        w.target.pass_time().await;
    }
    let early = watched.seen_now();
    let early_end = early.iter().find(|o| !o.foreign && o.state == ObjectState::Ended);
    assert!(early_end.is_none(), "an Ended sent while deletions were unseen: {early_end:#?}");
    proxy.thaw();

    let ended =
        w.until_watched(&watched, "the Watch says ended", |o| o.state == ObjectState::Ended).await;
    assert_eq!(ended.object.uid, object.uid);
    assert_eq!(ended.cause.kind, CauseKind::OutOfMemory, "{ended:#?}");
    drop(watched);
    w.stop_leaves_nothing(&job).await;
}

/// kube-controller-manager down (its garbage collector and Job controller with it):
/// StopJob deletes the TrainJob, then the orphaned JobSet, and must then delete the
/// JobSet's Jobs itself, since nothing else will until the collector is back, and the
/// Job controller makes pods for a Job left behind (`docs/background-deletion.md`).
/// The deleted pods keep the Job controller's tracking finalizer, which nothing takes
/// off while it is down (and which it misses for good when a patch of its fails): StopJob
/// takes it off pods whose Job is gone, and answers done with the controller manager
/// still down. Once it is back, nothing of the job remains or comes back.
#[tokio::test]
async fn stop_job_while_the_garbage_collector_is_down_leaves_no_job_behind() {
    let job = job(27);
    let w = BackendOnTarget::for_job(&job).await;
    if !w.target.controls_processes() {
        eprintln!("skipped: {} cannot restart its processes", w.target.describe());
        return;
    }
    let object = w.backend.start(&patient_cx(), &request(&job, Program::Sleep)).await.unwrap();
    w.backend.open(&patient_cx(), &object).await.unwrap();
    w.until_running(&job, &object, 1).await;
    assert!(!w.labelled(Kind::Job, &job).await.is_empty(), "the JobSet's Jobs carry the job");

    w.target.kill(w.kube(), Component::ControllerManager).await;
    let stopping = tokio::spawn({
        let backend = w.backend.clone();
        let job = job.clone();
        async move { backend.stop_job(&patient_cx(), &job).await }
    });
    w.target
        .until("StopJob done with the controller manager down", async || {
            if stopping.is_finished() { Ok(()) } else { Err("StopJob still waits".to_owned()) }
        })
        .await;
    let stopped = stopping.await.expect("StopJob's task");
    w.nothing_of(&job, "after StopJob, the controller manager down").await;
    w.target.restart(Component::ControllerManager).await;
    stopped.expect("StopJob with the controller manager down");
    for _ in 0..3 {
        w.target.pass_time().await;
    }
    w.nothing_of(&job, "a while after StopJob").await;
}

/// A process killed mid-probe (a command its user stopped) leaves the probe's objects
/// under a job id no supervisor knows; in Kueue mode they could hold quota. The next
/// probe in the namespace deletes those past their expiry, and leaves those whose probe
/// may still run (`docs/backend.md#the-preflight-probe`).
#[tokio::test]
async fn a_probe_a_killed_process_left_is_deleted_by_the_next_probe() {
    let (abandoned, live) = (job(28), job(29));
    let w = BackendOnTarget::for_job(&abandoned).await;
    w.backend.stop_job(&patient_cx(), &live).await.expect("StopJob of an earlier run's leftovers");
    w.leave_probe(&abandoned, "2000-01-01T00:00:00Z".parse().unwrap()).await;
    let in_an_hour = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1);
    w.leave_probe(&live, in_an_hour).await;

    let probing = w.another_backend().await;
    assert_eq!(probing.preflight().access, Writability::Writable);
    w.target
        .until("the abandoned probe's objects gone", async || {
            let mut left = Vec::new();
            for kind in Kind::ALL {
                let names = w.labelled(kind, &abandoned).await.into_iter();
                left.extend(
                    names.map(|o| format!("{kind:?} {}", o.metadata.name.unwrap_or_default())),
                );
            }
            if left.is_empty() { Ok(()) } else { Err(format!("left: {left:?}")) }
        })
        .await;
    w.nothing_of(&abandoned, "after the next probe").await;
    assert_eq!(w.labelled(Kind::TrainJob, &live).await.len(), 1, "a probe that may still run");
    w.backend.stop_job(&patient_cx(), &live).await.expect("StopJob");
    w.nothing_of(&live, "after StopJob").await;
}
