//! Deletion: preconditions (uid, resourceVersion), propagation policies (Background,
//! Foreground through the `foregroundDeletion` finalizer, Orphan through the `orphan`
//! finalizer), finalizers, and graceful deletion of pods bound to a node (they stay
//! Terminating until the kubelet confirms).

use std::collections::BTreeMap;

use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::apierror::ApiError;
use crate::request::ApiReq;
use crate::resources::RESOURCES;
use crate::state::{State, fmt_time};
use crate::store::Key;

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

impl DeleteOptions {
    /// From the body (`DeleteOptions`) and the query (body wins).
    pub(crate) fn read(body: &[u8], q: &BTreeMap<String, String>) -> Result<Self, ApiError> {
        let b: Value = if body.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}"))
            })?
        };
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let policy = s(b.get("propagationPolicy")).or_else(|| q.get("propagationPolicy").cloned());
        let propagation = match policy.as_deref() {
            None => None,
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some("Orphan") => Some(Propagation::Orphan),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "propagationPolicy {other:?} is not supported: use Background, Foreground or Orphan"
                )));
            }
        };
        let grace = b
            .get("gracePeriodSeconds")
            .and_then(Value::as_i64)
            .or_else(|| q.get("gracePeriodSeconds").and_then(|g| g.parse().ok()));
        Ok(Self {
            uid: s(b.pointer("/preconditions/uid")),
            rv: s(b.pointer("/preconditions/resourceVersion")),
            propagation,
            grace,
        })
    }
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
    let meta = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(uid) = &opts.uid
        && *uid != meta("/metadata/uid")
    {
        let why = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            meta("/metadata/uid")
        );
        return Err(ApiError::conflict_because(res, &key.name, &why));
    }
    if let Some(rv) = &opts.rv
        && *rv != meta("/metadata/resourceVersion")
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            meta("/metadata/resourceVersion")
        );
        return Err(ApiError::conflict_because(res, &key.name, &why));
    }
    let mut new = obj.clone();
    let mut finalizers: Vec<Value> =
        obj.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
    let add = |f: &mut Vec<Value>, name: &str| {
        if !f.iter().any(|x| x == name) {
            f.push(json!(name));
        }
    };
    match opts.propagation {
        Some(Propagation::Foreground) => add(&mut finalizers, "foregroundDeletion"),
        Some(Propagation::Orphan) => add(&mut finalizers, "orphan"),
        _ => {}
    }
    let is_pod = res.kind == "Pod";
    let bound =
        obj.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let terminal = matches!(
        obj.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded") | Some("Failed")
    );
    let grace = opts.grace.unwrap_or_else(|| {
        obj.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30)
    });
    let graceful = is_pod && bound && !terminal && grace > 0;
    if finalizers.is_empty() && !graceful {
        let gone = state.store.remove(key).unwrap_or(obj);
        return Ok(Deleted::Gone(gone));
    }
    if new.pointer("/metadata/deletionTimestamp").is_none() {
        let at = if graceful { state.now + SignedDuration::from_secs(grace) } else { state.now };
        new["metadata"]["deletionTimestamp"] = json!(fmt_time(at));
        new["metadata"]["deletionGracePeriodSeconds"] = json!(if graceful { grace } else { 0 });
    }
    new["metadata"]["finalizers"] = json!(finalizers);
    if new == obj {
        return Ok(Deleted::Pending(obj));
    }
    Ok(Deleted::Pending((*state.store.put(key.clone(), new)).clone()))
}

/// The DELETE handler's answer: the pending object, or a success Status.
pub(crate) fn handle(
    state: &mut State,
    req: &ApiReq,
    opts: &DeleteOptions,
) -> Result<Value, ApiError> {
    let key = Key::new(req.res, &req.ns, &req.name);
    let res = &RESOURCES[req.res];
    Ok(match delete(state, &key, opts)? {
        Deleted::Pending(v) => v,
        Deleted::Gone(v) => json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {
                "name": req.name,
                "group": res.group,
                "kind": res.plural,
                "uid": v.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
            },
        }),
    })
}

/// Removes one finalizer from an object, deleting it when it was the last one and
/// deletion has started, unless it is a pod in graceful deletion: that one stays until
/// the kubelet confirms (or a delete with grace period 0), as the apiserver keeps a pod
/// whose `deletionGracePeriodSeconds` is not 0.
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
    let empty = list.is_empty();
    let graceful = RESOURCES[key.res].kind == "Pod"
        && obj.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0)
            > 0;
    if empty && obj.pointer("/metadata/deletionTimestamp").is_some() && !graceful {
        state.store.remove(key);
    } else {
        state.store.put(key.clone(), obj);
    }
}
