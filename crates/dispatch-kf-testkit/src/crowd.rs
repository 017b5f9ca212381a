//! Filling a cluster for the benches: namespaces, and TrainJobs of no dispatch job (the
//! suspended ones other tenants hold, or those a Kueue user applies).

use futures::StreamExt;
use std::time::Duration;

use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use tokio::time::Instant;

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
    train_jobs(kube, names, &on_stock_runtime(json!({"suspend": true}))).await
}

/// A TrainJob on the stock runtime `torch-distributed`, with `spec` besides.
pub fn on_stock_runtime(mut spec: Value) -> Value {
    spec["runtimeRef"] = json!({"apiGroup": keys::TRAINER_GROUP,
        "kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"});
    json!({"apiVersion": keys::TRAINER_API_VERSION, "kind": keys::KIND_TRAIN_JOB,
        "metadata": {}, "spec": spec})
}

/// Makes the TrainJob `template` under each (namespace, name) of `names`, sixteen at
/// once; one that exists is left.
pub async fn train_jobs(
    kube: &kube::Client,
    names: &[(String, String)],
    template: &Value,
) -> Result<(), String> {
    let resource = dispatch_kf_client::resources::TRAIN_JOB.api_resource();
    let creates = names.iter().map(|(namespace, name)| {
        let api: Api<DynamicObject> = Api::namespaced_with(kube.clone(), namespace, &resource);
        let mut object = template.clone();
        object["metadata"]["name"] = json!(name);
        object["metadata"]["namespace"] = json!(namespace);
        async move {
            let object: DynamicObject =
                serde_json::from_value(object).map_err(|e| e.to_string())?;
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

/// Waits until the cluster holds `count` JobSets (the Trainer makes one per TrainJob),
/// counted from a list of one item and the apiserver's count of the rest.
pub async fn until_job_sets(kube: &kube::Client, count: usize) -> Result<(), String> {
    let resource = dispatch_kf_client::resources::JOB_SET.api_resource();
    let api: Api<DynamicObject> = Api::all_with(kube.clone(), &resource);
    let t0 = Instant::now();
    loop {
        let page = api.list(&ListParams::default().limit(1)).await.map_err(|e| e.to_string())?;
        let rest = page.metadata.remaining_item_count.unwrap_or(0);
        let have = page.items.len() + usize::try_from(rest).unwrap_or(0);
        if have >= count {
            // The controllers' last writes settle.
            tokio::time::sleep(Duration::from_secs(10)).await;
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(1800) {
            return Err(format!("{have} JobSets of {count} after 30 minutes"));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
