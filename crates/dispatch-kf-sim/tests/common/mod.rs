//! Shared helpers for the sim's tests: start a cluster, build a real `kube::Client`
//! for an identity from the sim's kubeconfig, and the `ApiResource`s of the CRDs.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use dispatch_kf_sim::{Sim, SimOptions};
use kube::api::PostParams;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::{Value, json};

/// A sim with default options.
pub async fn sim() -> Sim {
    Sim::start(SimOptions::default()).await.expect("the sim starts")
}

/// The kube config a real client builds from the sim's kubeconfig for `user`.
pub async fn config(sim: &Sim, user: &str) -> Config {
    let yaml = sim.kubeconfig_yaml(user).expect("known user");
    let kc = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let mut c = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    c.default_retry = false;
    c
}

/// A client for `user`.
pub async fn client_as(sim: &Sim, user: &str) -> Client {
    Client::try_from(config(sim, user).await).expect("client builds")
}

/// A client for `admin`.
pub async fn client(sim: &Sim) -> Client {
    client_as(sim, "admin").await
}

/// A client with a read timeout (for delay faults).
pub async fn client_with_timeout(sim: &Sim, timeout: Duration) -> Client {
    let mut c = config(sim, "admin").await;
    c.read_timeout = Some(timeout);
    c.reset_reader_on_write = true;
    Client::try_from(c).expect("client builds")
}

pub fn trainjobs_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("trainer.kubeflow.org", "v1alpha1", "TrainJob"),
        "trainjobs",
    )
}

pub fn runtimes_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("trainer.kubeflow.org", "v1alpha1", "TrainingRuntime"),
        "trainingruntimes",
    )
}

pub fn jobsets_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("jobset.x-k8s.io", "v1alpha2", "JobSet"),
        "jobsets",
    )
}

pub fn workloads_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"),
        "workloads",
    )
}

pub fn trainjobs(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &trainjobs_ar())
}

/// A TrainingRuntime named `name` in `default`, installed directly.
pub fn install_runtime(sim: &Sim, name: &str) {
    sim.apply(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "replicas": 1}]}}}
    }))
    .expect("runtime installs");
}

/// A TrainJob object referring to TrainingRuntime `runtime`.
pub fn trainjob(name: &str, runtime: &str, suspend: bool) -> DynamicObject {
    let v = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": {"app": "train"}},
        "spec": {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": runtime},
            "suspend": suspend,
            "trainer": {"image": "busybox", "command": ["sleep", "1"]}
        }
    });
    serde_json::from_value(v).expect("valid object")
}

/// The status of a `kube::Error::Api`, or a panic naming what came instead.
pub fn api_status(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API status, got {other:?}"),
    }
}

pub fn field<'a>(o: &'a DynamicObject, ptr: &str) -> Option<&'a Value> {
    o.data.pointer(ptr)
}

/// The demo cluster: two 8-GPU nodes and `torch-distributed`.
pub async fn demo() -> Sim {
    Sim::start_demo(SimOptions::default(), 2, 8).await.unwrap()
}

/// A TrainJob on `torch-distributed` with `nodes` nodes of 8 GPUs, `extra` merged in.
pub fn tj(name: &str, nodes: i64, suspend: bool, extra: Value) -> DynamicObject {
    let mut v = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "suspend": suspend,
            "trainer": {
                "image": "trainer:1", "command": ["python", "train.py"], "numNodes": nodes,
                "env": [{"name": "A", "value": "1"}],
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}
            }
        }
    });
    dispatch_kf_sim_merge(&mut v, &extra);
    serde_json::from_value(v).unwrap()
}

/// A JSON merge of `b` into `a` (objects merged, anything else replaced).
pub fn dispatch_kf_sim_merge(a: &mut Value, b: &Value) {
    if let (Some(a), Some(b)) = (a.as_object_mut(), b.as_object()) {
        for (k, v) in b {
            match a.get_mut(k) {
                Some(x) if x.is_object() && v.is_object() => dispatch_kf_sim_merge(x, v),
                _ => {
                    a.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// The pods of `default`.
pub fn pods(sim: &Sim) -> Vec<Value> {
    sim.list("pods", "default")
}

/// The names of the pods of `default`.
pub fn pod_names(sim: &Sim) -> Vec<String> {
    pods(sim).iter().map(|p| p["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

/// A condition of an object, by type.
pub fn cond<'a>(obj: &'a Value, typ: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == typ)
}

/// Creates a TrainJob in `default` through the API.
pub async fn start(sim: &Sim, job: DynamicObject) {
    trainjobs(&client(sim).await).create(&PostParams::default(), &job).await.unwrap();
}

/// Installs `torch-distributed` as the TrainingRuntime `rt` in `default`, after `edit`.
pub fn install_torch_runtime(sim: &Sim, edit: impl FnOnce(&mut Value)) {
    let mut rt = dispatch_kf_sim::torch_distributed();
    rt["kind"] = json!("TrainingRuntime");
    rt["metadata"] = json!({"name": "rt", "namespace": "default"});
    edit(&mut rt);
    sim.apply(rt).unwrap();
}

/// The demo cluster with the garbage collector lagging `secs` seconds of virtual time.
pub async fn demo_with_gc_lag(secs: u64) -> Sim {
    let opts = SimOptions { gc_lag: Duration::from_secs(secs), ..Default::default() };
    Sim::start_demo(opts, 2, 8).await.unwrap()
}

/// Deletes the TrainJob `name` with `propagationPolicy: Background` through the API.
pub async fn delete_in_background(sim: &Sim, name: &str) {
    let dp = kube::api::DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..Default::default()
    };
    trainjobs(&client(sim).await).delete(name, &dp).await.unwrap();
}
