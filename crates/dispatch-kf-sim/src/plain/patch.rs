//! Patches: JSON merge patch (RFC 7386) and JSON patch (RFC 6902). Strategic merge patch
//! is applied as a merge patch (its lists replaced whole). Server-side apply is a merge
//! patch that merges the list-maps served here (`status.admissionChecks` by `name`,
//! `conditions` by `type`) entry by entry, as their `x-kubernetes-list-map-keys` make a
//! real apiserver do; field ownership and apply conflicts are not modelled. Both are
//! documented in `docs/dev/sim.md`.

use serde_json::Value;

use crate::plain::apierror::ApiError;

/// Applies an RFC 7386 merge patch in place.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The key of a list-map, when every entry of both lists is an object carrying it.
fn list_map_key(target: &[Value], patch: &[Value]) -> Option<&'static str> {
    ["name", "type"]
        .into_iter()
        .find(|key| target.iter().chain(patch).all(|e| e.get(key).is_some_and(Value::is_string)))
}

/// Applies a server-side apply body in place: a merge patch, except that a list-map
/// keeps the entries the body does not name and merges the ones it does.
pub(crate) fn apply(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    apply(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (Value::Array(t), Value::Array(p)) if list_map_key(t, p).is_some() => {
            let key = list_map_key(t, p).unwrap_or("name");
            for entry in p {
                match t.iter_mut().find(|e| e[key] == entry[key]) {
                    Some(existing) => apply(existing, entry),
                    None => t.push(entry.clone()),
                }
            }
        }
        (target, patch) => merge(target, patch),
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<(String, String), ApiError> {
    if path.is_empty() {
        return Err(ApiError::bad_request("the JSON patch path must not be empty"));
    }
    let (parent, last) = path.rsplit_once('/').ok_or_else(|| {
        ApiError::bad_request(format!("the JSON patch path {path:?} must start with '/'"))
    })?;
    Ok((parent.to_string(), unescape(last)))
}

fn missing(path: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!(
            "the server rejected our request due to an error in our request: doc is missing path: \"{path}\""
        ),
    )
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), ApiError> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    let target = doc.pointer_mut(&parent).ok_or_else(|| missing(path))?;
    match target {
        Value::Object(m) => {
            m.insert(last, value);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
            } else {
                let i: usize = last.parse().map_err(|_| missing(path))?;
                if i > a.len() {
                    return Err(missing(path));
                }
                a.insert(i, value);
            }
        }
        _ => return Err(missing(path)),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, ApiError> {
    let (parent, last) = split_pointer(path)?;
    let target = doc.pointer_mut(&parent).ok_or_else(|| missing(path))?;
    match target {
        Value::Object(m) => m.remove(&last).ok_or_else(|| missing(path)),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| missing(path))?;
            if i >= a.len() {
                return Err(missing(path));
            }
            Ok(a.remove(i))
        }
        _ => Err(missing(path)),
    }
}

/// Applies an RFC 6902 JSON patch; an operation that cannot apply is an error, and the
/// document is left unchanged (the caller works on a copy).
pub(crate) fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), ApiError> {
    let ops = ops
        .as_array()
        .ok_or_else(|| ApiError::bad_request("a JSON patch must be an array of operations"))?;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or_default();
        let path = op.get("path").and_then(Value::as_str).unwrap_or_default();
        let value = || {
            op.get("value").cloned().ok_or_else(|| {
                ApiError::bad_request(format!("the JSON patch operation {kind:?} needs a value"))
            })
        };
        match kind {
            "add" => add(doc, path, value()?)?,
            "remove" => {
                remove(doc, path)?;
            }
            "replace" => {
                remove(doc, path)?;
                add(doc, path, value()?)?;
            }
            "test" => {
                if doc.pointer(path) != Some(&value()?) {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: testing value {path} failed"
                        ),
                    ));
                }
            }
            "move" | "copy" => {
                let from = op.get("from").and_then(Value::as_str).unwrap_or_default();
                let v = if kind == "move" {
                    remove(doc, from)?
                } else {
                    doc.pointer(from).cloned().ok_or_else(|| missing(from))?
                };
                add(doc, path, v)?;
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown JSON patch operation {other:?}: use add, remove, replace, test, move or copy"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_null_removes_and_objects_merge() {
        let mut d = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge(&mut d, &json!({"a": {"b": null, "d": 3}, "l": [3]}));
        assert_eq!(d, json!({"a": {"c": 2, "d": 3}, "l": [3]}));
    }

    #[test]
    fn apply_merges_list_maps_entry_by_entry_and_replaces_plain_lists() {
        let mut d = json!({"status": {
            "admissionChecks": [{"name": "kueue-x", "state": "Pending"}, {"name": "gate", "state": "Pending", "message": ""}],
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
            "tags": [1, 2]}});
        apply(
            &mut d,
            &json!({"status": {
            "admissionChecks": [{"name": "gate", "state": "Ready"}],
            "conditions": [{"type": "Admitted", "status": "True"}],
            "tags": [3]}}),
        );
        assert_eq!(
            d,
            json!({"status": {
            "admissionChecks": [{"name": "kueue-x", "state": "Pending"}, {"name": "gate", "state": "Ready", "message": ""}],
            "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
            "tags": [3]}})
        );
    }

    #[test]
    fn json_patch_applies_every_operation() {
        let mut d = json!({"a": [1, 2], "b": {"x/y": 1}});
        let ops = json!([
            {"op": "add", "path": "/a/-", "value": 3},
            {"op": "replace", "path": "/b/x~1y", "value": 2},
            {"op": "test", "path": "/b/x~1y", "value": 2},
            {"op": "copy", "from": "/a/0", "path": "/c"},
            {"op": "move", "from": "/c", "path": "/d"},
            {"op": "remove", "path": "/a/0"}
        ]);
        json_patch(&mut d, &ops).unwrap();
        assert_eq!(d, json!({"a": [2, 3], "b": {"x/y": 2}, "d": 1}));
    }

    #[test]
    fn json_patch_on_a_missing_path_is_invalid() {
        let mut d = json!({});
        let e = json_patch(&mut d, &json!([{"op": "remove", "path": "/x"}])).unwrap_err();
        assert_eq!(e.code, 422);
    }
}
