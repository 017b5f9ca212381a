//! Deletion through the real client: uid and resourceVersion preconditions, Background,
//! Foreground and Orphan propagation through owner references, the garbage collector's
//! lag (orphans live until the virtual clock passes it), finalizers, and pods that stay
//! Terminating on a node that is not Ready.

mod common;

use std::time::Duration;

use common::*;
use dispatch_kf_sim::{Sim, SimOptions};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use serde_json::{Value, json};

/// A TrainJob `a` and a ConfigMap `dep` it owns; returns the TrainJob's uid.
async fn owner_and_dependent(sim: &Sim, finalizers: Value) -> String {
    install_runtime(sim, "rt");
    let tj = trainjobs(&client(sim).await)
        .create(&PostParams::default(), &trainjob("a", "rt", true))
        .await
        .unwrap();
    let uid = tj.metadata.uid.unwrap();
    sim.apply(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "dep", "namespace": "default", "finalizers": finalizers, "ownerReferences": [{
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "a", "uid": uid,
            "controller": true, "blockOwnerDeletion": true
        }]}
    }))
    .unwrap();
    uid
}

fn policy(p: PropagationPolicy) -> DeleteParams {
    DeleteParams { propagation_policy: Some(p), ..Default::default() }
}

#[tokio::test]
async fn a_uid_precondition_that_does_not_match_is_conflict() {
    let sim = sim().await;
    owner_and_dependent(&sim, json!([])).await;
    let api = trainjobs(&client(&sim).await);
    let dp = DeleteParams {
        preconditions: Some(Preconditions { uid: Some("other".into()), resource_version: None }),
        ..Default::default()
    };
    let err = api_status(api.delete("a", &dp).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("Precondition failed: UID in precondition: other"),
        "{}",
        err.message
    );
    let dp = DeleteParams {
        preconditions: Some(Preconditions { uid: None, resource_version: Some("1".into()) }),
        ..Default::default()
    };
    let err = api_status(api.delete("a", &dp).await.unwrap_err());
    assert!(
        err.message.contains("Precondition failed: ResourceVersion in precondition: 1"),
        "{}",
        err.message
    );
    assert!(sim.get("trainjobs", "default", "a").is_some());
}

#[tokio::test]
async fn background_deletion_removes_the_owner_at_once_and_dependents_after_the_gc_lag() {
    let sim = Sim::start(SimOptions { gc_lag: Duration::from_secs(30), ..Default::default() })
        .await
        .unwrap();
    let uid = owner_and_dependent(&sim, json!([])).await;
    let api = trainjobs(&client(&sim).await);
    let dp = DeleteParams {
        preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
        ..policy(PropagationPolicy::Background)
    };
    api.delete("a", &dp).await.unwrap();
    assert!(sim.get("trainjobs", "default", "a").is_none());
    assert!(sim.get("configmaps", "default", "dep").is_some(), "the orphan lives during the lag");
    sim.advance(Duration::from_secs(29));
    assert!(sim.get("configmaps", "default", "dep").is_some());
    sim.advance(Duration::from_secs(1));
    assert!(sim.get("configmaps", "default", "dep").is_none(), "collected once the lag passed");
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let sim = sim().await;
    owner_and_dependent(&sim, json!(["test/hold"])).await;
    let api = trainjobs(&client(&sim).await);
    api.delete("a", &policy(PropagationPolicy::Foreground)).await.unwrap();
    let owner = sim.get("trainjobs", "default", "a").expect("the owner waits");
    assert!(owner.pointer("/metadata/deletionTimestamp").is_some());
    assert_eq!(owner.pointer("/metadata/finalizers"), Some(&json!(["foregroundDeletion"])));
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::default_namespaced(client(&sim).await);
    cms.patch(
        "dep",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(sim.get("configmaps", "default", "dep").is_none());
    assert!(sim.get("trainjobs", "default", "a").is_none());
}

#[tokio::test]
async fn orphan_deletion_strips_owner_references_and_keeps_dependents() {
    let sim = sim().await;
    owner_and_dependent(&sim, json!([])).await;
    trainjobs(&client(&sim).await).delete("a", &policy(PropagationPolicy::Orphan)).await.unwrap();
    assert!(sim.get("trainjobs", "default", "a").is_none());
    let dep = sim.get("configmaps", "default", "dep").expect("kept");
    assert_eq!(dep.pointer("/metadata/ownerReferences"), None);
}

/// A Ready node `good` and a lost node `lost`, each running one pod (`p1` on `good`,
/// `p2` on `lost`) with `finalizers`.
async fn pods_on_a_good_and_a_lost_node(finalizers: Value) -> Sim {
    let sim = sim().await;
    for (node, ready) in [("good", "True"), ("lost", "Unknown")] {
        sim.apply(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}))
            .unwrap();
    }
    for (pod, node) in [("p1", "good"), ("p2", "lost")] {
        sim.apply(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": "default", "finalizers": finalizers},
            "spec": {"nodeName": node, "containers": [{"name": "node", "image": "x"}]},
            "status": {"phase": "Running"}}))
            .unwrap();
    }
    sim
}

#[tokio::test]
async fn a_pod_on_a_node_that_is_not_ready_stays_terminating() {
    let sim = pods_on_a_good_and_a_lost_node(json!([])).await;
    let pods: Api<Pod> = Api::default_namespaced(client(&sim).await);
    pods.delete("p1", &DeleteParams::default()).await.unwrap();
    assert!(sim.get("pods", "default", "p1").is_none(), "the kubelet confirms at once");
    pods.delete("p2", &DeleteParams::default()).await.unwrap();
    let p2 = pods.get("p2").await.unwrap();
    assert!(p2.metadata.deletion_timestamp.is_some());
    assert_eq!(p2.metadata.deletion_grace_period_seconds, Some(30));
    sim.advance(Duration::from_secs(3600));
    assert!(sim.get("pods", "default", "p2").is_some(), "nobody confirms on a lost node");
    pods.delete("p2", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() })
        .await
        .unwrap();
    assert!(sim.get("pods", "default", "p2").is_none(), "force deletion");
}

#[tokio::test]
async fn an_object_with_finalizers_goes_when_the_last_is_removed() {
    let sim = sim().await;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::default_namespaced(client(&sim).await);
    let cm =
        serde_json::from_value(json!({"metadata": {"name": "f", "finalizers": ["a/b", "c/d"]}}))
            .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    cms.delete("f", &DeleteParams::default()).await.unwrap();
    assert!(cms.get("f").await.unwrap().metadata.deletion_timestamp.is_some());
    cms.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["c/d"]}})),
    )
    .await
    .unwrap();
    assert!(sim.get("configmaps", "default", "f").is_some());
    cms.patch("f", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": []}})))
        .await
        .unwrap();
    assert!(sim.get("configmaps", "default", "f").is_none());
}

#[tokio::test]
async fn with_slow_termination_a_pod_stays_terminating_for_its_grace_period() {
    let sim = sim().await;
    sim.add_gpu_node("n", 8);
    sim.set_slow_termination(true);
    sim.apply(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"nodeName": "n", "terminationGracePeriodSeconds": 60, "containers": [{"name": "node", "image": "x"}]}}))
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client(&sim).await);
    pods.delete("p", &DeleteParams::default()).await.unwrap();
    sim.advance(Duration::from_secs(59));
    assert!(sim.get("pods", "default", "p").is_some(), "still Terminating inside its grace period");
    sim.advance(Duration::from_secs(1));
    assert!(sim.get("pods", "default", "p").is_none());
}

#[tokio::test]
async fn a_pod_in_graceful_deletion_goes_only_when_its_kubelet_confirms_even_without_finalizers() {
    let sim = pods_on_a_good_and_a_lost_node(json!(["example.com/keep"])).await;
    let pods: Api<Pod> = Api::default_namespaced(client(&sim).await);
    let no_finalizers = Patch::Merge(json!({"metadata": {"finalizers": []}}));
    for pod in ["p1", "p2"] {
        pods.delete(pod, &DeleteParams::default()).await.unwrap();
        assert!(sim.get("pods", "default", pod).is_some(), "{pod}: its finalizer holds it");
        pods.patch(pod, &PatchParams::default(), &no_finalizers).await.unwrap();
    }
    assert!(sim.get("pods", "default", "p1").is_none(), "a Ready node's kubelet confirms");
    let p2 = pods.get("p2").await.unwrap();
    assert_eq!(p2.metadata.deletion_grace_period_seconds, Some(30), "Terminating on a lost node");
    pods.delete("p2", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() })
        .await
        .unwrap();
    assert!(sim.get("pods", "default", "p2").is_none(), "a delete with period 0 ends it");
}
