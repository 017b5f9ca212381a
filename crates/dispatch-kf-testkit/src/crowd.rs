//! Filling a cluster for the benches: namespaces, and the TrainJobs other tenants hold
//! (suspended, on the stock runtime, of no dispatch job).

use futures::StreamExt;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;

use dispatch_kf_model::keys;

/// Creates in flight at once.
const CONCURRENCY: usize = 16;

/// Makes namespace `name`, unless it exists.
pub async fn ensure_namespace(kube: &kube::Client, name: &str) -> Result<(), String> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(kube.clone());
    let ns =
        serde_json::from_value(json!({"metadata": {"name": name}})).map_err(|e| e.to_string())?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(format!("cannot make namespace {name}: {e}")),
    }
}

/// Makes a suspended TrainJob on the stock runtime `torch-distributed` of each
/// (namespace, name) of `names`, sixteen at once; one that exists is left.
pub async fn other_train_jobs(
    kube: &kube::Client,
    names: &[(String, String)],
) -> Result<(), String> {
    let resource = dispatch_kf_client::resources::TRAIN_JOB.api_resource();
    let creates = names.iter().map(|(namespace, name)| {
        let api: Api<DynamicObject> = Api::namespaced_with(kube.clone(), namespace, &resource);
        async move {
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": keys::TRAINER_API_VERSION, "kind": keys::KIND_TRAIN_JOB,
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"suspend": true, "runtimeRef": {"apiGroup": keys::TRAINER_GROUP,
                    "kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"}}
            }))
            .map_err(|e| e.to_string())?;
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                Err(e) => Err(format!("cannot make {namespace}/{name}: {e}")),
            }
        }
    });
    let results: Vec<Result<(), String>> =
        futures::stream::iter(creates).buffer_unordered(CONCURRENCY).collect().await;
    results.into_iter().collect()
}
