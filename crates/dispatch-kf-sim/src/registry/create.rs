//! Create, in the apiserver's order: the name (or one generated), the schema's fields,
//! the namespace, a name already taken, the fields the server owns, the kind's
//! admission and the mutating webhooks, then the stamped metadata and managedFields.

use serde_json::{Value, json};

use super::{WriteOptions, check_fields, record_and_put, stamp};
use crate::plain::apierror::ApiError;
use crate::plain::object::meta::str_at;
use crate::plain::resources::{RESOURCES, ResId, Resource, id};
use crate::registry::admission;
use crate::store::{Key, State};

/// Creates `obj` (a JSON object with a `metadata` object) in namespace `ns`.
pub(crate) fn create(
    state: &mut State,
    res_id: ResId,
    ns: &str,
    mut obj: Value,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let res = &RESOURCES[res_id];
    let name = name_or_generated(state, res, &obj)?;
    check_fields(state, res, &name, &mut obj, options.validation)?;
    namespace_must_exist(state, res, ns)?;
    let key = Key::new(res_id, ns, &name);
    if state.store.get(&key).is_some() {
        return Err(ApiError::already_exists(res, &name));
    }
    obj["metadata"]["name"] = json!(name);
    drop_what_the_server_owns(res, &mut obj);
    admit_and_mutate(state, res, ns, &mut obj)?;
    stamp(state, res, ns, &mut obj);
    Ok((*record_and_put(state, key, obj, &options.manager, "Update", "")).clone())
}

/// `metadata.name`, else `generateName` and five characters of the apiserver's
/// alphabet; neither is 422.
fn name_or_generated(state: &mut State, res: &Resource, obj: &Value) -> Result<String, ApiError> {
    let name = str_at(obj, "/metadata/name");
    if !name.is_empty() {
        return Ok(name.to_string());
    }
    let Some(prefix) = obj.pointer("/metadata/generateName").and_then(Value::as_str) else {
        return Err(ApiError::invalid(
            res,
            "",
            vec![(
                "FieldValueRequired",
                "metadata.name".into(),
                "metadata.name: Required value: name or generateName is required".into(),
            )],
        ));
    };
    Ok(format!("{prefix}{}", state.suffix(5)))
}

fn namespace_must_exist(state: &State, res: &Resource, ns: &str) -> Result<(), ApiError> {
    if res.namespaced && state.store.get(&Key::new(id("namespaces"), "", ns)).is_none() {
        return Err(ApiError::not_found(&RESOURCES[id("namespaces")], ns));
    }
    Ok(())
}

/// The server's metadata a client sent is dropped, and so is the status of a kind with
/// a status subresource; a new pod starts Pending.
fn drop_what_the_server_owns(res: &Resource, obj: &mut Value) {
    if let Some(m) = obj["metadata"].as_object_mut() {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "managedFields",
            "generation",
        ] {
            m.remove(f);
        }
    }
    if res.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    if res.kind == "Pod" {
        obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
    }
}

/// The kind's admission, then the mutating webhooks a test added for its resource.
fn admit_and_mutate(
    state: &mut State,
    res: &Resource,
    ns: &str,
    obj: &mut Value,
) -> Result<(), ApiError> {
    admission::admit(state, res, ns, None, obj)?;
    for (plural, mutate) in &state.webhooks {
        if plural == res.plural {
            mutate(obj);
        }
    }
    Ok(())
}
