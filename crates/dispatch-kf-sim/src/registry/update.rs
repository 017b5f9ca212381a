//! Update, in the apiserver's order: the name, the resource version, the half of the
//! object the write may change, the server's metadata, finalizers, the kind's
//! admission, the generation; a write that changes nothing stores nothing.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{bump_generation, check_fields, delete, record_and_put};
use crate::plain::apierror::ApiError;
use crate::plain::object::meta::{deleting, finalizers, str_at};
use crate::plain::resources::{RESOURCES, Resource};
use crate::plain::schema::Validation;
use crate::registry::admission;
use crate::store::{Key, State};

/// What a write request's query asks of it, as `CreateOptions`, `UpdateOptions` and
/// `PatchOptions` carry it.
pub(crate) struct WriteOptions {
    /// The manager name for managedFields: `fieldManager`, else the User-Agent up to `/`.
    pub(crate) manager: String,
    /// How fields the kind's schema does not declare are met.
    pub(crate) validation: Validation,
}

/// Whether `new` changes more than `old`'s metadata and status: such a change bumps
/// `metadata.generation`.
fn spec_changed(old: &Value, new: &Value) -> bool {
    !equal_but(old, new, &["metadata", "status"], &[])
}

/// Whether `new` differs from `old` in its status alone (managedFields aside): a write
/// to `/status`.
fn status_only(old: &Value, new: &Value) -> bool {
    equal_but(old, new, &["status"], &["managedFields"])
}

/// Whether two versions of an object differ in nothing but their managed fields.
fn same_but_managed_fields(old: &Value, new: &Value) -> bool {
    equal_but(old, new, &[], &["managedFields"])
}

/// Whether `a` and `b` are equal but for their top-level `fields` and the `metadata`
/// keys `meta`. Compared in place, without copies: every write compares.
fn equal_but(a: &Value, b: &Value, fields: &[&str], meta: &[&str]) -> bool {
    equal_entries(a, b, fields, |key, x, y| {
        if key == "metadata" { equal_entries(x, y, meta, |_, x, y| x == y) } else { x == y }
    })
}

/// Whether `a` and `b`, `skip`'s keys aside, are objects with the same keys whose values
/// `same` finds alike (or, not both objects, are equal).
fn equal_entries(
    a: &Value,
    b: &Value,
    skip: &[&str],
    same: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    let kept = |(k, _): &(&String, &Value)| !skip.contains(&k.as_str());
    a.iter().filter(kept).count() == b.iter().filter(kept).count()
        && a.iter().filter(kept).all(|(k, x)| b.get(k).is_some_and(|y| same(k, x, y)))
}

/// Writes `new` over `old` after the checks every update path shares, in the
/// apiserver's order: the name, the resource version, the half of the object the
/// request may change (`sub` is `status` for the status subresource), the server's
/// metadata, finalizers, the kind's admission, the generation; a write that changes
/// nothing stores nothing.
pub(crate) fn commit(
    state: &mut State,
    key: &Key,
    sub: &str,
    old: &Value,
    mut new: Value,
    options: &WriteOptions,
    operation: &str,
) -> Result<Value, ApiError> {
    let res = &RESOURCES[key.res];
    check_fields(state, res, &key.name, &mut new, options.validation)?;
    if new.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| n != key.name) {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    let current = resource_version(old).to_owned();
    let sent = resource_version(&new);
    if !sent.is_empty() && sent != current {
        return Err(ApiError::conflict(res, &key.name));
    }
    keep_the_other_half(res, sub, old, &mut new);
    keep_the_servers_metadata(res, old, &mut new);
    finalizers_only_shrink_once_deleting(res, &key.name, old, &new)?;
    if sub.is_empty() {
        admission::admit(state, res, &key.ns, Some(old), &mut new)?;
    }
    if spec_changed(old, &new) {
        bump_generation(old, &mut new);
    }
    new["metadata"]["resourceVersion"] = json!(current);
    if same_but_managed_fields(old, &new) {
        // A no-op write stores nothing and keeps the resourceVersion, as the apiserver does.
        return Ok(old.clone());
    }
    Ok((*store(state, key, new, &options.manager, operation, sub)).clone())
}

/// A controller's write of an object it read and changed, as the apiserver meets it:
/// the generation moves when more than metadata and status changed, managedFields
/// record what `manager` changed (under the status subresource when only the status
/// did), and the deletion finishes if the write took the last finalizer away. A write
/// that changes nothing, or of an object gone meanwhile, stores nothing. Unlike
/// [`commit`] it checks neither resourceVersion, schema nor admission: the controllers
/// here write only what those would let through.
pub(crate) fn write(state: &mut State, key: &Key, mut new: Value, manager: &str) {
    let Some(old) = state.store.get(key) else { return };
    if same_but_managed_fields(old, &new) {
        return;
    }
    if spec_changed(old, &new) {
        bump_generation(old, &mut new);
    }
    let sub = if status_only(old, &new) { "status" } else { "" };
    store(state, key, new, manager, "Update", sub);
}

/// Stores an update's result, recording its managedFields; removes the object when the
/// write [`delete::finished`] its deletion. Returns what was stored.
fn store(
    state: &mut State,
    key: &Key,
    new: Value,
    manager: &str,
    operation: &str,
    sub: &str,
) -> Arc<Value> {
    let finished = delete::finished(&new);
    let stored = record_and_put(state, key.clone(), new, manager, operation, sub);
    if finished {
        state.store.remove(key);
    }
    stored
}

fn resource_version(object: &Value) -> &str {
    str_at(object, "/metadata/resourceVersion")
}

/// A write to `/status` changes only the status; a write to the object itself changes
/// everything but the status, for a kind with a status subresource.
fn keep_the_other_half(res: &Resource, sub: &str, old: &Value, new: &mut Value) {
    let kept = if sub == "status" {
        let status = new.get("status").cloned();
        *new = old.clone();
        status
    } else if res.status {
        old.get("status").cloned()
    } else {
        return;
    };
    match kept {
        Some(status) => new["status"] = status,
        None => {
            if let Some(m) = new.as_object_mut() {
                m.remove("status");
            }
        }
    }
}

/// System metadata, the namespace, `apiVersion` and `kind` are the server's.
fn keep_the_servers_metadata(res: &Resource, old: &Value, new: &mut Value) {
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old.pointer(&format!("/metadata/{f}")) {
            Some(v) => new["metadata"][f] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(f);
                }
            }
        }
    }
    new["metadata"]["namespace"] = old["metadata"]["namespace"].clone();
    if !res.namespaced
        && let Some(m) = new["metadata"].as_object_mut()
    {
        m.remove("namespace");
    }
    new["apiVersion"] = json!(res.api_version());
    new["kind"] = json!(res.kind);
}

/// Once deletion has started, finalizers may only be removed.
fn finalizers_only_shrink_once_deleting(
    res: &Resource,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if !deleting(old) {
        return Ok(());
    }
    let before = finalizers(old);
    match new.pointer("/metadata/finalizers").and_then(Value::as_array) {
        Some(after) if after.iter().any(|f| !before.contains(f)) => Err(ApiError::invalid(
            res,
            name,
            vec![("FieldValueForbidden", "metadata.finalizers".into(), "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted".into())],
        )),
        _ => Ok(()),
    }
}
