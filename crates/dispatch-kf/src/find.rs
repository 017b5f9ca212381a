//! Find and Inspect: one snapshot read, one classification.

use dispatch_core::{CallContext, Discovery, JobId, ObjectObs, ObjectRef, Result};
use dispatch_kf_client::error_map::RequestClass;
use dispatch_kf_client::resources::TRAIN_JOB;
use dispatch_kf_client::{Cluster, JobQuery, Known};
use dispatch_kf_model::internal::gates::{self, Edit};
use dispatch_kf_model::internal::{ended, json};
use dispatch_kf_model::{ClassifyOptions, Detail, Snapshot, classify};
use std::pin::pin;
use std::time::Duration;

use jiff::Timestamp;

use crate::{Inner, edge};

/// How long a read waits for the pods watch to take in the deletions its list already
/// shows (`docs/backend.md#watch-and-the-deleted-pods-evidence`): the DELETED events of
/// a large teardown can trail the list by seconds on a busy apiserver.
const DELETIONS_CATCH_UP: Duration = Duration::from_secs(5);

/// One read of a job: its snapshot, and the pods whose deletion the pods watch had not
/// taken in yet (their last states missing from the snapshot's evidence).
struct Read {
    snapshot: Snapshot,
    deletions_unseen: Vec<String>,
}

impl Inner {
    /// Everything one classification of `job` reads: the job's objects by label, and
    /// those that lost it by the names the shared index holds when its watches are
    /// live, else by the names the job's own objects imply (`docs/backend.md#find-and-inspect`).
    pub(crate) async fn snapshot(&self, cx: &CallContext, job: &JobId) -> Result<Snapshot> {
        self.snapshot_on(&self.cluster, cx, job).await
    }

    /// [`Inner::snapshot`] through `cluster` (the hold family reads through its own view).
    pub(crate) async fn snapshot_on(
        &self,
        cluster: &Cluster,
        cx: &CallContext,
        job: &JobId,
    ) -> Result<Snapshot> {
        Ok(self.read(cluster, cx, job).await?.snapshot)
    }

    async fn read(&self, cluster: &Cluster, cx: &CallContext, job: &JobId) -> Result<Read> {
        let known = self.hub.known_if_live(job);
        let query = JobQuery {
            namespace: &self.settings.namespace,
            job,
            mode: self.settings.mode,
            nodes: self.preflight.nodes,
            known: known.as_ref().map_or(Known::Implied, Known::Index),
        };
        let mut snapshot = cluster.read_job(cx, query).await?;
        let deletions_unseen = self.catch_up_deletions(cx, job, &snapshot).await;
        self.evidence.forget_gone(job, &snapshot);
        snapshot.captured_pods.extend(self.evidence.of_job(job));
        snapshot.evidence_gap = self.evidence.gap_of(job);
        Ok(Read { snapshot, deletions_unseen })
    }

    /// Waits, no longer than [`DELETIONS_CATCH_UP`] and the call, until the pods watch
    /// has taken in every deletion the list already shows, so that the deleted pods'
    /// last states are in the evidence before anything is classified; the names still
    /// on their way when it stops waiting.
    async fn catch_up_deletions(
        &self,
        cx: &CallContext,
        job: &JobId,
        snapshot: &Snapshot,
    ) -> Vec<String> {
        let until = edge::timer() + DELETIONS_CATCH_UP;
        loop {
            let mut changed = pin!(self.hub.pods_changed());
            changed.as_mut().enable();
            let unseen = self.hub.deletions_unseen(job, &snapshot.pods);
            if unseen.is_empty() {
                return unseen;
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(until) => return unseen,
                () = cx.cancelled() => return unseen,
                () = edge::deadline(cx) => return unseen,
            }
        }
    }

    /// The observations of a snapshot at `now`.
    pub(crate) fn observe(&self, snapshot: &Snapshot, now: Timestamp) -> Vec<ObjectObs> {
        let options = ClassifyOptions {
            mode: self.settings.mode,
            nodes_readable: self.preflight.nodes.readable(),
            backend: self.settings.name.clone(),
            detail: Detail::WithNotes,
        };
        classify(snapshot, &options, now)
    }

    /// The observations of a snapshot at `now`, after sealing each TrainJob they show
    /// has failed ([`Inner::seal_ended`]): what Find, Inspect and Watch report.
    async fn observe_sealing(
        &self,
        cx: &CallContext,
        snapshot: &Snapshot,
        now: Timestamp,
    ) -> Vec<ObjectObs> {
        let observations = self.observe(snapshot, now);
        self.seal_ended(cx, snapshot, &observations).await;
        observations
    }

    /// Closes the start gate of each TrainJob of `snapshot` that has failed and writes
    /// how it ended (`dispatch_kf_model::internal::ended`), before the end is reported, so that
    /// a JobSet made again by the Trainer runs nothing. Best effort: the observation is
    /// true either way, and a seal not written now (read-only, a conflict to the last
    /// try, the apiserver away) is written by the next Find that sees the end.
    async fn seal_ended(&self, cx: &CallContext, snapshot: &Snapshot, observations: &[ObjectObs]) {
        if self.check_writable().is_err() {
            return;
        }
        let objects = self.cluster.objects(TRAIN_JOB, &self.settings.namespace);
        for (object, record) in ended::to_seal(snapshot, observations) {
            let written = objects
                .read_modify_write(cx, RequestClass::Write, &object.name, |train_job| {
                    if json::uid(train_job) != object.uid {
                        return Ok(Edit::Unchanged);
                    }
                    gates::seal(train_job, &record)
                })
                .await;
            if let Err(e) = written {
                tracing::warn!(train_job = %object.name, error = %e, "an ended TrainJob could not be sealed yet");
            }
        }
    }

    /// Every object of `job`, orphans included, and the in-flight mark.
    pub(crate) async fn find(&self, cx: &CallContext, job: &JobId) -> Result<Discovery> {
        Ok(self.discover(cx, job).await?.0)
    }

    /// [`Inner::find`], and the job's pods whose deletion the pods watch had still not
    /// taken in when the read stopped waiting (a Watch holds back an Ended meanwhile).
    pub(crate) async fn discover(
        &self,
        cx: &CallContext,
        job: &JobId,
    ) -> Result<(Discovery, Vec<String>)> {
        self.check_open()?;
        let read = self.read(&self.cluster, cx, job).await?;
        let now = edge::now();
        let discovery = Discovery {
            job: job.clone(),
            objects: self.observe_sealing(cx, &read.snapshot, now).await,
            in_flight: self.in_flight.get(job, now),
        };
        Ok((discovery, read.deletions_unseen))
    }

    /// One object: the observation of the reference's kind, name and UID.
    pub(crate) async fn inspect(&self, cx: &CallContext, object: &ObjectRef) -> Result<ObjectObs> {
        self.check_open()?;
        let target = self.target(object)?;
        let snapshot = self.snapshot(cx, &target.job).await?;
        let observations = self.observe_sealing(cx, &snapshot, edge::now()).await;
        crate::refs::pick(observations, object)
    }
}
