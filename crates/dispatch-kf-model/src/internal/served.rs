//! What the cluster's served schemas say about the versions it runs: the adapter
//! refuses a cluster by what it serves, not by version strings
//! (`docs/compatibility.md`).
//!
//! A Trainer older than v2.2 serves a TrainJob without `spec.runtimePatches`, the field
//! the adapter writes its start gate and admission count into: the apiserver prunes the
//! field from every write, so a job could never be gated. The served OpenAPI v3
//! document of `trainer.kubeflow.org/v1alpha1` says so before anything is created.

use serde_json::Value;

use crate::keys;

/// The refusal of a cluster whose Trainer has no `spec.runtimePatches`: one line a
/// user can act on.
pub const TRAINER_WITHOUT_RUNTIME_PATCHES: &str = "the cluster's Trainer has no TrainJob \
     spec.runtimePatches (Trainer v2.1 or older): dispatch-kf needs Trainer v2.2 or newer \
     (docs/compatibility.md)";

/// Reads the OpenAPI v3 document the apiserver serves for the Trainer's group-version
/// (`/openapi/v3/apis/trainer.kubeflow.org/v1alpha1`): `Err` with
/// [`TRAINER_WITHOUT_RUNTIME_PATCHES`] when its TrainJob schema has a `spec` without
/// `runtimePatches`. A document without a TrainJob schema, or a schema without
/// properties for `spec` (a cluster that does not publish it), refuses nothing: the
/// adapter cannot tell, and the preflight probe's read-back still catches a pruned
/// field.
pub fn trainer_supports_runtime_patches(openapi: &Value) -> Result<(), String> {
    let schemas = openapi.pointer("/components/schemas").and_then(Value::as_object);
    let Some(train_job) = schemas.into_iter().flatten().map(|(_, s)| s).find(|s| is_train_job(s))
    else {
        return Ok(());
    };
    match train_job.pointer("/properties/spec/properties").and_then(Value::as_object) {
        Some(spec) if !spec.contains_key("runtimePatches") => {
            Err(TRAINER_WITHOUT_RUNTIME_PATCHES.to_owned())
        }
        _ => Ok(()),
    }
}

/// Whether a schema is the TrainJob's, by its `x-kubernetes-group-version-kind`.
fn is_train_job(schema: &Value) -> bool {
    let gvks = schema.get("x-kubernetes-group-version-kind").and_then(Value::as_array);
    let api_version = keys::TRAINER_API_VERSION.split_once('/');
    gvks.into_iter().flatten().any(|gvk| {
        let at = |k: &str| gvk.get(k).and_then(Value::as_str);
        at("kind") == Some(keys::KIND_TRAIN_JOB)
            && api_version.is_some_and(|(g, v)| at("group") == Some(g) && at("version") == Some(v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A served document's shape: schemas named by reversed group, each TrainJob schema
    /// marked with its group, version and kind.
    fn document(spec_properties: Value) -> Value {
        json!({"components": {"schemas": {
            "org.kubeflow.trainer.v1alpha1.TrainJobList": {"type": "object",
                "x-kubernetes-group-version-kind": [{"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJobList"}]},
            "org.kubeflow.trainer.v1alpha1.TrainJob": {"type": "object",
                "properties": {"spec": {"type": "object", "properties": spec_properties}},
                "x-kubernetes-group-version-kind": [{"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"}]}
        }}})
    }

    #[test]
    fn a_trainer_whose_train_job_has_runtime_patches_is_supported() {
        let v2_2 =
            document(json!({"runtimePatches": {"type": "array"}, "suspend": {"type": "boolean"}}));
        assert_eq!(trainer_supports_runtime_patches(&v2_2), Ok(()));
    }

    #[test]
    fn a_trainer_without_runtime_patches_is_refused_in_one_line() {
        let v2_1 = document(
            json!({"podTemplateOverrides": {"type": "array"}, "suspend": {"type": "boolean"}}),
        );
        let err = trainer_supports_runtime_patches(&v2_1).unwrap_err();
        assert_eq!(err, TRAINER_WITHOUT_RUNTIME_PATCHES);
        assert!(!err.contains('\n') && !err.contains('{'), "{err}");
    }

    #[test]
    fn a_document_that_does_not_tell_refuses_nothing() {
        for doc in [
            json!({}),
            json!({"components": {"schemas": {}}}),
            json!("text"),
            document(json!(null)),
        ] {
            assert_eq!(trainer_supports_runtime_patches(&doc), Ok(()), "{doc}");
        }
    }
}
