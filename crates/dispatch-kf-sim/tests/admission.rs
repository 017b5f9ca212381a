//! TrainJob admission with the Trainer's messages, authentication (401), RBAC (403 with
//! the authorizer's message) and SelfSubjectAccessReview answered from the same rules.

mod common;

use common::*;
use dispatch_kf_sim::{Identity, Rule};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn trainjob_name_must_be_an_rfc1035_label_of_at_most_63_characters() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    let err = api_status(
        api.create(&PostParams::default(), &trainjob("1abc", "rt", true)).await.unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message.ends_with("metadata.name must match RFC 1035 DNS label format"),
        "{}",
        err.message
    );
    let long = "a".repeat(64);
    let err = api_status(
        api.create(&PostParams::default(), &trainjob(&long, "rt", true)).await.unwrap_err(),
    );
    assert!(
        err.message.contains("metadata.name must be no more than 63 characters"),
        "{}",
        err.message
    );
    let ok = "a".repeat(63);
    api.create(&PostParams::default(), &trainjob(&ok, "rt", true)).await.unwrap();
}

#[tokio::test]
async fn trainer_command_args_and_env_allow_at_most_128_items() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    let mut tj = trainjob("a", "rt", true);
    tj.data["spec"]["trainer"]["command"] = json!(vec!["x"; 129]);
    let err = api_status(api.create(&PostParams::default(), &tj).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "TrainJob.trainer.kubeflow.org \"a\" is invalid: spec.trainer.command: Too many: 129: must have at most 128 items"
    );
    tj.data["spec"]["trainer"]["command"] = json!(vec!["x"; 128]);
    api.create(&PostParams::default(), &tj).await.unwrap();
}

#[tokio::test]
async fn immutable_trainjob_fields_cannot_change() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap();
    let p = Patch::Merge(json!({"spec": {"trainer": {"image": "other"}}}));
    let err = api_status(api.patch("a", &PatchParams::default(), &p).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(
        err.message.ends_with("spec.trainer: Invalid value: \"object\": field is immutable"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn runtime_patches_change_only_while_suspended_before_or_after() {
    let sim = sim().await;
    install_runtime(&sim, "rt");
    let api = trainjobs(&client(&sim).await);
    api.create(&PostParams::default(), &trainjob("a", "rt", false)).await.unwrap();
    let patch = |v: i32| {
        Patch::Merge(
            json!({"spec": {"runtimePatches": [{"manager": "m", "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"v": v.to_string()}}}}}]}}),
        )
    };
    let err = api_status(api.patch("a", &PatchParams::default(), &patch(1)).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "admission webhook \"validator.trainjob.trainer.kubeflow.org\" denied the request: spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended before or after the update"
    );
    // Suspending in the same request is allowed, but not while the JobSet still counts
    // active Jobs (Trainer v2.2 and v2.3, `plugins/jobset`).
    let both =
        Patch::Merge(json!({"spec": {"suspend": true, "runtimePatches": [{"manager": "m"}]}}));
    let err = api_status(api.patch("a", &PatchParams::default(), &both).await.unwrap_err());
    assert_eq!(
        err.message,
        "admission webhook \"validator.trainjob.trainer.kubeflow.org\" denied the request: spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob node is still active"
    );
    let suspend = Patch::Merge(json!({"spec": {"suspend": true}}));
    api.patch("a", &PatchParams::default(), &suspend).await.unwrap();
    sim.settle();
    let out = api.patch("a", &PatchParams::default(), &both).await.unwrap();
    assert!(field(&out, "/spec/runtimePatches/0/time").is_some(), "the webhook stamps the time");
}

#[tokio::test]
async fn a_trainjob_naming_a_missing_runtime_is_refused_by_the_webhook() {
    let sim = sim().await;
    let api = trainjobs(&client(&sim).await);
    let err = api_status(
        api.create(&PostParams::default(), &trainjob("a", "missing", true)).await.unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert!(err.message.contains("trainingruntimes.trainer.kubeflow.org \"missing\" not found: specified trainingRuntime must be created before the TrainJob is created"), "{}", err.message);
    assert!(sim.list("trainjobs", "default").is_empty());
}

#[tokio::test]
async fn an_unknown_token_is_unauthorized() {
    let sim = sim().await;
    let mut c = config(&sim, "admin").await;
    c.auth_info.token = Some("wrong".to_string().into());
    let api = trainjobs(&kube::Client::try_from(c).unwrap());
    let err = api_status(api.get("a").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn a_request_no_rule_allows_is_forbidden_with_the_rbac_message() {
    let sim = sim().await;
    sim.add_identity(Identity::new("reader").allow(Rule::new(
        &["get", "list"],
        "trainer.kubeflow.org",
        &["trainjobs"],
    )));
    install_runtime(&sim, "rt");
    let api = trainjobs(&client_as(&sim, "reader").await);
    api.list(&Default::default()).await.unwrap();
    let err = api_status(
        api.create(&PostParams::default(), &trainjob("a", "rt", true)).await.unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "trainjobs.trainer.kubeflow.org is forbidden: User \"reader\" cannot create resource \"trainjobs\" in API group \"trainer.kubeflow.org\" in the namespace \"default\""
    );
    let err = api_status(api.delete("x", &Default::default()).await.unwrap_err());
    assert!(
        err.message.starts_with("trainjobs.trainer.kubeflow.org \"x\" is forbidden"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn self_subject_access_review_answers_from_the_same_rules() {
    let sim = sim().await;
    sim.add_identity(
        Identity::new("logs").allow(Rule::new(&["get"], "", &["pods/log"]).in_namespace("default")),
    );
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client_as(&sim, "logs").await);
    let ask = |verb: &str, sub: &str| SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some(verb.into()),
                resource: Some("pods".into()),
                subresource: Some(sub.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let yes = reviews.create(&PostParams::default(), &ask("get", "log")).await.unwrap();
    assert!(yes.status.unwrap().allowed);
    let no = reviews.create(&PostParams::default(), &ask("get", "")).await.unwrap();
    assert!(!no.status.unwrap().allowed);
}

#[tokio::test]
async fn a_request_without_credentials_is_unauthorized_unless_the_sim_has_an_anonymous_identity() {
    let sim = sim().await;
    let mut c = config(&sim, "admin").await;
    c.auth_info.token = None;
    let err = api_status(
        trainjobs(&kube::Client::try_from(c.clone()).unwrap()).get("a").await.unwrap_err(),
    );
    assert_eq!(err.code, 401);
    let opts =
        dispatch_kf_sim::SimOptions { anonymous: Some("admin".into()), ..Default::default() };
    let open = dispatch_kf_sim::Sim::start(opts).await.unwrap();
    let mut c = config(&open, "admin").await;
    c.auth_info.token = None;
    let err =
        api_status(trainjobs(&kube::Client::try_from(c).unwrap()).get("a").await.unwrap_err());
    assert_eq!(err.code, 404, "anonymous acts as admin");
    assert_eq!(open.requests().last().and_then(|r| r.user.clone()).as_deref(), Some("admin"));
}
