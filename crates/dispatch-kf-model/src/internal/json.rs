//! Reading raw JSON objects as the apiserver returns them: the objects the hold family,
//! the readmission gate's proof and its rule read and edit whole (classification reads
//! through the lenient views instead). Malformed shapes read as absent.

use serde_json::Value;

/// `metadata.name`, or `""`.
pub fn name(object: &Value) -> &str {
    object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
}

/// `metadata.uid`, or `""`.
pub fn uid(object: &Value) -> &str {
    object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default()
}

/// A list answer's items, whole; a list without items has none.
pub fn list_items(bytes: &[u8]) -> serde_json::Result<Vec<Value>> {
    #[derive(serde::Deserialize)]
    struct Items {
        #[serde(default)]
        items: Option<Vec<Value>>,
    }
    serde_json::from_slice::<Items>(bytes).map(|l| l.items.unwrap_or_default())
}

/// The annotation `key` of `object`, when it is a string.
pub(crate) fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
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
    fn a_list_answers_items_read_whole() {
        let items = list_items(
            br#"{"kind": "PodList", "items": [{"metadata": {"name": "p", "uid": "u"}}]}"#,
        );
        let items = items.unwrap();
        assert_eq!((name(&items[0]), uid(&items[0])), ("p", "u"));
        assert!(list_items(br#"{"kind": "PodList", "items": null}"#).unwrap().is_empty());
    }

    #[test]
    fn malformed_shapes_read_as_absent() {
        let good = json!({"metadata": {"annotations": {"a": "1"}},
                          "status": {"conditions": [{"type": "Active", "status": "True"}]}});
        assert_eq!(annotation(&good, "a"), Some("1"));
        assert!(has_true_condition(&good, "Active"));
        for bad in [json!(null), json!({"metadata": 1, "status": {"conditions": {}}}), json!([])] {
            assert_eq!(annotation(&bad, "a"), None);
            assert_eq!((name(&bad), uid(&bad)), ("", ""));
            assert!(!has_true_condition(&bad, "Active"));
        }
    }
}
