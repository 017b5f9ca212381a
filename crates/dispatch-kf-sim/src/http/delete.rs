//! The DELETE request: its `DeleteOptions` read from the body and the query, and the
//! answer (the object still pending deletion, or a success Status). The deletion itself
//! is the registry's.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::http::request::ApiReq;
use crate::plain::apierror::ApiError;
use crate::plain::resources::RESOURCES;
use crate::registry::{self, DeleteOptions, Deleted, Propagation};
use crate::store::{Key, State};

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

/// The DELETE handler's answer: the pending object, or a success Status.
pub(crate) fn handle(
    state: &mut State,
    req: &ApiReq,
    opts: &DeleteOptions,
) -> Result<Value, ApiError> {
    let key = Key::new(req.res, &req.ns, &req.name);
    let res = &RESOURCES[req.res];
    Ok(match registry::delete(state, &key, opts)? {
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
