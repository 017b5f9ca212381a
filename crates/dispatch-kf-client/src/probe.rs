//! What the cluster serves and what the adapter may do: group-version discovery and
//! SelfSubjectAccessReviews.

use dispatch_core::{CallContext, Kind, Result};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

use crate::cluster::Cluster;
use crate::error_map::RequestClass;
use crate::resources::Resource;

/// One permission: a verb on a resource (and subresource) in a namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permission {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`.
    pub verb: &'static str,
    /// The resource.
    pub resource: Resource,
    /// The subresource (`log`, `status`), or empty.
    pub subresource: &'static str,
}

impl Cluster {
    /// Whether the apiserver serves `group_version` (`trainer.kubeflow.org/v1alpha1`).
    /// A 404 means it does not, which is an answer, not an error.
    pub async fn serves(&self, cx: &CallContext, group_version: &str) -> Result<bool> {
        let what = format!("discover {group_version}");
        Ok(self.discovery_document(cx, &what, "", group_version).await?.is_some())
    }

    /// The OpenAPI v3 document the apiserver serves for `group_version`
    /// (`/openapi/v3/apis/trainer.kubeflow.org/v1alpha1`), or `None` where it serves
    /// none (404: a group-version it does not serve, or an apiserver that publishes no
    /// OpenAPI v3).
    pub async fn openapi(
        &self,
        cx: &CallContext,
        group_version: &str,
    ) -> Result<Option<serde_json::Value>> {
        let what = format!("read the OpenAPI schema of {group_version}");
        self.discovery_document(cx, &what, "/openapi/v3", group_version).await
    }

    /// The document at `<prefix>/apis/<group_version>` (`/api/v1` for the core group),
    /// or `None` on 404, which is an answer, not an error.
    async fn discovery_document(
        &self,
        cx: &CallContext,
        what: &str,
        prefix: &str,
        group_version: &str,
    ) -> Result<Option<serde_json::Value>> {
        let path = if group_version.contains('/') { "apis" } else { "api" };
        let url = format!("{prefix}/{path}/{group_version}");
        let result = self
            .call(cx, RequestClass::Discovery, what, |client| {
                let url = url.clone();
                async move {
                    let request =
                        http::Request::get(url).body(Vec::new()).map_err(kube::Error::HttpError)?;
                    client.request::<serde_json::Value>(request).await
                }
            })
            .await;
        match result {
            Ok(document) => Ok(Some(document)),
            Err(e) if e.is(Kind::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the adapter's identity may do `permission` in `namespace`, answered by a
    /// SelfSubjectAccessReview (a create that changes nothing, so classified as a read).
    pub async fn can_i(
        &self,
        cx: &CallContext,
        namespace: &str,
        permission: &Permission,
    ) -> Result<bool> {
        let resource = permission.resource;
        let attributes = ResourceAttributes {
            verb: Some(permission.verb.to_owned()),
            group: Some(resource.group.to_owned()),
            resource: Some(resource.plural.to_owned()),
            subresource: (!permission.subresource.is_empty())
                .then(|| permission.subresource.to_owned()),
            namespace: resource.namespaced.then(|| namespace.to_owned()),
            ..ResourceAttributes::default()
        };
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(attributes),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let sub = if permission.subresource.is_empty() {
            String::new()
        } else {
            format!("/{}", permission.subresource)
        };
        let what = format!("review access: {} {}{sub}", permission.verb, resource.plural);
        let answer = self
            .call(cx, RequestClass::Read, &what, |client| async move {
                Api::<SelfSubjectAccessReview>::all(client)
                    .create(&PostParams::default(), &review)
                    .await
            })
            .await?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}
