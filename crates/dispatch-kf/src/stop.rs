//! Stop and StopJob (`docs/background-deletion.md`).
//!
//! Stop deletes in the background with a UID precondition: the apiserver removes the
//! object at once and the garbage collector its dependents afterwards, which are
//! orphans meanwhile. StopJob waits until nothing of the job remains, deleting orphaned
//! JobSets, pods and runtime copies itself.

use std::collections::BTreeSet;
use std::time::Duration;

use dispatch_core::{CallContext, Error, JobId, ObjectRef, Result};
use dispatch_kf_client::Deleted;

use crate::refs::resource_of;
use crate::{Inner, edge};

/// How often StopJob looks again while the job's objects go.
const STOP_POLL: Duration = Duration::from_secs(1);

impl Inner {
    /// Stop: deletes the object if it is still the instance the reference names.
    pub(crate) async fn stop(&self, cx: &CallContext, object: &ObjectRef) -> Result<()> {
        self.check_writable()?;
        self.target(object)?;
        self.delete_object(cx, object).await
    }

    /// Deletes `object` in the background if its UID still matches; an object already
    /// gone, or whose name another UID now holds, is success.
    pub(crate) async fn delete_object(&self, cx: &CallContext, object: &ObjectRef) -> Result<()> {
        let objects = self.cluster.objects(resource_of(object.kind), &self.settings.namespace);
        match objects.delete(cx, &object.name, Some(&object.uid)).await? {
            Deleted::Deleted | Deleted::Gone => Ok(()),
            // A failed UID precondition means another instance holds the name, so ours
            // is gone; a conflict for any other reason leaves ours in place: look.
            Deleted::PreconditionFailed => match objects.get_opt(cx, &object.name).await? {
                Some(o) if dispatch_kf_model::json::uid(&o) == object.uid => {
                    Err(Error::rejected(format!(
                        "delete {} {}: a conflict, and the object of UID {} is still there",
                        object.kind.name(),
                        object.name,
                        object.uid
                    )))
                }
                _ => Ok(()),
            },
        }
    }

    /// StopJob: stops every object of `job` and waits until none remains and no create
    /// of this Backend that went unanswered can still land (its in-flight mark has
    /// expired), deleting what appears meanwhile; or until the call's deadline (by
    /// default `timeouts.stopJob`) passes: then `Unreachable`, saying what it waited for.
    pub(crate) async fn stop_job(&self, cx: &CallContext, job: &JobId) -> Result<()> {
        self.check_writable()?;
        let mut cx = cx.clone();
        if cx.deadline.is_none() {
            let wait = self.settings.timeouts.stop_job.to_std().unwrap_or_default();
            cx.deadline = Some(edge::instant() + wait);
        }
        // An object whose label a foreign hand stripped, of a submission no other
        // object of the job names, is known only to the shared index: StopJob reads by
        // it, as a Find on a Backend whose index is live does.
        self.hub.index(&cx).await.map_err(|e| e.context("stop-job"))?;
        loop {
            self.remove_job(&cx, job).await?;
            let now = edge::now();
            let Some(mark) = self.in_flight.get(job, now) else {
                return Ok(());
            };
            // A TrainJob may still appear until the mark expires: wait, then look again.
            let left = Duration::try_from(mark.until.duration_since(now)).unwrap_or_default();
            let waiting = || {
                Error::unreachable(format!(
                    "stop-job: the call ended while the create of submission {} of job {job} went unanswered and may still land until {}: nothing of the job remains yet, but a TrainJob may appear; call StopJob again after then",
                    mark.submission, mark.until
                ))
            };
            tokio::select! {
                () = tokio::time::sleep(left) => {}
                () = cx.cancelled() => return Err(waiting()),
                () = edge::deadline(&cx) => return Err(waiting()),
            }
        }
    }

    /// Deletes every object of `job`, orphans included, and waits until none remains or
    /// the call ends (`Unreachable`): StopJob's first part, and the preflight probe's
    /// clean-up. `cx` must carry a deadline.
    pub(crate) async fn remove_job(&self, cx: &CallContext, job: &JobId) -> Result<()> {
        let mut deleted = BTreeSet::new();
        loop {
            let snapshot = self.snapshot(cx, job).await.map_err(|e| e.context("stop-job"))?;
            let remaining = self.observe(&snapshot, edge::now());
            if remaining.is_empty() {
                return Ok(());
            }
            let mut deleted_now = false;
            for obs in &remaining {
                if deleted.insert(obs.object.uid.clone()) {
                    self.delete_object(cx, &obs.object).await?;
                    deleted_now = true;
                }
            }
            // What was just deleted may be gone already: look again before waiting.
            if deleted_now {
                continue;
            }
            let names: Vec<String> = remaining
                .iter()
                .map(|o| format!("{} {}", o.object.kind.name(), o.object.name))
                .collect();
            let waiting = || {
                Error::unreachable(format!(
                    "stop-job: the call ended while objects of job {job} remain: {}",
                    names.join(", ")
                ))
            };
            tokio::select! {
                () = tokio::time::sleep(STOP_POLL) => {}
                () = cx.cancelled() => return Err(waiting()),
                () = edge::deadline(cx) => return Err(waiting()),
            }
        }
    }
}
