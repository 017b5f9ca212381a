//! Lists through the real client: label selectors with every operator, list metadata's
//! resourceVersion, pagination, and the PartialObjectMetadataList `list_metadata` asks for.

mod common;

use common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

async fn three_configmaps(api: &Api<ConfigMap>) {
    for (name, labels) in [
        ("a", json!({"team": "x", "tier": "1"})),
        ("b", json!({"team": "y"})),
        ("c", json!({"tier": "2"})),
    ] {
        let cm =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
}

async fn names(api: &Api<ConfigMap>, selector: &str) -> Vec<String> {
    let list = api.list(&ListParams::default().labels(selector)).await.unwrap();
    list.items.into_iter().filter_map(|c| c.metadata.name).collect()
}

#[tokio::test]
async fn label_selectors_filter_lists_with_every_operator() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    three_configmaps(&api).await;
    assert_eq!(names(&api, "team=x").await, ["a"]);
    assert_eq!(names(&api, "team==y").await, ["b"]);
    assert_eq!(names(&api, "team!=x").await, ["b", "c"]);
    assert_eq!(names(&api, "team in (x,y)").await, ["a", "b"]);
    assert_eq!(names(&api, "team notin (x)").await, ["b", "c"]);
    assert_eq!(names(&api, "tier").await, ["a", "c"]);
    assert_eq!(names(&api, "!tier").await, ["b"]);
    assert_eq!(names(&api, "team,tier").await, ["a"]);
}

#[tokio::test]
async fn list_carries_the_current_resource_version_and_pages() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    three_configmaps(&api).await;
    let page = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(page.metadata.resource_version, Some(sim.resource_version().to_string()));
    assert_eq!(page.items.len(), 2);
    let token = page.metadata.continue_.clone().unwrap();
    let rest = api.list(&ListParams::default().limit(2).continue_token(&token)).await.unwrap();
    assert_eq!(rest.items.len(), 1);
    assert!(rest.metadata.continue_.is_none_or(|c| c.is_empty()));
}

#[tokio::test]
async fn list_metadata_returns_partial_object_metadata() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    three_configmaps(&api).await;
    let list = api.list_metadata(&ListParams::default().labels("team")).await.unwrap();
    let got: Vec<_> = list.items.iter().filter_map(|m| m.metadata.name.clone()).collect();
    assert_eq!(got, ["a", "b"]);
    assert_eq!(
        list.items[0].types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let reqs = sim.requests();
    assert_eq!(reqs.last().map(|r| r.verb.as_str()), Some("list"));
}
