//! Create, get, update, patch and their failures through the real `kube::Client`:
//! AlreadyExists, optimistic-concurrency Conflict, generateName, generation, the status
//! subresource, managedFields, discovery and "not served".

mod common;

use common::*;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn create_fills_server_metadata_and_a_second_create_is_already_exists() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    let created = api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert!(created.metadata.resource_version.is_some());
    assert_eq!(created.metadata.generation, Some(1));
    let err = api_status(
        api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "trainjobs.trainer.kubeflow.org \"a\" already exists");
}

#[tokio::test]
async fn generate_name_appends_a_five_character_suffix() {
    let sim = sim().await;
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::default_namespaced(client(&sim).await);
    let cm = serde_json::from_value(json!({"metadata": {"generateName": "cfg-"}})).unwrap();
    let made = cms.create(&PostParams::default(), &cm).await.unwrap();
    let name = made.metadata.name.unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn get_of_a_missing_object_is_not_found_with_the_real_message() {
    let sim = sim().await;
    let err = api_status(trainjobs(&client(&sim).await).get("nope").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "trainjobs.trainer.kubeflow.org \"nope\" not found");
}

#[tokio::test]
async fn create_in_a_missing_namespace_is_not_found() {
    let sim = sim().await;
    let api: kube::Api<DynamicObject> =
        kube::Api::namespaced_with(client(&sim).await, "ghost", &trainjobs_ar());
    let err = api_status(
        api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err(),
    );
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "namespaces \"ghost\" not found");
}

#[tokio::test]
async fn update_with_a_stale_resource_version_is_conflict() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap();
    let first = api.get("a").await.unwrap(); // the Trainer has written its condition since
    let mut second = first.clone();
    second.metadata.labels.get_or_insert_default().insert("x".into(), "1".into());
    api.replace("a", &PostParams::default(), &second).await.unwrap();
    let mut stale = first.clone();
    stale.metadata.labels.get_or_insert_default().insert("x".into(), "2".into());
    let err = api_status(api.replace("a", &PostParams::default(), &stale).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on trainjobs.trainer.kubeflow.org \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

#[tokio::test]
async fn generation_bumps_on_spec_change_only() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap();
    let labelled = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"y": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(1));
    let resumed = api
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"suspend": false}})))
        .await
        .unwrap();
    assert_eq!(resumed.metadata.generation, Some(2));
}

#[tokio::test]
async fn status_subresource_ignores_spec_and_main_resource_ignores_status() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap();
    let p = json!({"spec": {"suspend": false}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
    let via_status =
        api.patch_status("a", &PatchParams::default(), &Patch::Merge(p.clone())).await.unwrap();
    assert_eq!(field(&via_status, "/spec/suspend"), Some(&json!(true)));
    assert_eq!(field(&via_status, "/status/conditions/0/type"), Some(&json!("Complete")));
    let p2 = json!({"status": {"conditions": []}, "metadata": {"labels": {"z": "1"}}});
    let via_main = api.patch("a", &PatchParams::default(), &Patch::Merge(p2)).await.unwrap();
    assert_eq!(field(&via_main, "/status/conditions/0/type"), Some(&json!("Complete")));
}

#[tokio::test]
async fn json_patch_applies_and_a_failed_test_operation_is_invalid() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap();
    let ops = json!([
        {"op": "test", "path": "/spec/suspend", "value": true},
        {"op": "replace", "path": "/spec/suspend", "value": false}
    ]);
    let c = client(&sim).await;
    let send = |ops: serde_json::Value| {
        let req = http::Request::patch(
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/a",
        )
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&ops).unwrap())
        .unwrap();
        let c = c.clone();
        async move { c.request::<DynamicObject>(req).await }
    };
    let out = send(ops.clone()).await.unwrap();
    assert_eq!(field(&out, "/spec/suspend"), Some(&json!(false)));
    let err = api_status(send(ops).await.unwrap_err());
    assert_eq!(err.code, 422);
}

#[tokio::test]
async fn managed_fields_name_the_field_manager_that_set_suspend() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.create(
        &PostParams { field_manager: Some("dispatch".into()), ..Default::default() },
        &trainjob("a", "rt", true),
    )
    .await
    .unwrap();
    let obj = sim.get("trainjobs", "default", "a").unwrap();
    assert_eq!(dispatch_kf_sim::owner_of(&obj, &["spec", "suspend"]).as_deref(), Some("dispatch"));
    api.patch(
        "a",
        &PatchParams::apply("admin-tool"),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .unwrap();
    let obj = sim.get("trainjobs", "default", "a").unwrap();
    assert_eq!(
        dispatch_kf_sim::owner_of(&obj, &["spec", "suspend"]).as_deref(),
        Some("admin-tool")
    );
    assert_eq!(dispatch_kf_sim::owner_of(&obj, &["spec", "trainer"]).as_deref(), Some("dispatch"));
}

#[tokio::test]
async fn an_unserved_group_version_answers_plain_404_page_not_found() {
    let opts = dispatch_kf_sim::SimOptions {
        unserved: vec!["kueue.x-k8s.io/v1beta2".into()],
        ..Default::default()
    };
    let sim = dispatch_kf_sim::Sim::start(opts).await.unwrap();
    let api: kube::Api<DynamicObject> =
        kube::Api::namespaced_with(client(&sim).await, "default", &workloads_ar());
    let err = api_status(api.list(&Default::default()).await.unwrap_err());
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "Failed to parse error data");
    let served = kube::Discovery::new(client(&sim).await).run().await.unwrap();
    assert!(served.has_group("trainer.kubeflow.org"));
    assert!(!served.has_group("kueue.x-k8s.io"));
}

#[tokio::test]
async fn a_protobuf_body_is_unsupported_media_type() {
    let sim = sim().await;
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .body(b"k8s\0".to_vec())
        .unwrap();
    let err = api_status(client(&sim).await.request::<DynamicObject>(req).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (415, "UnsupportedMediaType"));
    assert!(sim.list("configmaps", "default").is_empty());
}
