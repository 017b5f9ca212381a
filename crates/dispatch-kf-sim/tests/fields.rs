//! Fields a schema does not declare, as a real apiserver meets them
//! (`docs/dev/sim.md#fields-and-openapi`): dropped with a warning by default, refused under
//! `fieldValidation=Strict`, and a value of the wrong type is 422 Invalid. Messages are
//! the ones Kubernetes v1.36 printed for the same requests.

mod common;

use common::*;
use kube::api::{Patch, PatchParams, PostParams, ValidationDirective};
use serde_json::json;

#[tokio::test]
async fn an_undeclared_field_is_dropped_from_what_is_stored() {
    let sim = demo().await;
    let created = trainjobs(&client(&sim).await)
        .create(
            &PostParams::default(),
            &tj("a", 1, true, json!({"spec": {"gpus": 8, "trainer": {"cpu": 1}}})),
        )
        .await
        .unwrap();
    assert_eq!(field(&created, "/spec/gpus"), None);
    assert_eq!(field(&created, "/spec/trainer/cpu"), None);
    assert_eq!(field(&created, "/spec/trainer/numNodes"), Some(&json!(1)));
    let stored = sim.get("trainjobs", "default", "a").unwrap();
    assert!(stored.pointer("/spec/gpus").is_none(), "{stored}");
}

#[tokio::test]
async fn strict_validation_refuses_naming_every_undeclared_field_and_writes_nothing() {
    let sim = demo().await;
    let api = trainjobs(&client(&sim).await);
    let mut apply = PatchParams::apply("test");
    apply.field_validation = Some(ValidationDirective::Strict);
    let object = tj("a", 1, true, json!({"spec": {"gpus": 8, "trainer": {"cpu": 1}}}));
    let refused = api_status(api.patch("a", &apply, &Patch::Apply(&object)).await.unwrap_err());
    assert_eq!((refused.code, refused.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        refused.message,
        "TrainJob in version \"v1alpha1\" cannot be handled as a TrainJob: strict decoding error: \
         unknown field \"spec.gpus\", unknown field \"spec.trainer.cpu\""
    );
    assert!(sim.get("trainjobs", "default", "a").is_none());
}

#[tokio::test]
async fn a_value_of_the_wrong_type_is_invalid_naming_the_field_and_both_types() {
    let sim = demo().await;
    let api = trainjobs(&client(&sim).await);
    let object = tj("a", 1, true, json!({"spec": {"trainer": {"numNodes": "two"}}}));
    let refused = api_status(api.create(&PostParams::default(), &object).await.unwrap_err());
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        refused.message,
        "TrainJob.trainer.kubeflow.org \"a\" is invalid: spec.trainer.numNodes: Invalid value: \
         \"string\": spec.trainer.numNodes in body must be of type integer: \"string\""
    );
}

#[tokio::test]
async fn other_kinds_keep_their_spec_but_not_an_undeclared_metadata_field() {
    let sim = demo().await;
    let api: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(client(&sim).await, "default", &jobsets_ar());
    let jobset = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "js", "color": "red"},
        "spec": {"suspend": true, "replicatedJobs": [], "anything": {"kept": true}}});
    let jobset = serde_json::from_value(jobset).unwrap();
    let created = api.create(&PostParams::default(), &jobset).await.unwrap();
    assert_eq!(field(&created, "/spec/anything/kept"), Some(&json!(true)));
    assert_eq!(field(&created, "/metadata/color"), None);
}

#[tokio::test]
async fn an_unknown_field_validation_directive_is_invalid() {
    let sim = demo().await;
    let client = client(&sim).await;
    let request = http::Request::post(
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs?fieldValidation=strict",
    )
    .header("content-type", "application/json")
    .body(serde_json::to_vec(&tj("a", 1, true, json!({}))).unwrap())
    .unwrap();
    let refused = client.request::<serde_json::Value>(request).await.unwrap_err();
    let refused = api_status(refused);
    assert_eq!(refused.code, 422);
    assert_eq!(
        refused.message,
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": \
         supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
}
