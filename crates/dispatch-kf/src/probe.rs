//! The preflight probe (`docs/backend.md#the-preflight-probe`): a Start, a Hold and
//! Release round trip and a removal, run by Factory in the namespace the Backend will
//! write; and the sweep of the objects of probes others left behind. Its request, its
//! budget and when a probe's objects are abandoned are the model's (`probe`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use dispatch_core::{CallContext, Error, JobId, ObjectRef, Result, StartRequest};
use dispatch_kf_client::resources::{TRAIN_JOB, TRAINING_RUNTIME, WORKLOAD};
use dispatch_kf_model::internal::probe;
use dispatch_kf_model::view::View;
use dispatch_kf_model::{Mode, Purpose, keys};

use crate::kueue_mode::KueueDoesNotGate;
use crate::{Inner, edge};

/// `cx` with its deadline no later than `bound` from now.
fn within(cx: &CallContext, bound: Duration) -> CallContext {
    let latest = edge::instant() + bound;
    let mut bounded = cx.clone();
    bounded.deadline = Some(cx.deadline.map_or(latest, |d| d.min(latest)));
    bounded
}

/// What the preflight probe found: whether its Start created its TrainJob, and whether
/// its Hold then Release worked; each else why not.
pub(crate) type Probed = (std::result::Result<(), String>, std::result::Result<(), String>);

/// A probe step that failed without a definite answer (*unreachable*, or
/// *outcome-unknown*: a webhook, the Trainer or the apiserver away for a moment)
/// decides nothing: Factory fails *unreachable*, saying so, rather than make a Backend
/// whose verdict would outlive the fault (`docs/backend.md`, step 7).
fn inconclusive(step: &str, e: &Error) -> Option<Error> {
    let passing =
        e.is(dispatch_core::Kind::Unreachable) || e.is(dispatch_core::Kind::OutcomeUnknown);
    passing.then(|| {
        Error::unreachable(format!(
            "the preflight probe's {step} met no definite answer ({}): {}; nothing was decided, try again",
            e.kind(),
            e.message()
        ))
    })
}

impl Inner {
    /// The preflight probe: a Start of the probe's own request, a Hold/Release round
    /// trip, then the removal of every object of the probe's job, however the probe
    /// ended, and of the jobs of probes others left behind. Returns whether it started
    /// and whether the round trip worked; `Err` only for what makes the Backend unusable
    /// (Kueue managing plain-mode jobs, a Kueue that does not gate admission in Kueue
    /// mode) or a call that ended meanwhile.
    ///
    /// The steps run under the caller's deadline or the budget's, whichever comes
    /// first, so that the probe has surely ended by the expiry its objects carry.
    pub(crate) async fn probe(&self, cx: &CallContext) -> Result<Probed> {
        let budget = probe::Budget::of(&self.settings.timeouts);
        let request = probe::request(&self.settings, edge::fresh_job_id()?);
        let purpose = Purpose::Probe { expires: budget.expires(edge::now()) };
        let steps = within(cx, budget.steps);
        let outcome = self.probe_steps(&steps, &request, purpose).await;
        self.clean_up_probe(&request.job, budget.clean_up).await;
        self.sweep_abandoned_probes(budget.clean_up).await;
        outcome
    }

    async fn probe_steps(
        &self,
        cx: &CallContext,
        request: &StartRequest,
        purpose: Purpose,
    ) -> Result<Probed> {
        let object = match self.start_for_purpose(cx, request, purpose).await {
            Ok(object) => object,
            Err(e) if KueueDoesNotGate::refused(&e) => return Err(e),
            Err(e) => {
                if let Some(inconclusive) = inconclusive("Start", &e) {
                    return Err(inconclusive);
                }
                let why =
                    format!("the preflight probe could not start ({}): {}", e.kind(), e.message());
                return Ok((Err(why.clone()), Err(why)));
            }
        };
        match self.probe_started(cx, &object).await? {
            Ok(()) => Ok((Ok(()), Ok(()))),
            Err(e) => match inconclusive("Hold and Release", &e) {
                Some(inconclusive) => Err(inconclusive),
                None => Ok((Ok(()), Err(format!("{}: {}", e.kind(), e.message())))),
            },
        }
    }

    /// Removes every object of the probe's job, whatever became of it (a TrainJob whose
    /// create went unanswered may exist; a refused one's copy may remain), on a fresh
    /// context bounded by `budget`: the caller's may be the one that just ended. What
    /// it cannot remove is logged, and left to the sweep of a later probe.
    async fn clean_up_probe(&self, job: &JobId, budget: Duration) {
        let fresh = CallContext::with_deadline(edge::instant() + budget);
        if let Err(e) = self.remove_job(&fresh, job).await {
            tracing::warn!(probe = %job, error = %e, "the preflight probe's objects could not all be removed");
        }
    }

    /// Deletes the objects of every probe job of the namespace past its expiry
    /// (`probe::abandoned`): a process killed mid-probe leaves its objects, whose random
    /// job id no supervisor will ever stop, and whose Workload may hold quota. Each
    /// is deleted as StopJob deletes, without waiting for anything to go, on a fresh
    /// context bounded by `budget`; what fails is logged, and the next probe looks again.
    async fn sweep_abandoned_probes(&self, budget: Duration) {
        let fresh = CallContext::with_deadline(edge::instant() + budget);
        let abandoned = match self.abandoned_probes(&fresh).await {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::warn!(error = %e, "the abandoned probes could not be listed");
                return;
            }
        };
        for job in abandoned {
            match self.delete_job_without_waiting(&fresh, &job).await {
                Ok(()) => tracing::info!(probe = %job, "deleted an abandoned probe's objects"),
                Err(e) => {
                    tracing::warn!(probe = %job, error = %e, "an abandoned probe's objects could not all be deleted");
                }
            }
        }
    }

    /// The job ids of the probes whose TrainJob or runtime copy is abandoned (a
    /// probe's copy is made first, and may be all it left).
    async fn abandoned_probes(&self, cx: &CallContext) -> Result<BTreeSet<JobId>> {
        let (now, selector) = (edge::now(), probe::selector());
        let mut jobs = BTreeSet::new();
        for resource in [TRAIN_JOB, TRAINING_RUNTIME] {
            let listed = self.cluster.objects(resource, &self.settings.namespace);
            let listed = listed.list(cx, &selector).await?;
            let abandoned =
                listed.items.iter().map(View::meta).filter(|m| probe::abandoned(m, now));
            jobs.extend(
                abandoned
                    .filter_map(|m| m.label(keys::LABEL_JOB_ID))
                    .filter_map(|id| JobId::parse(id).ok()),
            );
        }
        Ok(jobs)
    }

    /// The probe's checks once its TrainJob is made: in plain mode that Kueue does not
    /// manage it, then the hold round trip, whose failure is the inner `Err`.
    async fn probe_started(
        &self,
        cx: &CallContext,
        object: &ObjectRef,
    ) -> Result<std::result::Result<(), Error>> {
        if self.settings.mode == Mode::Plain
            && self.cluster.serves(cx, keys::KUEUE_API_VERSION).await?
        {
            self.refuse_if_kueue_manages(cx, object).await?;
        }
        let round_trip = async {
            self.hold(cx, object, 1).await?;
            self.release(cx, object, 1).await
        };
        Ok(round_trip.await)
    }

    /// Plain mode on a cluster whose Kueue manages queue-less jobs: the probe's
    /// TrainJob gets a Workload, and Kueue would fight the adapter over `spec.suspend`.
    /// It looks every second for [`kueue_check_limit`], and stops when the call ends.
    async fn refuse_if_kueue_manages(&self, cx: &CallContext, object: &ObjectRef) -> Result<()> {
        let workloads = self.cluster.objects(WORKLOAD, &self.settings.namespace);
        let selector = format!("{}={}", keys::KUEUE_JOB_UID, object.uid);
        let workload = self.settings.timeouts.workload.to_std().unwrap_or_default();
        let limit = kueue_check_limit(workload, cx.deadline, edge::instant());
        let started = edge::timer();
        loop {
            if !workloads.list(cx, &selector).await?.items.is_empty() {
                return Err(Error::unsupported(
                    "Kueue manages TrainJobs without a queue on this cluster, so plain mode would fight it: set mode to kueue",
                ));
            }
            let left = limit.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Ok(());
            }
            let ended = || {
                Error::unreachable(
                    "the call ended while the preflight probe looked for a Workload Kueue might make",
                )
            };
            tokio::select! {
                () = tokio::time::sleep(left.min(Duration::from_secs(1))) => {}
                () = cx.cancelled() => return Err(ended()),
                () = edge::deadline(cx) => return Err(ended()),
            }
        }
    }
}

/// How long the plain-mode probe looks for a Workload: `timeouts.workload`, but no more
/// than half the time left before the call's deadline, so that the hold round trip and
/// the clean-up still fit (a default wait must not outlast the default deadline it runs
/// under: `dispatch-kf start` gives Factory 30 s, and `timeouts.workload` is 60 s).
fn kueue_check_limit(workload: Duration, deadline: Option<Instant>, now: Instant) -> Duration {
    match deadline {
        Some(d) => workload.min(d.saturating_duration_since(now) / 2),
        None => workload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kueue_check_leaves_half_the_time_left_for_the_rest_of_the_probe() {
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        let limit = |secs| kueue_check_limit(minute, Some(now + Duration::from_secs(secs)), now);
        assert_eq!(limit(30), Duration::from_secs(15));
        assert_eq!(limit(600), minute);
        assert_eq!(kueue_check_limit(minute, Some(now), now), Duration::ZERO);
        assert_eq!(kueue_check_limit(minute, None, now), minute);
    }
}
