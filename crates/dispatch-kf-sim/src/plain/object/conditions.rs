//! Status conditions: reading one, and setting one as the apiserver's clients do
//! (`lastTransitionTime` moves only when the status changes).

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
