//! The garbage collector, after kube-controller-manager's: dependents whose owners are
//! all gone are deleted (background) once they have been orphans for the configured lag;
//! the `orphan` finalizer strips owner references from dependents; the
//! `foregroundDeletion` finalizer deletes dependents first, then the owner.

use jiff::SignedDuration;
use serde_json::Value;

use super::KUBE_CONTROLLER_MANAGER;
use super::util::delete_once;
use crate::plain::object::meta::{deleting, has_finalizer, owner_uids, uid};
use crate::registry::{self, Propagation};
use crate::store::{Key, State};

/// The objects with an owner reference to `owner`, in key order (from the store's index).
fn dependents(state: &State, owner: &str) -> Vec<Key> {
    state.store.index().dependents(owner).cloned().collect()
}

pub(crate) fn run(state: &mut State) {
    // The store's index holds the objects being deleted.
    let owners: Vec<(Key, Value)> = state
        .store
        .index()
        .deleting()
        .iter()
        .filter_map(|k| Some((k.clone(), state.store.get(k)?.clone())))
        .collect();
    for (key, obj) in owners {
        if has_finalizer(&obj, "orphan") {
            orphan_dependents(state, &key, uid(&obj));
        }
        if has_finalizer(&obj, "foregroundDeletion") {
            delete_dependents_first(state, &key, uid(&obj));
        }
    }
    delete_orphans(state);
}

/// The `orphan` finalizer: each dependent loses its owner reference to `owner`, then the
/// finalizer goes.
fn orphan_dependents(state: &mut State, key: &Key, owner: &str) {
    for dep in dependents(state, owner) {
        let Some(mut d) = state.store.get(&dep).cloned() else { continue };
        if let Some(refs) = d.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut)
        {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner));
        }
        let emptied = d
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        if emptied && let Some(m) = d["metadata"].as_object_mut() {
            m.remove("ownerReferences");
        }
        registry::write(state, &dep, d, KUBE_CONTROLLER_MANAGER);
    }
    registry::remove_finalizer(state, key, "orphan");
}

/// The `foregroundDeletion` finalizer: the dependents are deleted (in the foreground
/// too); once none is left, the finalizer goes.
fn delete_dependents_first(state: &mut State, key: &Key, owner: &str) {
    let deps = dependents(state, owner);
    if deps.is_empty() {
        registry::remove_finalizer(state, key, "foregroundDeletion");
    }
    for dep in deps {
        delete_once(state, &dep, Some(Propagation::Foreground));
    }
}

/// Orphans (every owner reference names a UID no object has) are deleted in the
/// background once they have been orphans for the lag. The candidates are the
/// dependents of UIDs no object has (the store's index).
fn delete_orphans(state: &mut State) {
    let index = state.store.index();
    let orphans: Vec<Key> = index
        .dangling_dependents()
        .into_iter()
        .filter(|k| {
            state
                .store
                .get(k)
                .is_some_and(|v| owner_uids(v).all(|u| !index.live(u)) && !deleting(v))
        })
        .collect();
    state.gc_seen.retain(|k, _| orphans.contains(k));
    let lag = SignedDuration::try_from(state.gc_lag).unwrap_or(SignedDuration::MAX);
    for k in orphans {
        let now = state.now;
        let seen = *state.gc_seen.entry(k.clone()).or_insert(now);
        if now >= seen.checked_add(lag).unwrap_or(seen) || lag.is_zero() {
            delete_once(state, &k, Some(Propagation::Background));
            state.gc_seen.remove(&k);
        }
    }
}
