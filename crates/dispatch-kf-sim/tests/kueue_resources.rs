//! Kueue's cluster-scoped configuration resources served as plain objects: ResourceFlavors
//! (short names `flavor`, `flavors`, `rf`, as Kueue's CRD declares) and
//! WorkloadPriorityClasses, through the real client.

mod common;

use common::*;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

fn kueue_ar(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind),
        plural,
    )
}

#[tokio::test]
async fn resource_flavors_and_workload_priority_classes_are_served_at_cluster_scope() {
    let sim = sim().await;
    let c = client(&sim).await;
    let list = c.list_api_group_resources("kueue.x-k8s.io/v1beta2").await.unwrap();
    let rf = list.resources.iter().find(|r| r.name == "resourceflavors").expect("served");
    assert!(!rf.namespaced);
    assert_eq!(
        rf.short_names.as_deref(),
        Some(&["flavor".to_string(), "flavors".into(), "rf".into()][..])
    );
    assert!(list.resources.iter().any(|r| r.name == "workloadpriorityclasses" && !r.namespaced));

    let flavors: Api<DynamicObject> =
        Api::all_with(c.clone(), &kueue_ar("ResourceFlavor", "resourceflavors"));
    let flavor: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "default-flavor"},
        "spec": {"nodeLabels": {"nvidia.com/gpu.present": "true"}}
    }))
    .unwrap();
    flavors.create(&PostParams::default(), &flavor).await.unwrap();
    let got = flavors.get("default-flavor").await.unwrap();
    assert_eq!(got.data["spec"]["nodeLabels"]["nvidia.com/gpu.present"], "true");

    let classes: Api<DynamicObject> =
        Api::all_with(c, &kueue_ar("WorkloadPriorityClass", "workloadpriorityclasses"));
    let class: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
        "metadata": {"name": "high"}, "value": 10000, "description": "urgent training"
    }))
    .unwrap();
    classes.create(&PostParams::default(), &class).await.unwrap();
    assert_eq!(sim.get("workloadpriorityclasses", "", "high").unwrap()["value"], 10000);
}
