//! Which objects each controller must look at again. Every change the store journals
//! wakes the units (the objects a controller reconciles one at a time) it concerns: the
//! object itself, the owner a child's change concerns, the children an owner's change
//! concerns; a change to something many units read (a node, a runtime, a queue) wakes
//! every unit of the controllers that read it. A unit nothing woke would reconcile to no
//! change, as the last settle ended with nothing left to change; so reconciling only the
//! woken units, in key order, writes what a pass over every unit would.
//!
//! The clock wakes only what asked for it: a controller whose answer for a unit will
//! change at a known time (a deadline, a toleration, a requeue backoff) sets a timer
//! for it (`at`), as controller-runtime's `RequeueAfter` does, and moving the clock past
//! that time wakes the unit. So a second of virtual time costs the units due in it,
//! not a pass over every object of the cluster.

use std::ops::Bound;

use jiff::Timestamp;
use serde_json::Value;

use super::snapshot::SUFFIX;
use crate::plain::object::conditions::is_true;
use crate::plain::object::keys::workload_gpus;
use crate::plain::object::meta::{owner_uids, uid};
use crate::plain::resources::{RESOURCES, id};
use crate::store::State;
use crate::store::{Event, EventType, Key};

/// The controllers that reconcile woken units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Ctl {
    /// Kueue's side of a TrainJob: its Workload exists and carries its gate (TrainJobs).
    KueueJobs,
    /// Kueue's Workload reconcile (Workloads).
    KueueWorkloads,
    /// The Trainer (TrainJobs).
    Trainer,
    /// The JobSet controller (JobSets).
    JobSet,
    /// The Job controller (Jobs).
    Job,
    /// The Job controller's orphan-pod handling (Pods).
    JobOrphans,
    /// The kubelet (Pods).
    Kubelet,
    /// Node lifecycle and pod GC (Pods).
    Nodes,
}

const ALL: [Ctl; 8] = [
    Ctl::KueueJobs,
    Ctl::KueueWorkloads,
    Ctl::Trainer,
    Ctl::JobSet,
    Ctl::Job,
    Ctl::JobOrphans,
    Ctl::Kubelet,
    Ctl::Nodes,
];

impl Ctl {
    /// The resource of the controller's units.
    fn unit(self) -> &'static str {
        match self {
            Ctl::KueueJobs | Ctl::Trainer => "trainjobs",
            Ctl::KueueWorkloads => "workloads",
            Ctl::JobSet => "jobsets",
            Ctl::Job => "jobs",
            Ctl::JobOrphans | Ctl::Kubelet | Ctl::Nodes => "pods",
        }
    }
}

/// Forgets the woken units of `ctl` (a controller that is not running).
pub(crate) fn clear(state: &mut State, ctl: Ctl) {
    state.wakes.queue(ctl as usize).clear();
}

/// Wakes `key` for `ctl` once the clock reaches `when`: the controller's answer for it
/// changes then. A timer of a unit that is gone by then, or that no longer needs it,
/// wakes a unit that reconciles to no change.
pub(crate) fn at(state: &mut State, ctl: Ctl, key: &Key, when: Timestamp) {
    if when <= state.now {
        wake(state, ctl, key.clone());
    } else {
        state.wakes.timers.insert((when, ctl as usize, key.clone()));
    }
}

/// Wakes the units whose timers the clock has reached.
fn ring(state: &mut State) {
    while state.wakes.timers.first().is_some_and(|(when, _, _)| *when <= state.now) {
        let Some((_, ctl, key)) = state.wakes.timers.pop_first() else { break };
        wake(state, ALL[ctl], key);
    }
}

fn wake(state: &mut State, ctl: Ctl, key: Key) {
    state.wakes.queue(ctl as usize).insert(key);
}

fn wake_all(state: &mut State, ctl: Ctl) {
    let keys: Vec<Key> = state.store.range(id(ctl.unit()), "").map(|(k, _)| k.clone()).collect();
    state.wakes.queue(ctl as usize).extend(keys);
}

/// The objects of `plural` an event's object (before or after) has owner references to.
fn owners(state: &State, ev: &Event, plural: &str) -> Vec<Key> {
    let res = id(plural);
    let index = state.store.index();
    let uids = owner_uids(&ev.object).chain(ev.old.iter().flat_map(|o| owner_uids(o)));
    uids.flat_map(|u| index.by_uid(u)).filter(|k| k.res == res).cloned().collect()
}

/// The objects of `plural` with an owner reference to the event's object.
fn dependents(state: &State, ev: &Event, plural: &str) -> Vec<Key> {
    let res = id(plural);
    let index = state.store.index();
    index.dependents(uid(&ev.object)).filter(|k| k.res == res).cloned().collect()
}

/// What of a Workload counts in its ClusterQueue's used quota.
fn reservation(wl: Option<&Value>) -> Option<(String, i64)> {
    let wl = wl.filter(|w| is_true(w, "QuotaReserved"))?;
    let cq = wl.pointer("/status/admission/clusterQueue").and_then(Value::as_str);
    Some((cq.unwrap_or_default().to_string(), workload_gpus(wl)))
}

/// Wakes the units one change concerns.
fn concern(state: &mut State, ev: &Event) {
    let key = &ev.key;
    let at = |plural: &str| Key::new(id(plural), &key.ns, &key.name);
    match RESOURCES[key.res].plural {
        "trainjobs" => {
            wake(state, Ctl::Trainer, key.clone());
            wake(state, Ctl::KueueJobs, key.clone());
            for wl in dependents(state, ev, "workloads") {
                wake(state, Ctl::KueueWorkloads, wl);
            }
        }
        "jobsets" => {
            wake(state, Ctl::JobSet, key.clone());
            wake(state, Ctl::Trainer, at("trainjobs"));
        }
        "configmaps" => {
            if let Some(tj) = key.name.strip_suffix(SUFFIX) {
                wake(state, Ctl::Trainer, Key::new(id("trainjobs"), &key.ns, tj));
            }
        }
        "trainingruntimes" | "clustertrainingruntimes" => wake_all(state, Ctl::Trainer),
        "workloads" => {
            wake(state, Ctl::KueueWorkloads, key.clone());
            for tj in owners(state, ev, "trainjobs") {
                wake(state, Ctl::KueueJobs, tj);
            }
            let old = if ev.typ == EventType::Added { None } else { ev.old.as_deref() };
            let new = (ev.typ != EventType::Deleted).then_some(&*ev.object);
            if reservation(old) != reservation(new) {
                wake_all(state, Ctl::KueueWorkloads);
            }
        }
        "localqueues" | "clusterqueues" => wake_all(state, Ctl::KueueWorkloads),
        "jobs" => {
            wake(state, Ctl::Job, key.clone());
            for js in owners(state, ev, "jobsets") {
                wake(state, Ctl::JobSet, js);
            }
            if ev.typ != EventType::Modified {
                for pod in dependents(state, ev, "pods") {
                    wake(state, Ctl::JobOrphans, pod);
                }
            }
        }
        "pods" => {
            for ctl in [Ctl::JobOrphans, Ctl::Kubelet, Ctl::Nodes] {
                wake(state, ctl, key.clone());
            }
            for job in owners(state, ev, "jobs") {
                wake(state, Ctl::Job, job);
            }
        }
        "nodes" => {
            wake_all(state, Ctl::Kubelet);
            wake_all(state, Ctl::Nodes);
        }
        _ => {}
    }
}

/// Reads the store's journal into the woken units.
fn note(state: &mut State) {
    let changes = state.store.take_changes();
    if changes.overflowed {
        state.wakes.everything = true;
    }
    if std::mem::take(&mut state.wakes.everything) {
        for ctl in ALL {
            wake_all(state, ctl);
        }
    }
    ring(state);
    for ev in changes.events {
        if ev.typ == EventType::Added {
            state.wakes.born.insert(ev.key.clone());
        }
        concern(state, &ev);
    }
}

/// Runs `reconcile` on each woken unit of `ctl`, in key order, as a pass over every
/// unit would reach it: a unit woken by an earlier unit's reconcile is reached in this
/// loop when it comes later in key order and existed when the loop began, else in the
/// next pass. `reconcile` gets the unit as stored.
pub(crate) fn each(
    state: &mut State,
    ctl: Ctl,
    mut reconcile: impl FnMut(&mut State, &Key, Value),
) {
    note(state);
    state.wakes.born.clear();
    let mut cursor: Option<Key> = None;
    loop {
        let wakes = &state.wakes;
        let from = cursor.clone().map_or(Bound::Unbounded, Bound::Excluded);
        let born = &wakes.born;
        let dirty = &wakes.dirty;
        let next = dirty
            .get(ctl as usize)
            .into_iter()
            .flat_map(|d| d.range((from.clone(), Bound::Unbounded)))
            .find(|k| !born.contains(*k))
            .cloned();
        let Some(key) = next else { break };
        state.wakes.queue(ctl as usize).remove(&key);
        if let Some(unit) = state.store.get(&key).cloned() {
            state.wakes.reconciled += 1;
            reconcile(state, &key, unit);
        }
        cursor = Some(key);
        note(state);
    }
}
