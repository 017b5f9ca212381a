//! Writes: create (generateName, uid, creationTimestamp, generation), update with
//! optimistic concurrency, merge / JSON / strategic-as-merge / apply-as-merge patches,
//! the status subresource, admission, and managedFields.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::apierror::ApiError;
use crate::auth::Access;
use crate::request::ApiReq;
use crate::resources::{RESOURCES, Resource, id};
use crate::schema::{self, Validation};
use crate::state::State;
use crate::store::Key;
use crate::{admission, managed, patch};

/// What a write request's query asks of it, as `CreateOptions`, `UpdateOptions` and
/// `PatchOptions` carry it.
pub(crate) struct WriteOptions {
    /// The manager name for managedFields: `fieldManager`, else the User-Agent up to `/`.
    pub(crate) manager: String,
    /// How fields the kind's schema does not declare are met.
    pub(crate) validation: Validation,
}

impl WriteOptions {
    /// The options of a `verb` request (`create`, `update` or `patch`); an unknown
    /// `fieldValidation` is 422, as the apiserver answers it.
    pub(crate) fn read(
        q: &BTreeMap<String, String>,
        user_agent: &str,
        verb: &str,
    ) -> Result<WriteOptions, ApiError> {
        let manager =
            q.get("fieldManager").cloned().filter(|m| !m.is_empty()).unwrap_or_else(|| {
                let ua = user_agent.split('/').next().unwrap_or_default();
                if ua.is_empty() { "unknown".to_string() } else { ua.to_string() }
            });
        let asked = q.get("fieldValidation").map(String::as_str);
        let Some(validation) = Validation::parse(asked) else {
            return Err(ApiError::unsupported_option(
                verb,
                "fieldValidation",
                asked.unwrap_or_default(),
                &["", "Ignore", "Strict", "Warn"],
            ));
        };
        Ok(WriteOptions { manager, validation })
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

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

/// Everything but metadata and status: a change here bumps `metadata.generation`.
fn spec_part(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

fn ns_must_exist(state: &State, res: &Resource, ns: &str) -> Result<(), ApiError> {
    if res.namespaced && state.store.get(&Key::new(id("namespaces"), "", ns)).is_none() {
        return Err(ApiError::not_found(&RESOURCES[id("namespaces")], ns));
    }
    Ok(())
}

/// Creates an object from a request body.
pub(crate) fn create(
    state: &mut State,
    req: &ApiReq,
    body: &[u8],
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let res = &RESOURCES[req.res];
    let mut obj = parse_body(body)?;
    if !obj.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    if let Some(ns) = obj.pointer("/metadata/namespace").and_then(Value::as_str)
        && res.namespaced
        && ns != req.ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let mut name =
        obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    if name.is_empty() {
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
        name = format!("{prefix}{}", state.suffix(5));
    }
    check_fields(state, res, &name, &mut obj, options.validation)?;
    ns_must_exist(state, res, &req.ns)?;
    let key = Key::new(req.res, &req.ns, &name);
    if state.store.get(&key).is_some() {
        return Err(ApiError::already_exists(res, &name));
    }
    let meta = &mut obj["metadata"];
    meta["name"] = json!(name);
    for f in ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "managedFields"] {
        if let Some(m) = meta.as_object_mut() {
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
    admission::admit(state, res, &req.ns, None, &mut obj)?;
    for (plural, mutate) in &state.webhooks {
        if plural == res.plural {
            mutate(&mut obj);
        }
    }
    obj["apiVersion"] = json!(res.api_version());
    obj["kind"] = json!(res.kind);
    let uid = state.next_uid();
    let meta = &mut obj["metadata"];
    if res.namespaced {
        meta["namespace"] = json!(req.ns);
    }
    meta["uid"] = json!(uid);
    meta["creationTimestamp"] = json!(state.now_str());
    meta["generation"] = json!(1);
    let time = state.now_str();
    managed::record(None, &mut obj, &options.manager, "Update", "", &time);
    Ok((*state.store.put(key, obj)).clone())
}

/// Writes `new` over `old` after the checks every update path shares, in the
/// apiserver's order: the name, the resource version, the half of the object the
/// request may change (`req.sub` is `status` for the status subresource), the server's
/// metadata, finalizers, the kind's admission, the generation; a write that changes
/// nothing stores nothing.
pub(crate) fn commit(
    state: &mut State,
    req: &ApiReq,
    old: &Value,
    mut new: Value,
    options: &WriteOptions,
    operation: &str,
) -> Result<Value, ApiError> {
    let res = &RESOURCES[req.res];
    check_fields(state, res, &req.name, &mut new, options.validation)?;
    if new.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| n != req.name) {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    let current = resource_version(old).to_owned();
    let sent = resource_version(&new);
    if !sent.is_empty() && sent != current {
        return Err(ApiError::conflict(res, &req.name));
    }
    keep_the_other_half(res, &req.sub, old, &mut new);
    keep_the_servers_metadata(res, old, &mut new);
    finalizers_only_shrink_once_deleting(res, &req.name, old, &new)?;
    if req.sub.is_empty() {
        admission::admit(state, res, &req.ns, Some(old), &mut new)?;
    }
    if spec_part(old) != spec_part(&new) {
        let g = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
        new["metadata"]["generation"] = json!(g + 1);
    }
    new["metadata"]["resourceVersion"] = json!(current);
    if same_but_managed_fields(old, &new) {
        // A no-op write stores nothing and keeps the resourceVersion, as the apiserver does.
        return Ok(old.clone());
    }
    let time = state.now_str();
    managed::record(Some(old), &mut new, &options.manager, operation, &req.sub, &time);
    let key = Key::new(req.res, &req.ns, &req.name);
    let finished = new.pointer("/metadata/deletionTimestamp").is_some()
        && new.pointer("/metadata/finalizers").and_then(Value::as_array).is_none_or(Vec::is_empty);
    let stored = state.store.put(key.clone(), new);
    if finished {
        state.store.remove(&key);
    }
    Ok((*stored).clone())
}

fn resource_version(object: &Value) -> &str {
    object.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default()
}

/// A write to `/status` changes only the status; a write to the object itself changes
/// everything but the status, for a kind with a status subresource.
fn keep_the_other_half(res: &Resource, sub: &str, old: &Value, new: &mut Value) {
    let kept = if sub == "status" {
        let status = new.get("status").cloned();
        *new = old.clone();
        status
    } else if res.status {
        old.get("status").cloned()
    } else {
        return;
    };
    match kept {
        Some(status) => new["status"] = status,
        None => {
            if let Some(m) = new.as_object_mut() {
                m.remove("status");
            }
        }
    }
}

/// System metadata, the namespace, `apiVersion` and `kind` are the server's.
fn keep_the_servers_metadata(res: &Resource, old: &Value, new: &mut Value) {
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old.pointer(&format!("/metadata/{f}")) {
            Some(v) => new["metadata"][f] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(f);
                }
            }
        }
    }
    new["metadata"]["namespace"] = old["metadata"]["namespace"].clone();
    if !res.namespaced
        && let Some(m) = new["metadata"].as_object_mut()
    {
        m.remove("namespace");
    }
    new["apiVersion"] = json!(res.api_version());
    new["kind"] = json!(res.kind);
}

/// Once deletion has started, finalizers may only be removed.
fn finalizers_only_shrink_once_deleting(
    res: &Resource,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if old.pointer("/metadata/deletionTimestamp").is_none() {
        return Ok(());
    }
    let before: Vec<Value> =
        old.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
    match new.pointer("/metadata/finalizers").and_then(Value::as_array) {
        Some(after) if after.iter().any(|f| !before.contains(f)) => Err(ApiError::invalid(
            res,
            name,
            vec![("FieldValueForbidden", "metadata.finalizers".into(), "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted".into())],
        )),
        _ => Ok(()),
    }
}

/// Whether two versions of an object differ in nothing but their managed fields.
fn same_but_managed_fields(old: &Value, new: &Value) -> bool {
    let (mut old, mut new) = (old.clone(), new.clone());
    for v in [&mut old, &mut new] {
        if let Some(m) = v["metadata"].as_object_mut() {
            m.remove("managedFields");
        }
    }
    old == new
}

fn existing(state: &State, req: &ApiReq) -> Result<Value, ApiError> {
    state
        .store
        .get(&Key::new(req.res, &req.ns, &req.name))
        .cloned()
        .ok_or_else(|| ApiError::not_found(&RESOURCES[req.res], &req.name))
}

/// PUT.
pub(crate) fn update(
    state: &mut State,
    req: &ApiReq,
    body: &[u8],
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let new = parse_body(body)?;
    let old = existing(state, req)?;
    commit(state, req, &old, new, options, "Update")
}

/// PATCH, by content type.
pub(crate) fn patch(
    state: &mut State,
    req: &ApiReq,
    body: &[u8],
    content_type: &str,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let p = parse_body(body)?;
    let apply = content_type.starts_with("application/apply-patch");
    let old = match existing(state, req) {
        Ok(o) => o,
        Err(e) if apply && req.sub.is_empty() => {
            let _ = e;
            let mut body = p.clone();
            body["metadata"]["name"] = json!(req.name);
            let bytes = serde_json::to_vec(&body).unwrap_or_default();
            return create(state, req, &bytes, options);
        }
        Err(e) => return Err(e),
    };
    let mut new = old.clone();
    let operation = if apply { "Apply" } else { "Update" };
    if content_type.starts_with("application/json-patch+json") {
        patch::json_patch(&mut new, &p)?;
    } else if apply {
        patch::apply(&mut new, &p);
    } else if content_type.starts_with("application/merge-patch+json")
        || content_type.starts_with("application/strategic-merge-patch+json")
    {
        patch::merge(&mut new, &p);
    } else {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {content_type:?})"
            ),
        ));
    }
    if p.pointer("/metadata/resourceVersion").is_none() {
        // A patch without a resourceVersion is unconditional.
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
    }
    commit(state, req, &old, new, options, operation)
}

/// SelfSubjectAccessReview: answered from the caller's own rules.
pub(crate) fn access_review(state: &State, user: &str, body: &[u8]) -> Result<Value, ApiError> {
    let mut review = parse_body(body)?;
    let attrs = review.pointer("/spec/resourceAttributes").cloned().unwrap_or(json!({}));
    let s = |k: &str| attrs.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let (verb, group, resource, sub, ns) =
        (s("verb"), s("group"), s("resource"), s("subresource"), s("namespace"));
    let a = Access { verb: &verb, group: &group, resource: &resource, sub: &sub, ns: &ns };
    let allowed = state.identities.iter().find(|i| i.user == user).is_some_and(|i| i.may(&a));
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    review["status"] = if allowed {
        json!({"allowed": true, "reason": "allowed by the simulated cluster's rules"})
    } else {
        json!({"allowed": false})
    };
    Ok(review)
}
