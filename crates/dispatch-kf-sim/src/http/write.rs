//! The write requests: create, update (PUT) and patch (merge, JSON, strategic-as-merge,
//! apply-as-merge), their options read from the query, and SelfSubjectAccessReview.
//! The request's body is read here; the write itself is the registry's.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::http::request::ApiReq;
use crate::plain::apierror::ApiError;
use crate::plain::auth::Access;
use crate::plain::patch;
use crate::plain::resources::RESOURCES;
use crate::plain::schema::Validation;
use crate::registry::{self, WriteOptions};
use crate::store::Key;
use crate::store::State;

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

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

/// Creates an object from a request body: a JSON object, in the request's namespace.
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
    registry::create(state, req.res, &req.ns, obj, options)
}

fn key(req: &ApiReq) -> Key {
    Key::new(req.res, &req.ns, &req.name)
}

fn existing(state: &State, req: &ApiReq) -> Result<Value, ApiError> {
    state
        .store
        .get(&key(req))
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
    registry::commit(state, &key(req), &req.sub, &old, new, options, "Update")
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
    registry::commit(state, &key(req), &req.sub, &old, new, options, operation)
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
