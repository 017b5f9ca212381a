//! Small helpers the controllers share: conditions, owner references, reading fields.

use serde_json::{Value, json};

/// Sets a condition (`type`, `status`, `reason`, `message`); `lastTransitionTime` moves
/// only when the status changes. Returns whether anything changed.
pub(crate) fn set_condition(
    obj: &mut Value,
    typ: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> bool {
    if !obj["status"].is_object() {
        obj["status"] = json!({});
    }
    if !obj["status"]["conditions"].is_array() {
        obj["status"]["conditions"] = json!([]);
    }
    let Some(conds) = obj["status"]["conditions"].as_array_mut() else { return false };
    let mut c = json!({"type": typ, "status": status});
    if !reason.is_empty() {
        c["reason"] = json!(reason);
    }
    if !message.is_empty() {
        c["message"] = json!(message);
    }
    match conds.iter_mut().find(|x| x["type"] == typ) {
        Some(old) => {
            let same = old["status"] == c["status"]
                && old.get("reason") == c.get("reason")
                && old.get("message") == c.get("message");
            if same {
                return false;
            }
            c["lastTransitionTime"] = if old["status"] == status {
                old["lastTransitionTime"].clone()
            } else {
                json!(now)
            };
            *old = c;
        }
        None => {
            c["lastTransitionTime"] = json!(now);
            conds.push(c);
        }
    }
    true
}

/// The condition of a type, if present.
pub(crate) fn condition<'a>(obj: &'a Value, typ: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == typ)
}

/// Whether a condition of this type is True.
pub(crate) fn is_true(obj: &Value, typ: &str) -> bool {
    condition(obj, typ).is_some_and(|c| c["status"] == "True")
}

/// A controller owner reference to `owner`.
pub(crate) fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// Whether `obj` is controlled by the object with `uid`.
pub(crate) fn controlled_by(obj: &Value, uid: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid && r["controller"] == true))
}

pub(crate) fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

pub(crate) fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

/// A label's value, or `""`.
pub(crate) fn label<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A pod's phase, or `""`.
pub(crate) fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase")
}

/// Whether a pod has finished (`Succeeded` or `Failed`).
pub(crate) fn terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Whether `spec.suspend` is true.
pub(crate) fn suspended(obj: &Value) -> bool {
    obj.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false)
}

/// Whether an object carries a finalizer.
pub(crate) fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x == name))
}

/// The objects of a resource in a namespace controlled by the object with `uid`, by name
/// (from the store's index of dependents).
pub(crate) fn owned(
    state: &crate::state::State,
    plural: &str,
    ns: &str,
    uid: &str,
) -> Vec<(crate::store::Key, Value)> {
    let res = crate::resources::id(plural);
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
    state: &mut crate::state::State,
    key: &crate::store::Key,
    propagation: Option<crate::delete::Propagation>,
) {
    let pending = state.store.get(key).is_none_or(deleting);
    if !pending {
        let opts = crate::delete::DeleteOptions { propagation, ..Default::default() };
        let _ = crate::delete::delete(state, key, &opts);
    }
}

/// Whether every field at `ptrs` is absent, null or an object: the shape a controller
/// needs before it writes into those fields. A malformed object is left alone rather
/// than making the controller panic.
pub(crate) fn objects_at(v: &Value, ptrs: &[&str]) -> bool {
    ptrs.iter().all(|p| v.pointer(p).is_none_or(|x| x.is_null() || x.is_object()))
}
