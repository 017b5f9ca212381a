//! kubectl against `dispatch-kf sim serve` behaves as against a real cluster (issue
//! 19): HTTPS with the kubeconfig's CA and token, anonymous requests refused, `apply`
//! validated on the server against the TrainJob's schema, and `explain` reading the
//! schema from `/openapi/v3`. docs/dev/sim.md#fields-and-openapi names these tests.

mod common;

const TRAIN_JOB: &str = r#"{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
  "metadata": {"name": "hello"},
  "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}}}"#;

#[test]
fn kubectl_applies_a_train_job_and_applies_it_again_unchanged() {
    let served = common::Served::start("kubectl-apply");
    let created = served.kubectl(&["apply", "-f", "-"], Some(TRAIN_JOB)).unwrap();
    assert_eq!(created.trim(), "trainjob.trainer.kubeflow.org/hello created");
    let again = served.kubectl(&["apply", "-f", "-"], Some(TRAIN_JOB)).unwrap();
    assert_eq!(again.trim(), "trainjob.trainer.kubeflow.org/hello unchanged");
    let nodes = served
        .kubectl(&["get", "trainjob", "hello", "-o", "jsonpath={.spec.trainer.numNodes}"], None);
    assert_eq!(nodes.unwrap(), "1");
}

#[test]
fn kubectl_apply_names_every_field_the_schema_does_not_declare() {
    let served = common::Served::start("kubectl-strict");
    let bad = TRAIN_JOB.replace(r#""numNodes": 1"#, r#""numNodes": 1, "gpus": 8"#);
    let bad = bad.replace(r#""metadata": {"#, r#""metadata": {"label": "x", "#);
    let refused = served.kubectl(&["apply", "-f", "-"], Some(&bad)).unwrap_err();
    assert!(
        refused.contains(
            "TrainJob in version \"v1alpha1\" cannot be handled as a TrainJob: strict decoding error: \
             unknown field \"metadata.label\", unknown field \"spec.trainer.gpus\""
        ),
        "{refused}"
    );
    assert!(served.kubectl(&["get", "trainjob", "hello"], None).is_err(), "nothing was written");
    let warned = served.kubectl(&["apply", "--validate=warn", "-f", "-"], Some(&bad));
    assert_eq!(warned.unwrap().trim(), "trainjob.trainer.kubeflow.org/hello created");
    let trainer =
        served.kubectl(&["get", "trainjob", "hello", "-o", "jsonpath={.spec.trainer}"], None);
    assert_eq!(trainer.unwrap(), r#"{"numNodes":1}"#, "the undeclared field was dropped");
}

#[test]
fn kubectl_explains_the_train_job_from_the_served_schema() {
    let served = common::Served::start("kubectl-explain");
    let spec = served.kubectl(&["explain", "trainjob.spec"], None).unwrap();
    for line in [
        "KIND:       TrainJob",
        "FIELD: spec <Object>",
        "runtimeRef\t<Object>",
        "suspend\t<boolean>",
    ] {
        assert!(spec.contains(line), "{line:?} missing from:\n{spec}");
    }
    let nodes = served.kubectl(&["explain", "trainjob.spec.trainer.numNodes"], None).unwrap();
    assert!(nodes.contains("FIELD: numNodes <integer>"), "{nodes}");
}

/// kubectl itself cannot send a request without credentials (it asks for a password
/// instead), so the anonymous request is kube's, built from the same kubeconfig less
/// its token: it verifies the server by the kubeconfig's CA and is refused 401.
#[test]
fn a_request_without_the_kubeconfigs_token_is_unauthorized() {
    let served = common::Served::start("kubectl-anonymous");
    let with_token = served.kubectl(&["get", "--raw", "/api/v1/namespaces/default"], None);
    assert!(with_token.unwrap().contains("\"name\":\"default\""));
    let wrong =
        served.kubectl(&["--token", "not-the-token", "get", "--raw", "/api/v1/namespaces"], None);
    let wrong = wrong.unwrap_err();
    assert!(wrong.contains("Unauthorized"), "{wrong}");

    let yaml = std::fs::read_to_string(served.kubeconfig()).unwrap();
    assert!(yaml.contains("server: https://127.0.0.1:"), "{yaml}");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let refused = runtime.block_on(async {
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
        config.auth_info.token = None;
        let client = kube::Client::try_from(config).unwrap();
        let gvk = kube::api::GroupVersionKind::gvk("", "v1", "Namespace");
        let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "namespaces");
        let namespaces = kube::Api::<kube::api::DynamicObject>::all_with(client, &resource);
        namespaces.list(&Default::default()).await.unwrap_err()
    });
    assert!(matches!(&refused, kube::Error::Api(s) if s.code == 401), "{refused:?}");
}
