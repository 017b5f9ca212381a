//! The last state of a TrainJob's deleted pods, kept so that a classification after
//! they are gone still reads the rank that failed first (a teardown deletes it first):
//! [`Kept`], bounded by the job's own ranks, not a constant. The Backend keeps one per
//! TrainJob name while a Watch is open (`docs/backend.md#watch-and-the-deleted-pods-evidence`);
//! the cause controller one per TrainJob it watches (`docs/events.md`).

use std::collections::{BTreeMap, VecDeque};

use crate::internal::ranks;
use crate::keys;
use crate::view::Pod;

/// How many instances of a TrainJob name are kept (an instance is a JobSet, told by
/// the UID its pods carry): the current one, and the one before it.
const INSTANCES_KEPT: usize = 2;
/// How many executions of an instance are kept whole, the newest by classification's
/// order: the current one, and the one before it.
const EXECUTIONS_KEPT: usize = 2;
/// How many pods that carry no execution (not dispatch's labels) are kept per
/// instance; the oldest go first.
pub const UNPLACED_KEPT: usize = 256;

/// The deleted pods kept of one TrainJob name: its instances, the newest last.
#[derive(Clone, Debug, Default)]
pub struct Kept {
    instances: VecDeque<Instance>,
}

/// The deleted pods kept of one instance (the JobSet UID they carry, empty for none).
#[derive(Clone, Debug)]
struct Instance {
    uid: String,
    /// By execution, in classification's order; `None` for pods that carry none, the
    /// oldest first.
    executions: BTreeMap<Option<(u64, u64)>, VecDeque<Pod>>,
}

impl Kept {
    /// Keeps `pod`, in place of an earlier capture of it, then lets go of what no
    /// longer can matter: instances and executions older than the newest kept.
    pub fn keep(&mut self, pod: Pod) {
        let uid = pod.meta.label(keys::JOBSET_UID).unwrap_or_default().to_owned();
        let at = self.instances.iter().position(|i| i.uid == uid);
        let mut instance = match at.and_then(|at| self.instances.remove(at)) {
            Some(instance) => instance,
            None => Instance { uid, executions: BTreeMap::new() },
        };
        for pods in instance.executions.values_mut() {
            pods.retain(|p| p.meta.uid() != pod.meta.uid());
        }
        let pods = instance.executions.entry(ranks::execution_order(&pod)).or_default();
        pods.push_back(pod);
        if let Some(unplaced) = instance.executions.get_mut(&None) {
            while unplaced.len() > UNPLACED_KEPT {
                unplaced.pop_front();
            }
        }
        // The executions in classification's order, oldest first, after the unplaced.
        let placed: Vec<_> = instance.executions.keys().flatten().copied().collect();
        for oldest in placed.iter().rev().skip(EXECUTIONS_KEPT) {
            instance.executions.remove(&Some(*oldest));
        }
        instance.executions.retain(|_, pods| !pods.is_empty());
        self.instances.push_back(instance);
        while self.instances.len() > INSTANCES_KEPT {
            self.instances.pop_front();
        }
    }

    /// Every pod kept, by instance (the oldest first), then by execution.
    pub fn pods(&self) -> impl Iterator<Item = &Pod> {
        self.instances.iter().flat_map(|i| i.executions.values().flatten())
    }
}
