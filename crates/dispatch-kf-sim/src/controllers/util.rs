//! Helpers the controllers share over the state: the objects an owner controls,
//! a delete that happens once, a shape check before a write.

use serde_json::Value;

use crate::plain::object::meta::{controlled_by, deleting};

/// The objects of a resource in a namespace controlled by the object with `uid`, by name
/// (from the store's index of dependents).
pub(crate) fn owned(
    state: &crate::store::State,
    plural: &str,
    ns: &str,
    uid: &str,
) -> Vec<(crate::store::Key, Value)> {
    let res = crate::plain::resources::id(plural);
    state
        .store
        .index()
        .dependents(uid)
        .filter(|k| k.res == res && k.ns == ns)
        .filter_map(|k| Some((k.clone(), state.store.get(k)?.clone())))
        .filter(|(_, v)| controlled_by(v, uid))
        .collect()
}

/// Deletes an object unless its deletion has already started.
pub(crate) fn delete_once(
    state: &mut crate::store::State,
    key: &crate::store::Key,
    propagation: Option<crate::registry::Propagation>,
) {
    let pending = state.store.get(key).is_none_or(deleting);
    if !pending {
        let opts = crate::registry::DeleteOptions { propagation, ..Default::default() };
        let _ = crate::registry::delete(state, key, &opts);
    }
}

/// Whether every field at `ptrs` is absent, null or an object: the shape a controller
/// needs before it writes into those fields. A malformed object is left alone rather
/// than making the controller panic.
pub(crate) fn objects_at(v: &Value, ptrs: &[&str]) -> bool {
    ptrs.iter().all(|p| v.pointer(p).is_none_or(|x| x.is_null() || x.is_object()))
}
