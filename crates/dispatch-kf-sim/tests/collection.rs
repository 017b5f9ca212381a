//! `deletecollection` through the real client (`Api::delete_collection`): label and
//! field selectors, the 200 answer listing what was deleted, graceful deletion of pods,
//! the RBAC verb, and the 405 where the apiserver serves no such route.

mod common;

use common::*;
use dispatch_kf_sim::{Identity, Rule};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::json;

async fn configmap(api: &Api<ConfigMap>, name: &str, labels: serde_json::Value) {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
}

#[tokio::test]
async fn deletecollection_deletes_what_the_selectors_match_and_answers_their_list() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    configmap(&api, "a", json!({"team": "x"})).await;
    configmap(&api, "b", json!({"team": "x"})).await;
    configmap(&api, "c", json!({"team": "y"})).await;
    let lp = ListParams::default().labels("team=x");
    let out = api.delete_collection(&DeleteParams::default(), &lp).await.unwrap();
    let list = out.left().expect("the apiserver answers the list of deleted objects");
    let names: Vec<String> = list.items.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let left: Vec<String> = sim
        .list("configmaps", "default")
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left, ["c"]);
    let lp = ListParams::default().fields("metadata.name=c");
    let out = api.delete_collection(&DeleteParams::default(), &lp).await.unwrap();
    assert_eq!(out.left().unwrap().items.len(), 1);
    assert!(sim.list("configmaps", "default").is_empty());
    let r = sim.requests().into_iter().rev().find(|r| r.verb == "deletecollection").unwrap();
    assert_eq!((r.resource.as_str(), r.status, r.effect), ("configmaps", Some(200), true));
}

#[tokio::test]
async fn deletecollection_of_pods_deletes_them_gracefully() {
    let sim = demo().await;
    start(&sim, tj("job", 2, false, json!({}))).await;
    sim.set_slow_termination(true);
    let api: Api<Pod> = Api::default_namespaced(client(&sim).await);
    let lp = ListParams::default().labels("batch.kubernetes.io/job-name=job-node-0");
    let out = api.delete_collection(&DeleteParams::default(), &lp).await.unwrap();
    assert_eq!(out.left().unwrap().items.len(), 2);
    let now = pods(&sim);
    assert_eq!(now.len(), 2, "Terminating for their grace period");
    assert!(now.iter().all(|p| p["metadata"]["deletionTimestamp"].is_string()));
    sim.advance(std::time::Duration::from_secs(30));
    assert!(pods(&sim).is_empty());
}

#[tokio::test]
async fn deletecollection_is_its_own_rbac_verb() {
    let sim = sim().await;
    sim.add_identity(Identity::new("dev").allow(Rule::new(
        &["create", "delete"],
        "",
        &["configmaps"],
    )));
    let api: Api<ConfigMap> = Api::default_namespaced(client_as(&sim, "dev").await);
    configmap(&api, "a", json!({})).await;
    let err =
        api.delete_collection(&DeleteParams::default(), &ListParams::default()).await.unwrap_err();
    let s = api_status(err);
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "configmaps is forbidden: User \"dev\" cannot deletecollection resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert!(sim.get("configmaps", "default", "a").is_some());
}

#[tokio::test]
async fn deletecollection_where_the_apiserver_has_no_route_is_method_not_allowed() {
    let sim = sim().await;
    let c = client(&sim).await;
    let all_ns: Api<Namespace> = Api::all(c.clone());
    let err = all_ns
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 405, "namespaces have no deletecollection");
    assert_eq!(sim.list("namespaces", "").len(), 2);
    let across: Api<ConfigMap> = Api::all(c);
    let err = across
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 405, "a namespaced resource across all namespaces");
}
