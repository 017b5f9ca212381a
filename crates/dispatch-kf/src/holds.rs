//! Open, Hold and Release (`docs/start-gate-and-holds.md`;
//! `docs/backend.md#open-hold-and-release`).
//! The model decides each edit (`dispatch_kf_model::internal::gates`); this module finds the
//! object to edit, tells the model what it findings (ended, pods remaining), and writes
//! with the resource version it read, re-reading on a conflict up to eight tries.

use dispatch_core::{
    CallContext, Capability, Error, JobId, ObjectKind, ObjectObs, ObjectRef, ObjectState, Result,
};
use dispatch_kf_client::Cluster;
use dispatch_kf_client::error_map::RequestClass;
use dispatch_kf_client::resources::{Resource, TRAIN_JOB, WORKLOAD};
use dispatch_kf_model::internal::gates::{self, Edit, Situation};
use dispatch_kf_model::internal::{json, ranks};
use dispatch_kf_model::{Mode, Snapshot, keys};
use serde_json::Value;

use crate::refs::pick;
use crate::{Inner, edge};

/// Which call of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Open,
    Hold(u64),
    Release(u64),
}

impl Inner {
    pub(crate) async fn open(&self, cx: &CallContext, object: &ObjectRef) -> Result<()> {
        self.hold_family(cx, object, Verb::Open).await
    }

    pub(crate) async fn hold(
        &self,
        cx: &CallContext,
        object: &ObjectRef,
        instance: u64,
    ) -> Result<()> {
        self.hold_family(cx, object, Verb::Hold(instance)).await
    }

    pub(crate) async fn release(
        &self,
        cx: &CallContext,
        object: &ObjectRef,
        instance: u64,
    ) -> Result<()> {
        self.hold_family(cx, object, Verb::Release(instance)).await
    }

    async fn hold_family(&self, cx: &CallContext, object: &ObjectRef, verb: Verb) -> Result<()> {
        self.check_writable()?;
        // Every request of the call, reads included, meets its deadline as the hold
        // family does; a call that cannot is refused before anything is read.
        let cluster = self.cluster.hold_family(cx)?;
        if let Verb::Hold(k) | Verb::Release(k) = verb {
            let hold = &self.preflight.capabilities[&Capability::Hold];
            if !hold.is_yes() {
                return Err(Error::unsupported(format!(
                    "Hold is not supported here: {}",
                    hold.reason
                )));
            }
            gates::check_instance(k)?;
        }
        let target = self.target(object)?;
        if object.kind != ObjectKind::TrainJob {
            return Err(Error::rejected(format!(
                "{} {} is an orphan of a TrainJob that is gone: only a TrainJob can be opened, held or released",
                object.kind.name(),
                object.name
            )));
        }
        let call = Call { inner: self, cluster: &cluster, cx, object, job: &target.job };
        let kueue = self.settings.mode == Mode::Kueue;
        match (verb, kueue) {
            (Verb::Open, false) => call.edit(TRAIN_JOB, object, gates::open_plain).await,
            (Verb::Open, true) => call.edit(TRAIN_JOB, object, gates::open_kueue).await,
            (Verb::Hold(k), false) => {
                call.edit(TRAIN_JOB, object, |tj, s| gates::hold_plain(tj, k, s)).await
            }
            (Verb::Release(k), false) => {
                call.edit(TRAIN_JOB, object, |tj, s| gates::release_plain(tj, k, s)).await
            }
            (Verb::Hold(k), true) => {
                let workload = call.workload().await?;
                call.edit(WORKLOAD, &workload, |wl, s| gates::hold_kueue(wl, k, s)).await
            }
            (Verb::Release(k), true) => {
                let workload = call.workload().await?;
                call.edit(WORKLOAD, &workload, |wl, s| gates::release_kueue(wl, k, s)).await
            }
        }
    }
}

/// One Open, Hold or Release: the Backend, the call's view of the apiserver, and the
/// TrainJob it is about.
struct Call<'a> {
    inner: &'a Inner,
    cluster: &'a Cluster,
    cx: &'a CallContext,
    object: &'a ObjectRef,
    job: &'a JobId,
}

impl Call<'_> {
    /// The TrainJob's observation and what the model needs to know of it, read now.
    async fn read(&self) -> Result<(Snapshot, ObjectObs, Situation)> {
        let snapshot = self.inner.snapshot_on(self.cluster, self.cx, self.job).await?;
        let obs = pick(self.inner.observe(&snapshot, edge::now()), self.object)?;
        let situation = Situation {
            ended: obs.state == ObjectState::Ended,
            pods_remaining: ranks::remaining(&snapshot, &self.object.name),
        };
        Ok((snapshot, obs, situation))
    }

    /// The TrainJob's Workload (Kueue mode): one list by the TrainJob's UID, the label
    /// Kueue gives its Workloads. Only when that finds not exactly one is the whole job
    /// read, so that the refusal says why (the TrainJob gone, or no Workload made). What
    /// the edit decides on is read again after the Workload either way.
    async fn workload(&self) -> Result<ObjectRef> {
        let workloads = self.cluster.objects(WORKLOAD, &self.inner.settings.namespace);
        let by_uid = format!("{}={}", keys::KUEUE_JOB_UID, self.object.uid);
        if let [only] = workloads.list_whole(self.cx, &by_uid).await?.as_slice() {
            let mut reference = self.object.clone();
            (reference.name, reference.uid) =
                (json::name(only).to_owned(), json::uid(only).to_owned());
            return Ok(reference);
        }
        let (snapshot, obs, _) = self.read().await?;
        workload_of(&snapshot, &obs)
    }

    /// Reads `target`, then what the model needs to know of the TrainJob, lets `decide`
    /// edit the target, and writes it if it changed, with the UID it must still have.
    /// On a conflict all of it is read again: each try decides from what it just read,
    /// so a TrainJob that ended between two tries is seen to have ended.
    async fn edit(
        &self,
        resource: Resource,
        target: &ObjectRef,
        mut decide: impl FnMut(&mut Value, &Situation) -> Result<Edit>,
    ) -> Result<()> {
        let objects = self.cluster.objects(resource, &self.inner.settings.namespace);
        // Read after the target, so nothing the decision rests on is older than the
        // resource version the write is conditioned on.
        let learn = || async { self.read().await.map(|(_, _, situation)| situation) };
        objects
            .read_learn_modify_write(
                self.cx,
                RequestClass::HoldWrite,
                &target.name,
                learn,
                |current, situation| {
                    if json::uid(current) != target.uid {
                        return Err(Error::not_found(format!(
                            "{} {} is now held by another UID than {}",
                            resource.kind, target.name, target.uid
                        )));
                    }
                    decide(current, &situation)
                },
            )
            .await
            .map(drop)
    }
}

/// The Workload of a TrainJob in Kueue mode; without one, holds are refused.
fn workload_of(snapshot: &Snapshot, obs: &ObjectObs) -> Result<ObjectRef> {
    let found = snapshot
        .workloads
        .iter()
        .find(|w| w.meta.label(keys::KUEUE_JOB_UID) == Some(obs.object.uid.as_str()));
    let Some(workload) = found else {
        return Err(Error::rejected(format!(
            "TrainJob {} has no Workload: Kueue has not admitted it to a queue",
            obs.object.name
        )));
    };
    let mut reference = obs.object.clone();
    reference.name = workload.meta.name().to_owned();
    reference.uid = workload.meta.uid().to_owned();
    Ok(reference)
}
