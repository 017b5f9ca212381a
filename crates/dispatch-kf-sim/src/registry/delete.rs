//! Deletion: preconditions (uid, resourceVersion), propagation policies (Background,
//! Foreground through the `foregroundDeletion` finalizer, Orphan through the `orphan`
//! finalizer), finalizers, and graceful deletion of pods bound to a node (they stay
//! Terminating until the kubelet confirms).

use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::plain::apierror::ApiError;
use crate::plain::object::meta::{deleting, finalizers, str_at, terminal, uid};
use crate::plain::resources::{RESOURCES, Resource};
use crate::store::{Key, State, fmt_time};

/// Propagation policy of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete now; the garbage collector deletes dependents afterwards.
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
    /// Remove owner references from dependents, then delete.
    Orphan,
}

/// Options of one delete.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    pub(crate) uid: Option<String>,
    pub(crate) rv: Option<String>,
    pub(crate) propagation: Option<Propagation>,
    pub(crate) grace: Option<i64>,
}

/// What a delete did.
pub(crate) enum Deleted {
    /// Gone now; the last state of the object.
    Gone(Value),
    /// Deletion pending (finalizers or grace period); the object now.
    Pending(Value),
}

/// Deletes one object; used by the DELETE handler and by controllers.
pub(crate) fn delete(
    state: &mut State,
    key: &Key,
    opts: &DeleteOptions,
) -> Result<Deleted, ApiError> {
    let res = &RESOURCES[key.res];
    let obj = state.store.get(key).cloned().ok_or_else(|| ApiError::not_found(res, &key.name))?;
    preconditions_hold(res, &key.name, &obj, opts)?;
    let grace = opts.grace.unwrap_or_else(|| {
        obj.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30)
    });
    let graceful = res.kind == "Pod"
        && !str_at(&obj, "/spec/nodeName").is_empty()
        && !terminal(&obj)
        && grace > 0;
    let period = if graceful { grace } else { 0 };
    let mut new = obj.clone();
    // A first delete starts the deletion; a later one may only shorten its grace period
    // (the kubelet's delete with period 0 is how a pod's graceful deletion ends).
    if !deleting(&new) || period < grace_period(&obj) {
        new["metadata"]["deletionTimestamp"] =
            json!(fmt_time(state.now + SignedDuration::from_secs(period)));
        new["metadata"]["deletionGracePeriodSeconds"] = json!(period);
    }
    new["metadata"]["finalizers"] = json!(with_propagation(&obj, opts.propagation));
    if finished(&new) {
        let gone = state.store.remove(key).unwrap_or(obj);
        return Ok(Deleted::Gone(gone));
    }
    if new == obj {
        return Ok(Deleted::Pending(obj));
    }
    Ok(Deleted::Pending((*state.store.put(key.clone(), new)).clone()))
}

/// Whether an object's deletion is finished: it has started, the last finalizer is
/// gone, and no grace period runs (a pod in graceful deletion waits for its kubelet's
/// delete with period 0, as the apiserver keeps a pod whose
/// `deletionGracePeriodSeconds` is not 0). The one rule of when an object goes, for
/// every write: a delete, an update, a finalizer removed.
pub(crate) fn finished(obj: &Value) -> bool {
    deleting(obj) && finalizers(obj).is_empty() && grace_period(obj) == 0
}

/// `metadata.deletionGracePeriodSeconds`, 0 when absent.
fn grace_period(obj: &Value) -> i64 {
    obj.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0)
}

/// The uid and resourceVersion preconditions: 409 when the object is not the one meant.
fn preconditions_hold(
    res: &Resource,
    name: &str,
    obj: &Value,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let rv = str_at(obj, "/metadata/resourceVersion");
    if let Some(want) = &opts.uid
        && want != uid(obj)
    {
        let why = format!(
            "Precondition failed: UID in precondition: {want}, UID in object meta: {}",
            uid(obj)
        );
        return Err(ApiError::conflict_because(res, name, &why));
    }
    if let Some(want) = &opts.rv
        && want != rv
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"
        );
        return Err(ApiError::conflict_because(res, name, &why));
    }
    Ok(())
}

/// The object's finalizers, plus the one its propagation policy adds (`foregroundDeletion`
/// or `orphan`).
fn with_propagation(obj: &Value, propagation: Option<Propagation>) -> Vec<Value> {
    let mut list = finalizers(obj).to_vec();
    let added = match propagation {
        Some(Propagation::Foreground) => "foregroundDeletion",
        Some(Propagation::Orphan) => "orphan",
        _ => return list,
    };
    if !list.iter().any(|x| x == added) {
        list.push(json!(added));
    }
    list
}

/// Removes one finalizer from an object, deleting it when that [`finished`] its
/// deletion.
pub(crate) fn remove_finalizer(state: &mut State, key: &Key, name: &str) {
    let Some(mut obj) = state.store.get(key).cloned() else { return };
    let Some(list) = obj.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) else {
        return;
    };
    let before = list.len();
    list.retain(|f| f != name);
    if list.len() == before {
        return;
    }
    if finished(&obj) {
        state.store.remove(key);
    } else {
        state.store.put(key.clone(), obj);
    }
}
