//! `deletecollection` (`DELETE` on a collection path), as the apiserver's generic
//! registry does it (`Store.DeleteCollection` in k8s.io/apiserver
//! `pkg/registry/generic/registry/store.go`): the objects the label and field selectors
//! match in the namespace are each deleted with the request's `DeleteOptions`
//! (propagation, grace period, preconditions), and the answer is 200 with the list of
//! those objects as they were listed. A resource whose discovery verbs lack
//! `deletecollection` (namespaces), or a namespaced resource addressed across all
//! namespaces, is 405, as the apiserver registers no such route.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::http::read::Selection;
use crate::http::request::ApiReq;
use crate::plain::apierror::ApiError;
use crate::plain::resources::RESOURCES;
use crate::registry::{self, DeleteOptions};
use crate::store::Key;
use crate::store::State;

/// Deletes every matching object; the answer is the `<Kind>List` of what was deleted.
pub(crate) fn handle(
    state: &mut State,
    req: &ApiReq,
    q: &BTreeMap<String, String>,
    body: &[u8],
) -> Result<Value, ApiError> {
    let res = &RESOURCES[req.res];
    if !res.verbs.contains(&"deletecollection") || (res.namespaced && req.ns.is_empty()) {
        return Err(ApiError::method_not_allowed());
    }
    let opts = DeleteOptions::read(body, q)?;
    let matching: Vec<(Key, Value)> = Selection::from_query(q)?
        .select(state, req.res, &req.ns)
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut items = Vec::new();
    let mut first_error = None;
    for (key, obj) in matching {
        match registry::delete(state, &key, &opts) {
            Ok(_) => items.push(obj),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(json!({
        "kind": format!("{}List", res.kind),
        "apiVersion": res.api_version(),
        "metadata": {"resourceVersion": state.store.rv().to_string()},
        "items": items,
    }))
}
