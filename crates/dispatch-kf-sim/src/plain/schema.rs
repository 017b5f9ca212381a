//! The structural schemas the simulated apiserver knows its kinds by, and what it does
//! with the fields a write sends that a schema does not declare.
//!
//! A real apiserver decodes every write against the kind's schema: a field the schema
//! does not declare is dropped ("pruned"), and the request's `fieldValidation` says
//! whether that is silent (`Ignore`), a `Warning` header per field (`Warn`, the
//! default) or a 400 naming every such field (`Strict`, what kubectl asks for). A
//! value of the wrong type is 422 Invalid. The same schemas are served as OpenAPI v3
//! ([`crate::http::openapi`]), which is what `kubectl explain` reads and how kubectl learns
//! that the server validates fields itself.
//!
//! The Trainer's TrainJob is declared field by field, as Trainer v2.3.0's CRD declares
//! it (`docs/dev/sim.md#fields-and-openapi`). Every other kind declares its metadata only
//! and keeps whatever `spec` and `status` it is sent (`x-kubernetes-preserve-unknown-
//! fields`): the sim's fidelity there is its controllers', not its schemas'.

mod kinds;

use serde_json::Value;

pub(crate) use kinds::of_kind;

/// The shape of one value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// A string.
    Str,
    /// A string holding an RFC 3339 time.
    Time,
    /// An integer.
    Int,
    /// `true` or `false`.
    Bool,
    /// A list of values of one shape.
    List(&'static Shape),
    /// An object whose keys are free and whose values have one shape.
    Map(&'static Shape),
    /// An object of the fields listed, and of no other.
    Object(&'static [Field]),
    /// An object of the fields listed, keeping any other it is sent.
    Open(&'static [Field]),
}

/// One declared field of an object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    /// The key.
    pub(crate) name: &'static str,
    /// What it holds.
    pub(crate) shape: Shape,
    /// What it is for, as `kubectl explain` shows it.
    pub(crate) about: &'static str,
}

/// A declared field (a `const fn`, so that schemas are tables).
pub(crate) const fn field(name: &'static str, shape: Shape, about: &'static str) -> Field {
    Field { name, shape, about }
}

impl Shape {
    /// The OpenAPI `type` of the shape.
    pub(crate) fn openapi_type(&self) -> &'static str {
        match self {
            Shape::Str | Shape::Time => "string",
            Shape::Int => "integer",
            Shape::Bool => "boolean",
            Shape::List(_) => "array",
            Shape::Map(_) | Shape::Object(_) | Shape::Open(_) => "object",
        }
    }
}

/// What a request's `fieldValidation` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Validation {
    /// Drop undeclared fields silently.
    Ignore,
    /// Drop them, with a `Warning` header each (the apiserver's default).
    Warn,
    /// Refuse the write, naming every one.
    Strict,
}

impl Validation {
    /// The directive of a `fieldValidation` query value; `None` for a value the
    /// apiserver refuses.
    pub(crate) fn parse(value: Option<&str>) -> Option<Validation> {
        match value {
            None | Some("" | "Warn") => Some(Validation::Warn),
            Some("Ignore") => Some(Validation::Ignore),
            Some("Strict") => Some(Validation::Strict),
            Some(_) => None,
        }
    }
}

/// What checking one object against its schema found.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Checked {
    /// The paths of undeclared fields, as the apiserver names them (`spec.foo`,
    /// `spec.trainer.env[0].bar`); they have been removed from the object.
    pub(crate) unknown: Vec<String>,
    /// Values of the wrong type: `(path, the type the schema wants, the type sent)`.
    pub(crate) mistyped: Vec<(String, &'static str, &'static str)>,
}

/// The fields of `kind` that the releases played do not declare, each as its parent
/// object and its name: Trainer v2.1's TrainJob has no `spec.runtimePatches`.
pub(crate) fn not_in_release(
    kind: &str,
    releases: &Releases,
) -> &'static [(&'static str, &'static str)] {
    if kind == "TrainJob" && !releases.trainer_runtime_patches {
        &[("spec", "runtimePatches")]
    } else {
        &[]
    }
}

/// Checks an object of `kind` against its schema in the releases played, removing
/// every undeclared field it finds.
pub(crate) fn prune_object(kind: &str, releases: &Releases, value: &mut Value) -> Checked {
    let mut checked = prune(&of_kind(kind), value);
    for (parent, field) in not_in_release(kind, releases) {
        let removed =
            value.get_mut(*parent).and_then(Value::as_object_mut).and_then(|o| o.remove(*field));
        if removed.is_some() {
            checked.unknown.push(format!("{parent}.{field}"));
        }
    }
    checked
}

/// Checks `value` against `shape`, removing every undeclared field it finds.
pub(crate) fn prune(shape: &Shape, value: &mut Value) -> Checked {
    let mut checked = Checked::default();
    walk(shape, value, &mut String::new(), &mut checked);
    checked
}

fn walk(shape: &Shape, value: &mut Value, path: &mut String, out: &mut Checked) {
    if value.is_null() {
        // A null is an absent value to the apiserver's decoder.
        return;
    }
    let sent = json_type(value);
    let fits = match shape {
        Shape::Int => value.is_i64() || value.is_u64(),
        _ => sent == shape.openapi_type(),
    };
    if !fits {
        out.mistyped.push((path.clone(), shape.openapi_type(), sent));
        return;
    }
    let base = path.len();
    match (shape, value) {
        (Shape::List(item), Value::Array(items)) => {
            for (i, v) in items.iter_mut().enumerate() {
                path.push_str(&format!("[{i}]"));
                walk(item, v, path, out);
                path.truncate(base);
            }
        }
        (Shape::Map(item), Value::Object(map)) => {
            for (k, v) in map.iter_mut() {
                push_key(path, k);
                walk(item, v, path, out);
                path.truncate(base);
            }
        }
        (Shape::Object(fields) | Shape::Open(fields), Value::Object(map)) => {
            let open = matches!(shape, Shape::Open(_));
            map.retain(|k, v| match fields.iter().find(|f| f.name == k) {
                Some(f) => {
                    push_key(path, k);
                    walk(&f.shape, v, path, out);
                    path.truncate(base);
                    true
                }
                None if open => true,
                None => {
                    push_key(path, k);
                    out.unknown.push(path.clone());
                    path.truncate(base);
                    false
                }
            });
        }
        _ => {}
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The differences between upstream releases the simulated cluster plays; the
/// default is the newest releases' behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Releases {
    /// Whether the TrainJob has `spec.runtimePatches` (Trainer v2.2 and newer). Without
    /// it (Trainer v2.1), the served schema has no such field and writes drop it, as
    /// the apiserver prunes a field its CRD does not declare.
    pub trainer_runtime_patches: bool,
    /// Kueue's `AdmissionGatedBy` feature gate: on by default from Kueue v0.19. Off (as
    /// v0.17 and v0.18 are released), Kueue makes Workloads without the
    /// `kueue.x-k8s.io/admission-gated-by` annotation of their job, so nothing holds
    /// their admission back.
    pub kueue_admission_gated_by: bool,
}

impl Default for Releases {
    fn default() -> Self {
        Releases { trainer_runtime_patches: true, kueue_admission_gated_by: true }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const INNER: &[Field] = &[field("n", Shape::Int, "a number")];
    const OUTER: Shape = Shape::Object(&[
        field("items", Shape::List(&Shape::Object(INNER)), "a list"),
        field("labels", Shape::Map(&Shape::Str), "a map"),
        field("free", Shape::Open(INNER), "an open object"),
    ]);

    #[test]
    fn undeclared_fields_are_removed_and_named_by_path() {
        let mut v = json!({"items": [{"n": 1}, {"n": 2, "x": 3}], "y": true,
            "free": {"n": 1, "kept": "yes"}, "labels": {"a": "b"}});
        let checked = prune(&OUTER, &mut v);
        assert_eq!(checked.unknown, ["items[1].x", "y"]);
        assert!(checked.mistyped.is_empty());
        assert_eq!(
            v,
            json!({"items": [{"n": 1}, {"n": 2}], "free": {"n": 1, "kept": "yes"}, "labels": {"a": "b"}})
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_with_both_types_and_null_is_absent() {
        let mut v = json!({"items": [{"n": "two"}, {"n": 1.5}, {"n": null}], "labels": {"a": 1}});
        let checked = prune(&OUTER, &mut v);
        assert_eq!(
            checked.mistyped,
            [
                ("items[0].n".to_owned(), "integer", "string"),
                ("items[1].n".to_owned(), "integer", "number"),
                ("labels.a".to_owned(), "string", "integer"),
            ]
        );
    }

    /// Trainer v2.1's CRD does not declare `spec.runtimePatches`: a write loses it, as
    /// an undeclared field; the newer releases keep it.
    #[test]
    fn a_trainer_v2_1_prunes_runtime_patches_from_a_train_job() {
        let job = json!({"spec": {"suspend": true, "runtimePatches": [{"manager": "m"}]}});
        let v2_1 = Releases { trainer_runtime_patches: false, ..Releases::default() };
        let mut old = job.clone();
        let checked = prune_object("TrainJob", &v2_1, &mut old);
        assert_eq!(checked.unknown, ["spec.runtimePatches"]);
        assert_eq!(old, json!({"spec": {"suspend": true}}));
        let mut new = job.clone();
        assert!(prune_object("TrainJob", &Releases::default(), &mut new).unknown.is_empty());
        assert_eq!(new, job);
    }

    #[test]
    fn field_validation_defaults_to_warn_and_refuses_other_words() {
        assert_eq!(Validation::parse(None), Some(Validation::Warn));
        assert_eq!(Validation::parse(Some("Strict")), Some(Validation::Strict));
        assert_eq!(Validation::parse(Some("Ignore")), Some(Validation::Ignore));
        assert_eq!(Validation::parse(Some("strict")), None);
    }
}
