//! Accessors over an object's fields: a string at a pointer, its UID and owners, its
//! labels, deletion and finalizers, suspension, a pod's phase. Each rule is spelt here
//! once, and the store, the registry, the controllers and the handlers read objects
//! through it.

use serde_json::{Value, json};

/// The string at `ptr`, or `""`.
pub(crate) fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

/// An object's UID, or `""`.
pub(crate) fn uid(obj: &Value) -> &str {
    str_at(obj, "/metadata/uid")
}

/// The UIDs an object's owner references name (controller or not).
pub(crate) fn owner_uids(obj: &Value) -> impl Iterator<Item = &str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("uid")?.as_str())
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

/// Whether the object's deletion has started (it has a `deletionTimestamp`).
pub(crate) fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

/// The object's finalizers (empty when it has none).
pub(crate) fn finalizers(obj: &Value) -> &[Value] {
    obj.pointer("/metadata/finalizers").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Whether an object carries a finalizer.
pub(crate) fn has_finalizer(obj: &Value, name: &str) -> bool {
    finalizers(obj).iter().any(|x| x == name)
}

/// A label's value, or `""`.
pub(crate) fn label<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// An object's labels with string values (the ones a selector can match).
pub(crate) fn labels(obj: &Value) -> impl Iterator<Item = (&str, &str)> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
}

/// Whether `spec.suspend` is true.
pub(crate) fn suspended(obj: &Value) -> bool {
    obj.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false)
}

/// A pod's phase, or `""`.
pub(crate) fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase")
}

/// Whether a pod has finished (`Succeeded` or `Failed`).
pub(crate) fn terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}
