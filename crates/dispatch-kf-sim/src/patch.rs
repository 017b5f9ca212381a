//! Patches: JSON merge patch (RFC 7386) and JSON patch (RFC 6902). Strategic merge patch
//! and server-side apply are applied as merge patches for the kinds served here (their
//! lists are replaced whole), which is documented in `docs/sim.md`.

use serde_json::Value;

use crate::apierror::ApiError;

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
