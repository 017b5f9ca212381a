//! Between kube's objects and the model's JSON, both ways: the Backend hands the model
//! plain JSON and writes back what the model edited.

use dispatch_core::{Error, Result};
use kube::api::DynamicObject;
use serde_json::Value;

/// An object as the model's JSON. Serializing a `DynamicObject` (strings, maps and JSON
/// values) cannot fail; `Null` would stand for the impossible.
pub(crate) fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The model's JSON as an object kube writes; `Invalid` when the model made
/// something kube cannot read.
pub(crate) fn from_value(value: Value) -> Result<DynamicObject> {
    serde_json::from_value(value)
        .map_err(|e| Error::invalid(format!("the model made an object kube cannot read: {e}")))
}
