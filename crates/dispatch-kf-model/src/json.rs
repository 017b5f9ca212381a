//! Reading raw JSON objects as the apiserver returns them: the objects the hold family,
//! the readmission gate's proof and its rule read and edit whole (classification reads
//! through the lenient views instead). Malformed shapes read as absent.

use serde_json::Value;

/// The annotation `key` of `object`, when it is a string.
pub fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// Whether `object` has a condition of type `kind` with status `True`.
pub fn has_true_condition(object: &Value, kind: &str) -> bool {
    let conditions = object.pointer("/status/conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| c["type"] == kind && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_shapes_read_as_absent() {
        let good = json!({"metadata": {"annotations": {"a": "1"}},
                          "status": {"conditions": [{"type": "Active", "status": "True"}]}});
        assert_eq!(annotation(&good, "a"), Some("1"));
        assert!(has_true_condition(&good, "Active"));
        for bad in [json!(null), json!({"metadata": 1, "status": {"conditions": {}}}), json!([])] {
            assert_eq!(annotation(&bad, "a"), None);
            assert!(!has_true_condition(&bad, "Active"));
        }
    }
}
