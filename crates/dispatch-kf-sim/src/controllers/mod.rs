//! The controllers, run in a fixed order until nothing changes (`settle`). Each is a
//! function of the state and the virtual clock, so a run is deterministic. Each looks
//! only at the objects a change concerns (`wake.rs`), or at a work list the store
//! indexes (the scheduler's unscheduled pods, the garbage collector's objects being
//! deleted and orphans).

pub(crate) mod gc;
pub(crate) mod job;
mod job_pods;
pub(crate) mod jobset;
mod jobset_jobs;
pub(crate) mod kubelet;
pub(crate) mod kueue;
mod kueue_flavors;
pub(crate) mod nodes;
pub(crate) mod scheduler;
mod sha1;
mod snapshot;
pub(crate) mod trainer;
pub(crate) mod util;
pub(crate) mod wake;

use crate::store::State;

/// The field manager of what kube-controller-manager's controllers write (the Job
/// controller, the garbage collector, the node lifecycle controller, pod GC).
pub(crate) const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";
/// The field manager of what the kubelet writes.
pub(crate) const KUBELET: &str = "kubelet";
/// The field manager of what the scheduler writes.
pub(crate) const KUBE_SCHEDULER: &str = "kube-scheduler";

/// At most this many passes per settle; a controller pair that keeps rewriting each
/// other's objects stops here rather than hanging the sim.
const MAX_PASSES: usize = 1000;

/// Runs every controller until a whole pass changes nothing.
pub(crate) fn settle(state: &mut State) {
    for _ in 0..MAX_PASSES {
        let before = state.store.rv();
        kueue::run(state);
        trainer::run(state);
        jobset::run(state);
        if !state.controller_manager_down {
            job::run(state);
        }
        scheduler::run(state);
        kubelet::run(state);
        if !state.controller_manager_down {
            nodes::run(state);
            gc::run(state);
        }
        if state.store.rv() == before {
            return;
        }
    }
    // Stopped before the end: the next settle looks at everything, as this one would
    // have gone on doing.
    state.wakes.everything();
}
