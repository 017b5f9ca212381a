//! Reads: get, list (label and field selectors, pagination, resourceVersion), the
//! PartialObjectMetadata form kube's `list_metadata` asks for, and pods/log.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::http::request::ApiReq;
use crate::plain::apierror::ApiError;
use crate::plain::object::meta::str_at;
use crate::plain::resources::{RESOURCES, ResId};
use crate::plain::selector::Selector;
use crate::store::Key;
use crate::store::State;

/// A `fieldSelector` on `metadata.name` / `metadata.namespace` (the fields every
/// resource supports).
#[derive(Debug, Clone, Default)]
struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    fn parse(s: &str) -> Result<Self, ApiError> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, eq, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid field selector: {s}")));
            };
            if k != "metadata.name" && k != "metadata.namespace" {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {k} (use metadata.name or metadata.namespace)"
                )));
            }
            out.push((k.to_string(), eq, v.to_string()));
        }
        Ok(Self(out))
    }

    fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(k, eq, v)| {
            let ptr = if k == "metadata.name" { "/metadata/name" } else { "/metadata/namespace" };
            let got = str_at(obj, ptr);
            (got == v) == *eq
        })
    }
}

/// What a list, a watch or a deletecollection selects: its `labelSelector` and
/// `fieldSelector`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selection {
    labels: Selector,
    fields: FieldSelector,
}

impl Selection {
    /// The query's selectors; a malformed one is a 400 BadRequest.
    pub(crate) fn from_query(q: &BTreeMap<String, String>) -> Result<Self, ApiError> {
        let param = |name: &str| q.get(name).map_or("", String::as_str);
        Ok(Self {
            labels: Selector::parse(param("labelSelector"))?,
            fields: FieldSelector::parse(param("fieldSelector"))?,
        })
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// The stored objects of `res` in `ns` (every namespace when empty) it selects, in
    /// key order.
    pub(crate) fn select<'s>(
        &self,
        state: &'s State,
        res: ResId,
        ns: &'s str,
    ) -> Vec<(&'s Key, &'s Value)> {
        let mut found = state.store.select(res, ns, &self.labels);
        found.retain(|(_, v)| self.fields.matches(v));
        found
    }
}

/// Whether the Accept header asks for the metadata-only form.
pub(crate) fn wants_metadata(accept: &str) -> bool {
    accept.contains("as=PartialObjectMetadata")
}

/// The PartialObjectMetadata form of an object.
pub(crate) fn partial(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

pub(crate) fn get(state: &State, req: &ApiReq, accept: &str) -> Result<Value, ApiError> {
    let res = &RESOURCES[req.res];
    let obj = state
        .store
        .get(&Key::new(req.res, &req.ns, &req.name))
        .ok_or_else(|| ApiError::not_found(res, &req.name))?;
    Ok(if wants_metadata(accept) { partial(obj) } else { obj.clone() })
}

pub(crate) fn list(
    state: &State,
    req: &ApiReq,
    q: &BTreeMap<String, String>,
    accept: &str,
) -> Result<Value, ApiError> {
    let res = &RESOURCES[req.res];
    let selection = Selection::from_query(q)?;
    let limit: usize =
        q.get("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(usize::MAX);
    let start: usize = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => c.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid continue token {c:?}: pass back the token a list returned"
            ))
        })?,
        None => 0,
    };
    let meta = wants_metadata(accept);
    let matching: Vec<&Value> =
        selection.select(state, req.res, &req.ns).into_iter().map(|(_, v)| v).collect();
    let page: Vec<Value> = matching
        .iter()
        .skip(start)
        .take(limit)
        .map(|v| if meta { partial(v) } else { (*v).clone() })
        .collect();
    let next = start.saturating_add(page.len());
    let mut metadata = json!({"resourceVersion": state.store.rv().to_string()});
    if next < matching.len() {
        metadata["continue"] = json!(next.to_string());
        metadata["remainingItemCount"] = json!(matching.len() - next);
    }
    let (kind, api_version) = if meta {
        ("PartialObjectMetadataList".to_string(), "meta.k8s.io/v1".to_string())
    } else {
        (format!("{}List", res.kind), res.api_version())
    };
    Ok(json!({"kind": kind, "apiVersion": api_version, "metadata": metadata, "items": page}))
}
