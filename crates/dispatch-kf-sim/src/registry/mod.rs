//! The registry: every write to the store, from an HTTP handler, a controller or a
//! happening a test injects, goes through it, as every write of the apiserver goes
//! through its generic registry: a request's create ([`create`]), update ([`commit`])
//! and delete ([`delete`]); a controller's new object ([`State::insert`]), change
//! ([`write`]), delete and finalizer removal ([`remove_finalizer`]). Each rule is here
//! once: metadata is stamped on a new object ([`stamp`]), the generation moves
//! ([`bump_generation`]), an object goes when its deletion is finished
//! (`delete::finished`), managedFields are recorded ([`record_and_put`]), a kind's
//! admission runs (`admission.rs`). It names no controller and no HTTP request type:
//! handlers give it the key and the object they read from the request.

mod admission;
mod create;
mod delete;
mod update;

use std::sync::Arc;

use serde_json::{Value, json};

pub(crate) use self::create::create;
pub use self::delete::Propagation;
pub(crate) use self::delete::{DeleteOptions, Deleted, delete, remove_finalizer};
pub(crate) use self::update::{WriteOptions, commit, write};
use crate::plain::apierror::ApiError;
use crate::plain::managed;
use crate::plain::object::meta::str_at;
use crate::plain::resources::{RESOURCES, ResId, Resource};
use crate::plain::schema::{self, Validation};
use crate::store::{Key, State};

/// Fills the metadata the apiserver owns on a new object: `apiVersion`, `kind`, the
/// namespace, and, when absent, the UID, `creationTimestamp` and generation 1.
fn stamp(state: &mut State, res: &Resource, ns: &str, obj: &mut Value) {
    obj["apiVersion"] = json!(res.api_version());
    obj["kind"] = json!(res.kind);
    if res.namespaced {
        obj["metadata"]["namespace"] = json!(ns);
    }
    if obj.pointer("/metadata/uid").is_none() {
        obj["metadata"]["uid"] = json!(state.next_uid());
    }
    if obj.pointer("/metadata/creationTimestamp").is_none() {
        obj["metadata"]["creationTimestamp"] = json!(state.now_str());
    }
    if obj.pointer("/metadata/generation").is_none() {
        obj["metadata"]["generation"] = json!(1);
    }
}

/// Records the write's managedFields against what is stored under `key`, then stores
/// the object.
fn record_and_put(
    state: &mut State,
    key: Key,
    mut obj: Value,
    manager: &str,
    operation: &str,
    sub: &str,
) -> Arc<Value> {
    let time = state.now_str();
    managed::record(state.store.get(&key), &mut obj, manager, operation, sub, &time);
    state.store.put(key, obj)
}

/// Moves `new`'s generation one past `old`'s.
fn bump_generation(old: &Value, new: &mut Value) {
    let g = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    new["metadata"]["generation"] = json!(g + 1);
}

impl State {
    /// Stores a new object from setup or a controller, filling the metadata the
    /// apiserver would; returns the stored object. (A controller changes an object that
    /// exists through [`write`].)
    pub(crate) fn insert(&mut self, res: ResId, obj: Value, manager: &str) -> Arc<Value> {
        self.insert_as(res, obj, manager, "Update")
    }

    /// [`State::insert`] with the managedFields operation named (`Update` or `Apply`, for
    /// a controller that writes by server-side apply).
    pub(crate) fn insert_as(
        &mut self,
        res: ResId,
        mut obj: Value,
        manager: &str,
        operation: &str,
    ) -> Arc<Value> {
        let r = &RESOURCES[res];
        let ns = if r.namespaced {
            obj.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        let name = str_at(&obj, "/metadata/name").to_string();
        stamp(self, r, &ns, &mut obj);
        record_and_put(self, Key::new(res, &ns, &name), obj, manager, operation, "")
    }
}

/// Meets the fields of `obj` its kind's schema does not declare as `validation` asks
/// (they are dropped, with a warning each under `Warn`; under `Strict` the write is
/// 400 naming them all), then refuses a value of the wrong type (422).
fn check_fields(
    state: &mut State,
    res: &Resource,
    name: &str,
    obj: &mut Value,
    validation: Validation,
) -> Result<(), ApiError> {
    let checked = schema::prune_object(res.kind, &state.releases, obj);
    let unknown = checked.unknown.iter().map(|path| format!("unknown field \"{path}\""));
    match validation {
        Validation::Strict if !checked.unknown.is_empty() => {
            let fields: Vec<String> = unknown.collect();
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                fields.join(", "),
                kind = res.kind,
                version = res.version,
            )));
        }
        Validation::Warn => state.warnings.extend(unknown),
        Validation::Strict | Validation::Ignore => {}
    }
    if checked.mistyped.is_empty() {
        return Ok(());
    }
    let causes = checked
        .mistyped
        .into_iter()
        .map(|(path, wanted, sent)| {
            let message = format!(
                "{path}: Invalid value: \"{sent}\": {path} in body must be of type {wanted}: \"{sent}\""
            );
            ("FieldValueTypeInvalid", path, message)
        })
        .collect();
    Err(ApiError::invalid(res, name, causes))
}
