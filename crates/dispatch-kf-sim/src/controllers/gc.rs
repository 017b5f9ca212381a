//! The garbage collector, after kube-controller-manager's: dependents whose owners are
//! all gone are deleted (background) once they have been orphans for the configured lag;
//! the `orphan` finalizer strips owner references from dependents; the
//! `foregroundDeletion` finalizer deletes dependents first, then the owner.

use jiff::SignedDuration;
use serde_json::Value;

use crate::object::meta::{deleting, has_finalizer, owner_uids, uid};
use crate::registry::{self, DeleteOptions, Propagation};
use crate::store::Key;
use crate::store::State;

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
        let owner = uid(&obj).to_string();
        if has_finalizer(&obj, "orphan") {
            for dep in dependents(state, &owner) {
                let Some(mut d) = state.store.get(&dep).cloned() else { continue };
                if let Some(refs) =
                    d.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner.as_str()));
                }
                let emptied = d
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty);
                if emptied && let Some(m) = d["metadata"].as_object_mut() {
                    m.remove("ownerReferences");
                }
                state.store.put(dep, d);
            }
            registry::remove_finalizer(state, &key, "orphan");
        }
        if has_finalizer(&obj, "foregroundDeletion") {
            let deps = dependents(state, &owner);
            if deps.is_empty() {
                registry::remove_finalizer(state, &key, "foregroundDeletion");
            }
            for dep in deps {
                let pending = state.store.get(&dep).is_some_and(deleting);
                if !pending {
                    let opts = DeleteOptions {
                        propagation: Some(Propagation::Foreground),
                        ..Default::default()
                    };
                    let _ = registry::delete(state, &dep, &opts);
                }
            }
        }
    }
    // Orphans: every owner reference names a UID that no object has. The candidates are
    // the dependents of UIDs no object has (the store's index).
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
            let opts =
                DeleteOptions { propagation: Some(Propagation::Background), ..Default::default() };
            let _ = registry::delete(state, &k, &opts);
            state.gc_seen.remove(&k);
        }
    }
}
