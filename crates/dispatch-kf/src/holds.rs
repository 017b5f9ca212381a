//! Open, Hold and Release (`spec/gates.md`). The model decides each edit
//! (`dispatch_kf_model::gates`); this module finds the object to edit, tells the model
//! what it learned (ended, pods remaining), and writes with the resource version it read,
//! re-reading on a conflict up to eight tries.

use std::time::Instant;

use dispatch_core::{
    CallContext, Capability, Error, ObjectKind, ObjectObs, ObjectRef, ObjectState, Result,
};
use dispatch_kf_client::resources::{TRAIN_JOB, WORKLOAD};
use dispatch_kf_client::{Edit, RequestClass, Resource, error_map};
use dispatch_kf_model::gates::{self, Change, Situation};
use dispatch_kf_model::{Mode, Snapshot, keys, ranks};
use serde_json::Value;

use crate::find::pick;
use crate::start::{from_value, to_value};
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
        error_map::before_sending(RequestClass::HoldWrite, cx, Instant::now())?;
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
        let snapshot = self.snapshot(cx, &target.job).await?;
        let obs = pick(self.observe(&snapshot, edge::now()), object)?;
        let situation = Situation {
            ended: obs.state == ObjectState::Ended,
            pods_remaining: ranks::remaining_pods(&snapshot, &object.name),
        };
        let kueue = self.settings.mode == Mode::Kueue;
        match (verb, kueue) {
            (Verb::Open, false) => {
                self.edit(cx, TRAIN_JOB, object, |tj| gates::open_plain(tj, &situation)).await
            }
            (Verb::Open, true) => {
                self.edit(cx, TRAIN_JOB, object, |tj| gates::open_kueue(tj, &situation)).await
            }
            (Verb::Hold(k), false) => {
                self.edit(cx, TRAIN_JOB, object, |tj| gates::hold(tj, k, &situation, false)).await
            }
            (Verb::Release(k), false) => {
                self.edit(cx, TRAIN_JOB, object, |tj| gates::release_plain(tj, k, &situation)).await
            }
            (Verb::Hold(k), true) => {
                let workload = self.workload_of(&snapshot, &obs)?;
                self.edit(cx, WORKLOAD, &workload, |wl| gates::hold(wl, k, &situation, true)).await
            }
            (Verb::Release(k), true) => {
                let workload = self.workload_of(&snapshot, &obs)?;
                self.edit(cx, WORKLOAD, &workload, |wl| gates::release_kueue(wl, k)).await
            }
        }
    }

    /// The Workload of a TrainJob in Kueue mode; without one, holds are refused.
    fn workload_of(&self, snapshot: &Snapshot, obs: &ObjectObs) -> Result<ObjectRef> {
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

    /// Reads `object`, lets `decide` edit it, and writes it if it changed, with the
    /// UID it must still have.
    async fn edit(
        &self,
        cx: &CallContext,
        resource: Resource,
        object: &ObjectRef,
        mut decide: impl FnMut(&mut Value) -> Result<Change>,
    ) -> Result<()> {
        let objects = self.cluster.objects(resource, &self.settings.namespace);
        objects
            .read_modify_write(cx, RequestClass::HoldWrite, &object.name, |current| {
                if current.metadata.uid.as_deref() != Some(object.uid.as_str()) {
                    return Err(Error::not_found(format!(
                        "{} {} is now held by another UID than {}",
                        resource.kind, object.name, object.uid
                    )));
                }
                let mut value = to_value(current);
                match decide(&mut value)? {
                    Change::Unchanged => Ok(Edit::Unchanged),
                    Change::Write => {
                        *current = from_value(value)?;
                        Ok(Edit::Write)
                    }
                }
            })
            .await
            .map(drop)
    }
}
