//! The setup the workspace's tests share, written once: a simulated cluster with the
//! Trainer's torch-distributed runtime, four 8-GPU nodes and the `training` namespace;
//! clients and a Backend made by Factory on it, as any identity; settings, requests and
//! call contexts; a [`Proxy`] whose connections can go silent. Not published: a dev-dependency of the crates whose tests need it.

/// The examples of `docs/library.md` (the crates as a library), run as doc tests, so
/// that the page an outside user copies from compiles and holds. Here, in the tests'
/// crate, because the page includes files of the workspace a published crate would not.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryDoctests;

pub mod commands;
pub mod crowd;
pub mod deploy;
pub mod follow;
mod proxy;

use std::time::Duration;

use dispatch_core::{Backend, CallContext, JobId, ObjectRef, StartRequest};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_client::Cluster;
use dispatch_kf_model::Settings;
use dispatch_kf_sim::{Sim, SimOptions};
use serde_json::{Value, json};

pub use proxy::Proxy;

/// The namespace the adapter works in.
pub const NS: &str = "training";

/// A simulated cluster ready for the adapter.
pub async fn cluster() -> Sim {
    cluster_with(SimOptions::default()).await
}

/// [`cluster`], started with `options`.
pub async fn cluster_with(options: SimOptions) -> Sim {
    let sim = Sim::start(options).await.unwrap();
    sim.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})).unwrap();
    sim.apply(dispatch_kf_sim::torch_distributed()).unwrap();
    for i in 0..4 {
        sim.apply(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("gpu-{i}"), "labels": {"kubernetes.io/hostname": format!("gpu-{i}")}},
            "status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti"},
                       "allocatable": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti"},
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
    }
    sim
}

/// [`cluster`] served over plain HTTP, so that a [`Proxy`] can tell requests apart by
/// their heads, and a proxy to it.
pub async fn cluster_behind_proxy() -> (Sim, Proxy) {
    let sim = cluster_with(SimOptions { tls: false, ..SimOptions::default() }).await;
    let proxy = Proxy::to(&sim).await;
    (sim, proxy)
}

/// A Backend made by Factory with `settings`, as the sim's admin, every request of it
/// through `proxy`.
pub async fn backend_through(proxy: &Proxy, sim: &Sim, settings: Settings) -> KubeflowBackend {
    let config = proxy.config(sim, "admin").await;
    let cluster = Cluster::from_kube_config(config, Duration::from_secs(5)).unwrap();
    KubeflowBackend::with_cluster(settings, cluster, &cx()).await.unwrap()
}

/// Settings for the simulated cluster, with `extra` merged over them.
pub fn settings(extra: Value) -> Settings {
    let mut doc = json!({
        "name": "kubeflow-sim",
        "namespace": NS,
        "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}],
        "timeouts": {"request": "5s", "workload": "2s", "stopJob": "30s", "callBound": "90s"},
    });
    if let (Some(doc), Some(extra)) = (doc.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            doc.insert(k.clone(), v.clone());
        }
    }
    Settings::from_value(&doc).unwrap()
}

/// The client configuration of `user` on the sim, as its kubeconfig gives it.
pub async fn config(sim: &Sim, user: &str) -> kube::Config {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml(user).unwrap()).unwrap();
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap()
}

/// A plain kube client for `user` on the sim.
pub async fn kube_client(sim: &Sim, user: &str) -> kube::Client {
    kube::Client::try_from(config(sim, user).await).unwrap()
}

/// The adapter's client for `user` on the sim, each request given `timeout`.
pub async fn connect_with(sim: &Sim, user: &str, timeout: Duration) -> Cluster {
    Cluster::from_kube_config(config(sim, user).await, timeout).unwrap()
}

/// The adapter's client for `user` on the sim, each request given 5 s.
pub async fn connect(sim: &Sim, user: &str) -> Cluster {
    connect_with(sim, user, Duration::from_secs(5)).await
}

/// One cluster and one plain-mode Backend on a runtime of their own, shared by every
/// case of a property test: each case starts a job of its own.
pub struct World {
    /// The runtime every case runs on.
    pub runtime: tokio::runtime::Runtime,
    /// The cluster.
    pub sim: Sim,
    /// The Backend, made by Factory on it.
    pub backend: KubeflowBackend,
}

impl World {
    /// A world whose client gives each request `request_timeout` to answer.
    pub fn new(request_timeout: Duration) -> World {
        World::with(SimOptions::default(), request_timeout, settings(json!({})))
    }

    /// [`World::new`], its cluster started with `options` and its Backend made with
    /// `settings`.
    pub fn with(options: SimOptions, request_timeout: Duration, settings: Settings) -> World {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let (sim, backend) = runtime.block_on(async {
            let sim = cluster_with(options).await;
            let client = connect_with(&sim, "admin", request_timeout).await;
            let backend = KubeflowBackend::with_cluster(settings, client, &cx()).await.unwrap();
            (sim, backend)
        });
        World { runtime, sim, backend }
    }
}

/// Factory, as admin, with `settings`.
pub async fn backend(sim: &Sim, settings: Settings) -> KubeflowBackend {
    KubeflowBackend::with_cluster(settings, connect(sim, "admin").await, &cx()).await.unwrap()
}

/// Starts submission 1 of job `n` on `b`, opens it and settles `sim`: the job runs.
pub async fn running_job(sim: &Sim, b: &KubeflowBackend, n: u32) -> ObjectRef {
    let object = b.start(&cx(), &request(&job(n), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    object
}

/// A context without deadline.
pub fn cx() -> CallContext {
    CallContext::background()
}

/// A context with a deadline, as the hold family needs.
pub fn hold_cx() -> CallContext {
    CallContext::with_deadline(std::time::Instant::now() + Duration::from_secs(30))
}

/// Job `n` of a test.
pub fn job(n: u32) -> JobId {
    JobId::parse(&format!("01JDQ4V8Z6K3M0B7X2N5R{n:05}")).unwrap()
}

/// A two-node request of submission `submission` of `job`.
pub fn request(job: &JobId, submission: i64) -> StartRequest {
    serde_json::from_value(json!({
        "job": job.as_str(), "generation": 0, "submission": submission, "attempt": 1,
        "spec": {
            "command": ["python", "train.py"], "nodes": 2, "gpusPerNode": 8,
            "extensions": {
                "dispatch/Image": {"ref": "ghcr.io/acme/train:1.4"},
                "kubeflow/RuntimeRef": {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}
            }
        }
    }))
    .unwrap()
}

/// `GET path` on a plain HTTP server at `address`, over a fresh connection: the status
/// code and the body (the gate's probes in its tests).
pub async fn http_get(address: std::net::SocketAddr, path: &str) -> (u16, String) {
    try_http_get(address, path).await.unwrap_or_else(|e| panic!("GET {path} on {address}: {e}"))
}

/// [`http_get`], or why it got no answer (nothing listening yet, the connection cut).
pub async fn try_http_get(
    address: std::net::SocketAddr,
    path: &str,
) -> std::io::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((status, body))
}

/// The objects of `plural` in the namespace, as the cluster holds them.
pub fn names(sim: &Sim, plural: &str) -> Vec<String> {
    let mut names: Vec<String> = sim
        .list(plural, NS)
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The status patch a kubelet writes when every container of a running pod ends
/// `code` (`reason`) now: each container terminated, the pod failed. `pod` is the pod as
/// read; the time is written as it is, and the apiserver cuts it to the second, as a
/// kubelet's is (rounded up, it could land after the teardown the end causes).
pub fn containers_ended(pod: &Value, code: i32, reason: &str) -> Value {
    let now = jiff::Timestamp::now().to_string();
    let mut statuses = pod["status"]["containerStatuses"].clone();
    for status in statuses.as_array_mut().into_iter().flatten() {
        let started = status["state"]["running"]["startedAt"].clone();
        status["ready"] = json!(false);
        status["state"] = json!({"terminated": {
            "exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now
        }});
    }
    json!({"status": {"phase": "Failed", "containerStatuses": statuses}})
}

/// A memory figure of this process from `/proc/self/status` (`VmRSS`, resident now;
/// `VmHWM`, its peak), in KiB; 0 where there is none.
pub fn memory_kib(key: &str) -> f64 {
    memory_kib_in("/proc/self/status", key)
}

/// [`memory_kib`] of the process `pid`.
pub fn memory_kib_of(pid: u32, key: &str) -> f64 {
    memory_kib_in(&format!("/proc/{pid}/status"), key)
}

/// The value of the series `series` (its name and labels, as written) in a Prometheus
/// text exposition (`/metrics`), when it is there.
pub fn series_value(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The sum of every series of the metric `name` whose labels contain `labels` (`""` for
/// all of them).
pub fn series_sum(metrics: &str, name: &str, labels: &str) -> f64 {
    let head = format!("{name}{{");
    metrics
        .lines()
        .filter(|l| l.starts_with(&head) && l.contains(labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// This process's CPU time, user and system (`/proc/self/stat`).
pub fn cpu_time() -> std::time::Duration {
    cpu_time_in("/proc/self/stat")
}

/// [`cpu_time`] of the process `pid`.
pub fn cpu_time_of(pid: u32) -> std::time::Duration {
    cpu_time_in(&format!("/proc/{pid}/stat"))
}

fn cpu_time_in(stat: &str) -> std::time::Duration {
    let stat = std::fs::read_to_string(stat).unwrap_or_default();
    // The fields after the command's name, which is in parentheses: state is field 0,
    // utime 11, stime 12, in clock ticks of 10 ms on Linux.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    std::time::Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn memory_kib_in(status: &str, key: &str) -> f64 {
    let status = std::fs::read_to_string(status).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
}
