//! Trainer runtimes: the `kubeflow/RuntimeRef` extension ([`RuntimeRef`]), a view of a
//! source runtime read from the cluster ([`SourceRuntime`]), and the runtime rules
//! ([`rules::check`]).
//!
//! A source runtime's `spec` is kept verbatim as JSON: the runtime copy must carry every
//! field, including those this model does not know, except the few `copy` leaves out.

pub(crate) mod copy;
pub(crate) mod rules;

use std::fmt;

use dispatch_core::Error;
use serde_json::Value;

use crate::keys;
use crate::settings::strict::{Obj, is_rfc1123_subdomain, parse_document};

/// The two kinds of runtime a TrainJob can refer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuntimeKind {
    /// A namespaced `TrainingRuntime`, read from the configured namespace.
    TrainingRuntime,
    /// A cluster-wide `ClusterTrainingRuntime`.
    ClusterTrainingRuntime,
}

impl RuntimeKind {
    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::TrainingRuntime => keys::KIND_TRAINING_RUNTIME,
            RuntimeKind::ClusterTrainingRuntime => keys::KIND_CLUSTER_TRAINING_RUNTIME,
        }
    }

    /// The kind named `text`, if it is one of the two.
    pub fn parse(text: &str) -> Option<RuntimeKind> {
        [RuntimeKind::TrainingRuntime, RuntimeKind::ClusterTrainingRuntime]
            .into_iter()
            .find(|k| k.as_str() == text)
    }
}

/// A reference to a Trainer runtime: the `kubeflow/RuntimeRef` extension, and an entry
/// of the settings' `runtimes`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuntimeRef {
    /// TrainingRuntime or ClusterTrainingRuntime.
    pub kind: RuntimeKind,
    /// The runtime's name: a Kubernetes object name (RFC 1123 subdomain).
    pub name: String,
}

impl RuntimeRef {
    /// Reads `{"kind": ..., "name": ...}` strictly. `what` names the document and `path`
    /// the place in it, so that a message says where the bad value is. A kind that is
    /// neither runtime kind, or a name that is not a Kubernetes object name, is `Invalid`.
    pub fn from_value(what: &str, path: &str, value: &Value) -> Result<RuntimeRef, Error> {
        let obj = Obj::new(what, path, value, &["kind", "name"])?;
        let kind_text = obj.required("kind", obj.str("kind")?)?;
        let kind = RuntimeKind::parse(kind_text).ok_or_else(|| {
            obj.err(
                "kind",
                &format!("is {kind_text:?}: want TrainingRuntime or ClusterTrainingRuntime"),
            )
        })?;
        let name = obj.required("name", obj.str("name")?)?;
        if !is_rfc1123_subdomain(name) {
            return Err(obj.err(
                "name",
                &format!("is {name:?}: want a Kubernetes object name (lower-case letters, digits, '-' and '.', at most 253)"),
            ));
        }
        Ok(RuntimeRef { kind, name: name.to_owned() })
    }

    /// The extension's JSON.
    pub fn to_value(&self) -> Value {
        serde_json::json!({"kind": self.kind.as_str(), "name": self.name})
    }
}

/// `<Kind>/<name>`, as the `runtime-source` annotation writes it.
impl fmt::Display for RuntimeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind.as_str(), self.name)
    }
}

/// A runtime as read from the cluster: its identity and its `spec`, kept verbatim.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceRuntime {
    /// Its kind and name.
    pub reference: RuntimeRef,
    /// Its namespace (TrainingRuntime only).
    pub namespace: Option<String>,
    /// Its `spec`, verbatim: fields the model does not know survive the copy.
    pub spec: Value,
}

impl SourceRuntime {
    /// Reads a runtime object from JSON or YAML bytes; a document that is just `null`
    /// stands for a runtime that does not exist (`None`), so that a fixture can say so.
    pub fn read(bytes: &[u8]) -> Result<Option<SourceRuntime>, Error> {
        let doc = parse_document("runtime", bytes)?;
        if doc.is_null() {
            return Ok(None);
        }
        SourceRuntime::from_value(&doc).map(Some)
    }

    /// Reads a runtime object (`apiVersion`, `kind`, `metadata`, `spec`). An object of
    /// another apiVersion or kind is `Unsupported`; a missing name or spec is `Invalid`.
    pub fn from_value(object: &Value) -> Result<SourceRuntime, Error> {
        let field = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind_text) = (field("apiVersion"), field("kind"));
        let kind =
            RuntimeKind::parse(kind_text).filter(|_| api_version == keys::TRAINER_API_VERSION);
        let Some(kind) = kind else {
            return Err(Error::unsupported(format!(
                "runtime object has apiVersion {api_version:?} and kind {kind_text:?}: want {} TrainingRuntime or ClusterTrainingRuntime",
                keys::TRAINER_API_VERSION
            )));
        };
        let meta = object.get("metadata");
        let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
        let name = text("name").ok_or_else(|| {
            Error::invalid(format!(
                "runtime object's metadata.name is missing: want the {kind_text}'s name"
            ))
        })?;
        let spec = match object.get("spec") {
            Some(spec @ Value::Object(_)) => spec.clone(),
            _ => return Err(Error::invalid(format!("{kind_text} {name} has no spec object"))),
        };
        Ok(SourceRuntime {
            reference: RuntimeRef { kind, name: name.to_owned() },
            namespace: text("namespace").map(str::to_owned),
            spec,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::Kind;
    use serde_json::json;

    fn read(v: Value) -> Result<RuntimeRef, Error> {
        RuntimeRef::from_value("extension kubeflow/RuntimeRef", "", &v)
    }

    #[test]
    fn runtime_ref_reads_both_kinds() {
        let r = read(json!({"kind": "TrainingRuntime", "name": "torch.v2"})).unwrap();
        assert_eq!(r.to_string(), "TrainingRuntime/torch.v2");
        assert_eq!(read(r.to_value()).unwrap(), r);
    }

    #[test]
    fn runtime_ref_of_another_kind_or_bad_name_is_invalid() {
        let err = read(json!({"kind": "Runtime", "name": "x"})).unwrap_err();
        assert!(err.is(Kind::Invalid));
        assert!(err.message().contains("key `kind` is \"Runtime\""), "{err}");
        let err = read(json!({"kind": "TrainingRuntime", "name": "Torch_1"})).unwrap_err();
        assert!(err.is(Kind::Invalid) && err.message().contains("key `name`"), "{err}");
        let err = read(json!({"kind": "TrainingRuntime"})).unwrap_err();
        assert!(err.message().ends_with("key `name` is missing"), "{err}");
    }

    #[test]
    fn a_runtime_object_of_another_kind_is_unsupported() {
        let err =
            SourceRuntime::from_value(&json!({"apiVersion": "v1", "kind": "Pod"})).unwrap_err();
        assert!(err.is(Kind::Unsupported), "{err}");
    }

    #[test]
    fn unknown_spec_fields_survive() {
        let obj = json!({"apiVersion": keys::TRAINER_API_VERSION, "kind": "ClusterTrainingRuntime",
                         "metadata": {"name": "t"}, "spec": {"futureField": {"x": [1]}}});
        let rt = SourceRuntime::from_value(&obj).unwrap();
        assert_eq!(rt.spec, obj["spec"]);
    }
}
