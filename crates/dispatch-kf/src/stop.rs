//! Stop and StopJob (`docs/background-deletion.md`).
//!
//! Stop deletes in the background with a UID precondition: the apiserver removes the
//! object at once and the garbage collector its dependents afterwards, which are
//! orphans meanwhile. StopJob waits until nothing of the job remains, deleting orphaned
//! JobSets, Jobs, pods and runtime copies itself.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use dispatch_core::{CallContext, Error, JobId, Kind, ObjectRef, Result};
use dispatch_kf_client::Deleted;
use dispatch_kf_client::error_map::RequestClass;
use dispatch_kf_client::resources::{JOB, POD, Resource};
use dispatch_kf_model::internal::removal;
use dispatch_kf_model::{Snapshot, names};

use crate::refs::resource_of;
use crate::{Inner, edge};

/// How often StopJob looks again while the job's objects go.
const STOP_POLL: Duration = Duration::from_secs(1);

/// How long a deleted pod whose Job is gone may hold the Job controller's tracking
/// finalizer before StopJob takes it off (`removal::release_from_gone_job`): the Job
/// controller takes it off such a pod within moments when it sees it, so StopJob
/// writes only for the pods it missed.
const JOB_CONTROLLER_GRACE: Duration = Duration::from_secs(3);

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
        self.delete_instance(cx, &Instance::of(object)).await
    }

    /// [`Inner::delete_object`] of an object of any kind.
    async fn delete_instance(&self, cx: &CallContext, object: &Instance) -> Result<()> {
        let objects = self.cluster.objects(object.resource, &self.settings.namespace);
        match objects.delete(cx, &object.name, Some(&object.uid)).await? {
            Deleted::Deleted | Deleted::Gone => Ok(()),
            // A failed UID precondition means another instance holds the name, so ours
            // is gone; a conflict for any other reason leaves ours in place: look.
            Deleted::PreconditionFailed => match objects.get_opt(cx, &object.name).await? {
                Some(o) if dispatch_kf_model::internal::json::uid(&o) == object.uid => {
                    Err(Error::rejected(format!(
                        "delete {} {}: a conflict, and the object of UID {} is still there",
                        object.resource.kind, object.name, object.uid
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
    ///
    /// It also waits for the batch Jobs of the job's JobSets, deleting those whose JobSet
    /// is gone: a JobSet deleted while the garbage collector is down or behind leaves its
    /// Jobs, and the Job controller makes their pods again, so the job would run on
    /// after StopJob said it was gone. A Job whose JobSet remains goes with it.
    pub(crate) async fn remove_job(&self, cx: &CallContext, job: &JobId) -> Result<()> {
        let mut removal = Removal::default();
        loop {
            let (remaining, deleted_now) = self.removal_look(cx, job, &mut removal).await?;
            if remaining.is_empty() {
                return Ok(());
            }
            // What was just deleted may be gone already: look again before waiting.
            if deleted_now {
                continue;
            }
            let names: Vec<String> =
                remaining.iter().map(|o| format!("{} {}", o.resource.kind, o.name)).collect();
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

    /// [`Inner::remove_job`] without its waits: looks at `job` and deletes what is due
    /// (orphaned copies and Jobs included) until a look deletes nothing new, and
    /// returns then, whatever remains (objects still going, or a Job that goes with its
    /// JobSet). The sweep of abandoned probes uses it, so that a deletion that hangs
    /// holds up no Factory; the next sweep looks again.
    pub(crate) async fn delete_job_without_waiting(
        &self,
        cx: &CallContext,
        job: &JobId,
    ) -> Result<()> {
        let mut removal = Removal::default();
        while self.removal_look(cx, job, &mut removal).await?.1 {}
        Ok(())
    }

    /// One look at `job`: deletes what is due that `removal` has not deleted yet.
    /// Returns what remains (deleted or not), and whether this look deleted anything.
    async fn removal_look(
        &self,
        cx: &CallContext,
        job: &JobId,
        removal: &mut Removal,
    ) -> Result<(Vec<Instance>, bool)> {
        let snapshot = self.snapshot(cx, job).await.map_err(|e| e.context("stop-job"))?;
        removal.job_sets.extend(job_set_names(job, &snapshot));
        let observed = self.observe(&snapshot, edge::now());
        let mut doomed: Vec<Instance> = observed.iter().map(|o| Instance::of(&o.object)).collect();
        let mut remaining = doomed.clone();
        let jobs = self.jobs_left(cx, job, &removal.job_sets, &snapshot).await?;
        for (batch_job, orphaned) in jobs.iter().flatten() {
            if *orphaned {
                doomed.push(batch_job.clone());
            }
            remaining.push(batch_job.clone());
        }
        let mut deleted_now = false;
        for object in &doomed {
            if removal.deleted.insert(object.uid.clone()) {
                self.delete_instance(cx, object).await?;
                deleted_now = true;
            }
        }
        if let Some(jobs) = &jobs {
            deleted_now |= self.release_pods(cx, &snapshot, jobs, removal).await?;
        }
        Ok((remaining, deleted_now))
    }

    /// Takes the Job controller's tracking finalizer off each deleted pod of the job
    /// whose Job is none of `jobs` and that has held it for [`JOB_CONTROLLER_GRACE`]
    /// since this removal first saw it so (`removal::release_from_gone_job`). A patch
    /// refused (the pod changed since it was read) or answered not found waits for the
    /// next look. Returns whether it took any off.
    async fn release_pods(
        &self,
        cx: &CallContext,
        snapshot: &Snapshot,
        jobs: &[(Instance, bool)],
        removal: &mut Removal,
    ) -> Result<bool> {
        let live: BTreeSet<&str> = jobs.iter().map(|(j, _)| j.uid.as_str()).collect();
        let due: Vec<_> = snapshot
            .pods
            .iter()
            .filter_map(|p| Some((&p.meta, removal::release_from_gone_job(&p.meta, &live)?)))
            .collect();
        let now = edge::timer();
        let held_now: BTreeSet<&str> = due.iter().map(|(meta, _)| meta.uid()).collect();
        removal.held.retain(|uid, _| held_now.contains(uid.as_str()));
        let pods = self.cluster.objects(POD, &self.settings.namespace);
        let mut released = false;
        for (meta, patch) in due {
            let since = *removal.held.entry(meta.uid().to_owned()).or_insert(now);
            if now.duration_since(since) < JOB_CONTROLLER_GRACE {
                continue;
            }
            match pods.patch_json(cx, RequestClass::Write, meta.name(), &patch).await {
                Ok(_) => released = true,
                Err(e) if e.is_refusal() || e.is(Kind::NotFound) => {}
                Err(e) => return Err(e.context("stop-job")),
            }
        }
        Ok(released)
    }

    /// The batch Jobs of `job` (by its label, and of the JobSets named `job_sets`), each
    /// with whether it is orphaned: its JobSet is not among `snapshot`'s. `None` when
    /// the adapter may not list Jobs (`Preflight::lacking` says so).
    async fn jobs_left(
        &self,
        cx: &CallContext,
        job: &JobId,
        job_sets: &BTreeSet<String>,
        snapshot: &Snapshot,
    ) -> Result<Option<Vec<(Instance, bool)>>> {
        if !self.preflight.jobs_listable {
            return Ok(None);
        }
        let ns = &self.settings.namespace;
        let jobs = self.cluster.jobs_of(cx, ns, job, job_sets).await;
        let jobs = jobs.map_err(|e| e.context("stop-job"))?;
        let live: BTreeSet<&str> = snapshot.job_sets.iter().map(|js| js.meta.uid()).collect();
        Ok(Some(
            jobs.iter()
                .map(|j| {
                    let meta = j.meta();
                    let orphaned =
                        meta.controller().is_none_or(|o| !live.contains(o.uid.or_empty()));
                    (Instance::from_meta(JOB, meta), orphaned)
                })
                .collect(),
        ))
    }
}

/// What one removal of a job has seen and done across its looks: the JobSet names of
/// its submissions (a Job outlives its JobSet's name only in its label), the UIDs it
/// has deleted, each deleted once, and since when each deleted pod whose Job is gone
/// has been seen holding the Job controller's tracking finalizer.
#[derive(Default)]
struct Removal {
    job_sets: BTreeSet<String>,
    deleted: BTreeSet<String>,
    held: BTreeMap<String, tokio::time::Instant>,
}

/// One object StopJob deletes: its kind, name and UID.
#[derive(Clone)]
struct Instance {
    resource: Resource,
    name: String,
    uid: String,
}

impl Instance {
    /// The object a reference names.
    fn of(object: &ObjectRef) -> Instance {
        Instance {
            resource: resource_of(object.kind),
            name: object.name.clone(),
            uid: object.uid.clone(),
        }
    }

    fn from_meta(resource: Resource, meta: &dispatch_kf_model::view::Meta) -> Instance {
        Instance { resource, name: meta.name().to_owned(), uid: meta.uid().to_owned() }
    }
}

/// The JobSet names of the submissions of `job` that `snapshot` shows: a TrainJob,
/// JobSet and runtime copy bear the name, a pod its JobSet's in a label.
fn job_set_names(job: &JobId, snapshot: &Snapshot) -> Vec<String> {
    let objects = snapshot
        .train_jobs
        .iter()
        .map(|o| &o.meta)
        .chain(snapshot.job_sets.iter().map(|o| &o.meta))
        .chain(snapshot.runtimes.iter().map(|o| &o.meta))
        .map(|m| m.name());
    let pods =
        snapshot.pods.iter().filter_map(|p| p.meta.label(dispatch_kf_model::keys::JOBSET_NAME));
    objects
        .chain(pods)
        .filter(|name| names::parse(name).is_some_and(|(of, _)| &of == job))
        .map(str::to_owned)
        .collect()
}
