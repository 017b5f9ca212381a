//! One job's supervisor, as dispatch's supervisor drives a Backend: a Watch of
//! its job open throughout; Start a submission, Open it, and look at what the Watch
//! last said every second (and Find every tenth look); now and then Hold and Release
//! it, or Stop it; when it ends (the first Ended the Watch sent), after a node loss
//! Ceased, then StopJob, and submit the next. Every call is
//! logged with its outcome; what says "try again" is tried again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dispatch_core::{
    CallContext, CauseKind, JobId, ObjectObs, ObjectRef, ObjectState, StartRequest, Watcher,
};
use dispatch_kf::KubeflowBackend;
use futures::StreamExt;
use serde_json::json;

use crate::driver::{CALL, Driver};
use crate::report::{Ended, Log};

/// How long a submission may take to run before the supervisor gives up on it.
const PATIENCE: Duration = Duration::from_secs(240);

/// Job `n` of the run.
pub(crate) fn job(n: u32) -> JobId {
    JobId::parse(&format!("01JC4A0S{n:018}")).expect("a job id")
}

/// Submission `submission` of `job`: two ranks of one GPU each, sleeping until a fault
/// or the supervisor ends them.
fn request(job: &JobId, submission: u32) -> StartRequest {
    serde_json::from_value(json!({
        "job": job.as_str(), "generation": 1, "submission": submission, "attempt": 1,
        "spec": {
            "command": ["sleep", "600"], "nodes": 2, "gpusPerNode": 1,
            "extensions": {
                "dispatch/Image": {"ref": "busybox:1.36"},
                "kubeflow/RuntimeRef": {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}
            }
        }
    }))
    .expect("a request")
}

/// The outcome's name: `ok`, or the sentinel's (pods-remain apart).
fn outcome<T>(result: &dispatch_core::Result<T>) -> String {
    match result {
        Ok(_) => "ok".to_owned(),
        Err(e) if e.is_pods_remain() => "pods-remain".to_owned(),
        Err(e) => e.kind().name().to_owned(),
    }
}

/// Whether an error says "try again".
fn passing(e: &dispatch_core::Error) -> bool {
    use dispatch_core::Kind;
    e.is(Kind::Unreachable) || e.is(Kind::OutcomeUnknown) || e.is(Kind::ReadOnly)
}

/// The call `$call` (a future, made anew each time) of supervisor `$s`, again while it
/// says "try again", until it answers otherwise or `$until` and half a minute have passed:
/// its value, or `None` (said in a note).
macro_rules! retried {
    ($s:expr, $name:expr, $until:expr, $call:expr) => {{
        loop {
            match $s.call($name, $call).await {
                Ok(value) => break Some(value),
                Err(e) if passing(&e) && Instant::now() < $until + Duration::from_secs(30) => {}
                Err(e) => {
                    $s.log.note(format!("{} {}: {e}", $s.job, $name));
                    break None;
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }};
}

/// What the job's Watch has said, by object UID: the last observation, and the first
/// Ended.
#[derive(Default)]
struct Seen {
    last: HashMap<String, ObjectObs>,
    first_ended: HashMap<String, ObjectObs>,
}

pub(crate) struct Supervisor {
    job: JobId,
    /// How its calls reach the adapter.
    driver: Driver,
    /// The Backend its Watch runs on (the command's `watch` would hold a process open).
    backend: KubeflowBackend,
    log: Arc<Log>,
    rng: fastrand::Rng,
    seen: Arc<Mutex<Seen>>,
}

impl Supervisor {
    pub(crate) fn new(
        n: u32,
        driver: Driver,
        backend: KubeflowBackend,
        log: Arc<Log>,
        seed: u64,
    ) -> Supervisor {
        let rng = fastrand::Rng::with_seed(seed ^ (u64::from(n) << 32));
        Supervisor { job: job(n), driver, backend, log, rng, seen: Arc::default() }
    }

    /// Submits the job again and again until `until`, its Watch open throughout.
    pub(crate) async fn run(mut self, until: Instant) {
        // Leftovers of an earlier run go first.
        stop_for_good(&self.driver, &self.job, &self.log).await;
        let watching = tokio::spawn(watch(
            self.backend.clone(),
            self.job.clone(),
            self.log.clone(),
            self.seen.clone(),
        ));
        let mut submission = 0;
        while Instant::now() < until {
            submission += 1;
            self.submission(submission, until).await;
        }
        watching.abort();
    }

    /// Times `call`, logs its outcome, and traces it (`Log::trace`) unless it is a Find.
    async fn call<T>(
        &self,
        name: &'static str,
        call: impl Future<Output = dispatch_core::Result<T>>,
    ) -> dispatch_core::Result<T> {
        let began = Instant::now();
        let result = call.await;
        let traced = name != "find";
        record(&self.log, &self.job, &self.driver.label(name), began, traced, &result);
        result
    }

    /// One submission, from Start until it is stopped or ended and ceased.
    async fn submission(&mut self, submission: u32, until: Instant) {
        let b = self.driver.clone();
        let request = request(&self.job, submission);
        let Some(object) = retried!(self, "start", until, b.start(&request)) else {
            return self.stop(until).await;
        };
        self.log.trace(self.job.as_str(), &format!("submission {submission} is {}", object.uid));
        if retried!(self, "open", until, b.open(&object)).is_none() {
            return self.stop(until).await;
        }
        let began = Instant::now();
        let mut holds = 0;
        let mut looks = 0u32;
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_secs(1)).await;
            looks += 1;
            if looks.is_multiple_of(10) {
                let _ = self.call("find", b.find(&self.job)).await;
            }
            let (last, ended) = {
                let seen = self.seen.lock().expect("not poisoned");
                (seen.last.get(&object.uid).cloned(), seen.first_ended.get(&object.uid).cloned())
            };
            // Kueue's preemption interrupts an execution rather than ending it: the gate
            // turns its readmission away until a Release. The supervisor takes it as
            // the end of the submission, as it takes an Ended, and submits anew.
            let interrupted = last.clone().filter(|o| {
                o.cause.kind == CauseKind::Preempted
                    && o.state != ObjectState::Running
                    && o.execution.is_some()
            });
            if let Some(obs) = ended.or(interrupted) {
                self.table_end(submission, &obs);
                // A lost node may still run the ranks: ask whether they have ceased
                // (yes only once every node of the execution is gone or out of service,
                // so a healthy peer's node keeps it no); StopJob then waits until the
                // pods are gone, the lost node's too once it is out of service.
                if obs.cause.kind == CauseKind::NodeLost {
                    let _ = self.call("ceased", b.ceased(&object)).await;
                }
                return self.stop(until).await;
            }
            let Some(obs) = last else { continue };
            match obs.state {
                ObjectState::Running if self.rng.u32(0..40) == 0 => {
                    holds += 1;
                    if !self.hold_and_release(&object, holds, until).await {
                        return self.stop(until).await;
                    }
                }
                ObjectState::Running if self.rng.u32(0..120) == 0 => {
                    let _ = self.call("stop", b.stop(&object)).await;
                    return self.stop(until).await;
                }
                _ if began.elapsed() > PATIENCE => {
                    self.log.note(format!(
                        "{} submission {submission}: {:?} for {PATIENCE:?}, stopped ({})",
                        self.job, obs.state, obs.cause.detail
                    ));
                    return self.stop(until).await;
                }
                _ => {}
            }
        }
    }

    /// Tables how the execution of `submission` that `obs` shows ended (or was
    /// interrupted), for the cause check and the check that it stays ended.
    fn table_end(&self, submission: u32, obs: &ObjectObs) {
        let (admission, restart_attempt) =
            obs.execution.map_or((0, 0), |e| (e.admission, e.restart_attempt));
        let ended = Ended {
            job: self.job.as_str().to_owned(),
            submission: submission.to_string(),
            admission,
            restart_attempt,
            at: jiff::Timestamp::now(),
        };
        let said = format!(
            "{}: A={admission} J={restart_attempt} {}",
            if obs.state == ObjectState::Ended { "ended" } else { "interrupted" },
            obs.cause.kind
        );
        self.log.trace(self.job.as_str(), &said);
        self.log.ended(ended, submission, obs.cause.kind, &obs.cause.detail);
    }

    /// Hold `instance`, wait until held with no pods, Release it (again while pods
    /// remain); whether the job runs on.
    async fn hold_and_release(&self, object: &ObjectRef, instance: u64, until: Instant) -> bool {
        let b = &self.driver;
        if retried!(self, "hold", until, b.hold(object, instance)).is_none() {
            return false;
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if Instant::now() > deadline {
                self.log.note(format!("{}: not held within {PATIENCE:?}", self.job));
                return false;
            }
            let released = self.call("release", b.release(object, instance)).await;
            match released {
                Ok(()) => return true,
                Err(e) if passing(&e) => {}
                Err(e) => {
                    self.log.note(format!("{} release {instance}: {e}", self.job));
                    return false;
                }
            }
        }
    }

    async fn stop(&self, until: Instant) {
        if Instant::now() < until {
            stop_for_good(&self.driver, &self.job, &self.log).await;
        }
    }
}

/// Logs a call of `job`'s supervisor, `label`, begun at `began`: its outcome and time,
/// a line in the job's trace when `traced`, and a *read-only* answer for its check.
fn record<T>(
    log: &Log,
    job: &JobId,
    label: &str,
    began: Instant,
    traced: bool,
    result: &dispatch_core::Result<T>,
) {
    let outcome = outcome(result);
    log.call(label, &outcome, began.elapsed(), CALL);
    if traced {
        log.trace(job.as_str(), &format!("{label} {outcome}"));
    }
    if let Err(e) = result
        && e.is(dispatch_core::Kind::ReadOnly)
    {
        log.read_only(label, began, e.message());
    }
}

/// StopJob until it answers done: every object of the job gone.
pub(crate) async fn stop_for_good(driver: &Driver, job: &JobId, log: &Log) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let label = driver.label("stop-job");
    loop {
        let began = Instant::now();
        let result = driver.stop_job(job).await;
        record(log, job, &label, began, true, &result);
        match result {
            Ok(()) => return,
            Err(e) if Instant::now() > deadline => {
                log.violation(format!("StopJob of {job} never succeeded: {e}"));
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(2)).await,
        }
    }
}

/// Watches `job` until aborted, subscribing again when the stream fails or ends, as the
/// Watch contract asks; keeps what it says in `seen`.
async fn watch(backend: KubeflowBackend, job: JobId, log: Arc<Log>, seen: Arc<Mutex<Seen>>) {
    loop {
        let began = Instant::now();
        let stream = backend.watch(&CallContext::background(), &job).await;
        log.call("watch", &outcome(&stream), began.elapsed(), CALL);
        if let Ok(mut stream) = stream {
            while let Some(Ok(obs)) = stream.next().await {
                let mut seen = seen.lock().expect("not poisoned");
                if obs.state == ObjectState::Ended {
                    seen.first_ended.entry(obs.object.uid.clone()).or_insert_with(|| obs.clone());
                }
                seen.last.insert(obs.object.uid.clone(), obs);
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
