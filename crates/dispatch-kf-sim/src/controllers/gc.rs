//! The garbage collector, after kube-controller-manager's: dependents whose owners are
//! all gone are deleted (background) once they have been orphans for the configured lag;
//! the `orphan` finalizer strips owner references from dependents; the
//! `foregroundDeletion` finalizer deletes dependents first, then the owner.

use std::collections::BTreeSet;

use jiff::SignedDuration;
use serde_json::Value;

use crate::delete::{self, DeleteOptions, Propagation};
use crate::state::State;
use crate::store::Key;

fn uid(v: &Value) -> String {
    v.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string()
}

fn owner_uids(v: &Value) -> Vec<String> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|o| o.get("uid")?.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn has_finalizer(v: &Value, name: &str) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x == name))
}

fn dependents(state: &State, owner: &str) -> Vec<Key> {
    state
        .store
        .all()
        .filter(|(_, v)| owner_uids(v).iter().any(|u| u == owner))
        .map(|(k, _)| k.clone())
        .collect()
}

pub(crate) fn run(state: &mut State) {
    let owners: Vec<(Key, Value)> = state
        .store
        .all()
        .filter(|(_, v)| v.pointer("/metadata/deletionTimestamp").is_some())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, obj) in owners {
        let owner = uid(&obj);
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
            delete::remove_finalizer(state, &key, "orphan");
        }
        if has_finalizer(&obj, "foregroundDeletion") {
            let deps = dependents(state, &owner);
            if deps.is_empty() {
                delete::remove_finalizer(state, &key, "foregroundDeletion");
            }
            for dep in deps {
                let pending = state
                    .store
                    .get(&dep)
                    .is_some_and(|d| d.pointer("/metadata/deletionTimestamp").is_some());
                if !pending {
                    let opts = DeleteOptions {
                        propagation: Some(Propagation::Foreground),
                        ..Default::default()
                    };
                    let _ = delete::delete(state, &dep, &opts);
                }
            }
        }
    }
    // Orphans: every owner reference names a UID that no object has.
    let live: BTreeSet<String> = state.store.all().map(|(_, v)| uid(v)).collect();
    let orphans: Vec<Key> = state
        .store
        .all()
        .filter(|(_, v)| {
            let o = owner_uids(v);
            !o.is_empty()
                && o.iter().all(|u| !live.contains(u))
                && v.pointer("/metadata/deletionTimestamp").is_none()
        })
        .map(|(k, _)| k.clone())
        .collect();
    state.gc_seen.retain(|k, _| orphans.contains(k));
    let lag = SignedDuration::try_from(state.gc_lag).unwrap_or(SignedDuration::MAX);
    for k in orphans {
        let now = state.now;
        let seen = *state.gc_seen.entry(k.clone()).or_insert(now);
        if now >= seen.checked_add(lag).unwrap_or(seen) || lag.is_zero() {
            let opts =
                DeleteOptions { propagation: Some(Propagation::Background), ..Default::default() };
            let _ = delete::delete(state, &k, &opts);
            state.gc_seen.remove(&k);
        }
    }
}
