//! `metadata.managedFields`: who set which field, as the apiserver's field manager records
//! it for Update and Apply operations (structured-merge-diff `FieldsV1`). Lists are owned
//! whole (the sim does not key list items), which is enough to answer "who set
//! `spec.suspend`".

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

type Path = Vec<String>;

/// Metadata the apiserver sets itself; never owned by a manager.
const SYSTEM_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
];

fn leaves(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                if prefix.len() == 1 && prefix[0] == "metadata" && SYSTEM_META.contains(&k.as_str())
                {
                    continue;
                }
                if prefix.is_empty() && (k == "apiVersion" || k == "kind") {
                    continue;
                }
                prefix.push(k.clone());
                leaves(child, prefix, out);
                prefix.pop();
            }
        }
        _ if !prefix.is_empty() => {
            out.insert(prefix.clone());
        }
        _ => {}
    }
}

fn leaf_set(v: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    leaves(v, &mut Vec::new(), &mut out);
    out
}

fn at<'a>(v: &'a Value, p: &Path) -> Option<&'a Value> {
    p.iter().try_fold(v, |cur, k| cur.get(k))
}

fn parse_fields(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    let Some(m) = v.as_object() else { return };
    if m.is_empty() && !prefix.is_empty() {
        out.insert(prefix.clone());
    }
    for (k, child) in m {
        if let Some(name) = k.strip_prefix("f:") {
            prefix.push(name.to_string());
            parse_fields(child, prefix, out);
            prefix.pop();
        }
    }
}

fn render_fields(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for k in p {
            let e = cur.entry(format!("f:{k}")).or_insert_with(|| json!({}));
            let Value::Object(next) = e else { break };
            cur = next;
        }
    }
    Value::Object(root)
}

/// Records a write by `manager` (`operation` is `Update` or `Apply`; `sub` is `status`
/// or empty) that turned `old` (None on create) into `new`, in `new`'s managedFields.
pub(crate) fn record(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: &str,
    sub: &str,
    time: &str,
) {
    let new_leaves = leaf_set(new);
    let changed: BTreeSet<Path> = match old {
        None => new_leaves.clone(),
        Some(o) => {
            let old_leaves = leaf_set(o);
            old_leaves.union(&new_leaves).filter(|p| at(o, p) != at(new, p)).cloned().collect()
        }
    };
    let api_version = new.get("apiVersion").cloned().unwrap_or(Value::Null);
    // The entries the write carries (taken, as `new`'s are rewritten below), else the
    // stored ones.
    let entries = match new.pointer_mut("/metadata/managedFields").map(Value::take) {
        Some(Value::Array(entries)) => entries,
        _ => old
            .and_then(|o| o.pointer("/metadata/managedFields")?.as_array().cloned())
            .unwrap_or_default(),
    };
    let mut out = Vec::new();
    let mut mine: BTreeSet<Path> = BTreeSet::new();
    for mut e in entries {
        let mut set = BTreeSet::new();
        parse_fields(e.get("fieldsV1").unwrap_or(&Value::Null), &mut Vec::new(), &mut set);
        let same = e.get("manager").and_then(Value::as_str) == Some(manager)
            && e.get("operation").and_then(Value::as_str) == Some(operation)
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == sub;
        if same {
            mine = set;
            continue;
        }
        let kept: BTreeSet<Path> =
            set.into_iter().filter(|p| !changed.contains(p) && new_leaves.contains(p)).collect();
        if !kept.is_empty() {
            e["fieldsV1"] = render_fields(&kept);
            out.push(e);
        }
    }
    mine.extend(changed.iter().filter(|p| new_leaves.contains(*p)).cloned());
    mine.retain(|p| new_leaves.contains(p));
    if !mine.is_empty() {
        let mut e = json!({
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": time,
            "fieldsType": "FieldsV1",
            "fieldsV1": render_fields(&mine),
        });
        if !sub.is_empty() {
            e["subresource"] = json!(sub);
        }
        out.push(e);
    }
    new["metadata"]["managedFields"] = Value::Array(out);
}

/// The manager that owns a field (path of keys), if any.
pub fn owner_of(obj: &Value, path: &[&str]) -> Option<String> {
    let want: Path = path.iter().map(|s| s.to_string()).collect();
    obj.pointer("/metadata/managedFields")?.as_array()?.iter().find_map(|e| {
        let mut set = BTreeSet::new();
        parse_fields(e.get("fieldsV1")?, &mut Vec::new(), &mut set);
        set.iter()
            .any(|p| want.starts_with(p) || p.starts_with(&want))
            .then(|| e.get("manager")?.as_str().map(str::to_string))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_field_moves_to_the_manager_that_changed_it() {
        let mut v1 = json!({"apiVersion": "v1", "metadata": {"name": "x"}, "spec": {"suspend": true, "a": 1}});
        record(None, &mut v1, "creator", "Update", "", "t0");
        assert_eq!(owner_of(&v1, &["spec", "suspend"]).as_deref(), Some("creator"));
        let mut v2 = v1.clone();
        v2["spec"]["suspend"] = json!(false);
        record(Some(&v1), &mut v2, "admin", "Update", "", "t1");
        assert_eq!(owner_of(&v2, &["spec", "suspend"]).as_deref(), Some("admin"));
        assert_eq!(owner_of(&v2, &["spec", "a"]).as_deref(), Some("creator"));
    }
}
