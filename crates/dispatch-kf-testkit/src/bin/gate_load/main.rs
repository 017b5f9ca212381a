//! `cargo xtask bench gate` (`docs/dev/benchmarks.md#the-gate-under-load-cargo-xtask-bench-gate`):
//! the readmission gate under load on a real control plane with Kueue and two gate
//! replicas, beside Kueue admitting alone, in one run.
//!
//! N jobs of one rank go through the gate: started and opened by one Backend in Kueue
//! mode, on the ClusterQueue that checks every admission with dispatch's AdmissionCheck.
//! N TrainJobs of the same shape, applied as a Kueue user applies them, go through a
//! ClusterQueue of their own with no check. Once all run, each run readmits every
//! Workload three ways, all at once each time:
//!
//! - Kueue alone: every Workload deactivated (`spec.active: false`), its pods gone,
//!   then activated again;
//! - the gate: every job held (Hold), its pods gone, then released (Release);
//! - the same across a leader change: once a fifth of the checks are Ready again, the
//!   leading gate replica is stopped (SIGTERM, as a rolling update stops it), and
//!   started again once every Workload is admitted.
//!
//! For each Workload the bench stamps when it first saw it active again, its quota
//! reserved, dispatch's check Ready and it admitted, on a watch of its own straight to the
//! apiserver (`readmissions.rs`). The figure held to the bar is the time from active to
//! admitted, through the gate over Kueue's alone (`report.rs`).
//!
//! Usage: `gate_load --kubeconfig PATH --xtask PATH [--workloads 500] [--runs 3]`.

mod readmissions;
mod report;

use std::process::ExitCode;
use std::time::Duration;

use dispatch_core::{Backend, CallContext, JobId, ObjectRef};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_client::{Cluster, resources};
use dispatch_kf_model::{Settings, keys};
use dispatch_kf_testkit::commands::{self, Flags};
use dispatch_kf_testkit::follow::{Followed, Pods};
use dispatch_kf_testkit::{crowd, job};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use readmissions::{Now, Readmissions};
use report::{Cycle, Handover, Report, Run, Way};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The namespace of the gated jobs, and their LocalQueue.
const GATED: &str = "gate-bench";
/// The ClusterQueue that checks every admission with dispatch's AdmissionCheck
/// (`crates/dispatch-kf-sim/data/kueue-setup.json`).
const GATED_CLUSTER_QUEUE: &str = "gpu";
/// The namespace of Kueue's own TrainJobs, and their LocalQueue and ClusterQueue.
const ANCHOR: &str = "gate-anchor";
/// Calls in flight at once when every Workload is stopped or let go.
const IN_FLIGHT: usize = 64;
/// Calls in flight at once while the jobs are made.
const MAKING: usize = 16;
/// The longest any wait of the bench may take.
const PATIENCE: Duration = Duration::from_secs(900);
/// How long the cluster is left alone before each readmission: the controllers finish
/// with the stop just before (the garbage collector, the Job controller).
const SETTLE: Duration = Duration::from_secs(15);
/// The readmission gate's Lease (`docs/gate.md#leader-election`).
const LEASE: (&str, &str) = ("dispatch-system", "dispatch-readmission-gate");
/// The share of the checks Ready at which the leader is stopped.
const HANDOVER_AT: usize = 5;

fn main() -> ExitCode {
    let usage = "--kubeconfig PATH --xtask PATH [--workloads 500] [--runs 3]";
    commands::bench_main("gate_load", usage, Options::parse, bench)
}

struct Options {
    kubeconfig: String,
    xtask: String,
    workloads: usize,
    runs: usize,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let flags = Flags::parse(args, &["--kubeconfig", "--xtask", "--workloads", "--runs"])?;
        Ok(Options {
            kubeconfig: flags.required("--kubeconfig")?,
            xtask: flags.required("--xtask")?,
            workloads: flags.count("--workloads", 500)?.max(HANDOVER_AT),
            runs: flags.count("--runs", 3)?.max(1),
        })
    }
}

/// What every step shares.
struct Bench<'a> {
    options: &'a Options,
    kube: kube::Client,
    backend: KubeflowBackend,
    /// The gated jobs' TrainJobs.
    jobs: Vec<ObjectRef>,
}

async fn bench(options: &Options) -> Result<bool, String> {
    let (config, kube) = commands::client_of(&options.kubeconfig).await?;
    set_up(&kube, options.workloads).await?;
    let cluster = Cluster::from_kube_config(config, Duration::from_secs(30))
        .map_err(|e| format!("a client: {e}"))?;
    let backend = KubeflowBackend::with_cluster(settings(), cluster, &deadline())
        .await
        .map_err(|e| format!("Factory: {e}"))?;
    let mut bench = Bench { options, kube, backend, jobs: Vec::new() };
    bench.make_jobs().await?;
    eprintln!("gate_load: {} jobs run each way; {} runs follow", options.workloads, options.runs);

    let mut runs = Vec::new();
    for n in 0..options.runs {
        let instance = 2 * n as u64;
        let cycles = [
            bench.cycle(Way::Kueue, 0).await?,
            bench.cycle(Way::Gate, instance + 1).await?,
            bench.cycle(Way::Handover, instance + 2).await?,
        ];
        let run = Run { cycles };
        eprint!("gate_load: run {} of {} done\n{}", n + 1, options.runs, run.rows(n));
        runs.push(run);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let report = Report { workloads: options.workloads, runs, load };
    print!("{}", report.text());
    let misses = report.misses();
    for miss in &misses {
        eprintln!("bar missed: {miss}");
    }
    Ok(misses.is_empty())
}

impl Bench<'_> {
    /// Kueue's TrainJobs applied, the gated jobs started and opened, until all of both
    /// are admitted and run.
    async fn make_jobs(&mut self) -> Result<(), String> {
        let n = self.options.workloads;
        let names: Vec<(String, String)> =
            (0..n).map(|i| (ANCHOR.to_owned(), format!("anchor-{i:04}"))).collect();
        let mut anchor = crowd::on_stock_runtime(json!({"trainer": one_rank()}));
        anchor["metadata"]["labels"] = json!({keys::KUEUE_QUEUE_NAME: ANCHOR});
        crowd::train_jobs(&self.kube, &names, &anchor).await?;

        let backend = &self.backend;
        let starts = (0..n as u32).map(|i| async move {
            let job = job(2000 + i);
            let object = backend.start(&deadline(), &request(&job)).await;
            let object = object.map_err(|e| format!("start of {job}: {e}"))?;
            backend.open(&deadline(), &object).await.map_err(|e| format!("open of {job}: {e}"))?;
            Ok::<_, String>(object)
        });
        let started: Vec<Result<ObjectRef, String>> =
            futures::stream::iter(starts).buffer_unordered(MAKING).collect().await;
        self.jobs = started.into_iter().collect::<Result<_, _>>()?;

        for namespace in [ANCHOR, GATED] {
            let workloads = Readmissions::follow(&self.kube, namespace);
            let all_admitted = |r: &Readmissions| r.len() == n && r.count(|w| w.admitted) == n;
            workloads.until(&format!("{namespace}: admitted"), PATIENCE, all_admitted).await?;
            let pods = Pods::of(&self.kube, namespace, "");
            pods.until(&format!("{namespace}: running"), PATIENCE, |c| c.running == n).await?;
        }
        Ok(())
    }

    /// Every Workload of `way` stopped, then let go at once, until all are admitted and
    /// their pods run; `instance` is the hold instance of the gate's ways.
    async fn cycle(&self, way: Way, instance: u64) -> Result<Cycle, String> {
        let n = self.options.workloads;
        let namespace = if way == Way::Kueue { ANCHOR } else { GATED };
        let workloads = Readmissions::follow(&self.kube, namespace);
        let pods = Pods::of(&self.kube, namespace, "");
        workloads.until(&format!("{way}: listed"), PATIENCE, |r| r.len() == n).await?;

        self.stop_all(way, &workloads, instance).await?;
        let stopped = |r: &Readmissions| r.count(Now::stopped) == n;
        workloads.until(&format!("{way}: every Workload stopped"), PATIENCE, stopped).await?;
        pods.until(&format!("{way}: every pod gone"), PATIENCE, |c| c.pods == 0).await?;
        tokio::time::sleep(SETTLE).await;

        workloads.edit(Readmissions::arm);
        let began = Instant::now();
        let (calls_done, stopped_leader) =
            tokio::join!(self.let_all_go(way, &workloads, instance), async {
                if way == Way::Handover {
                    self.stop_leader(&workloads).await.map(Some)
                } else {
                    Ok(None)
                }
            });
        let (calls_done, stopped_leader) = (calls_done?, stopped_leader?);
        let admitted = |r: &Readmissions| r.count(|w| w.admitted) == n;
        workloads.until(&format!("{way}: every Workload admitted"), PATIENCE, admitted).await?;
        let steps = workloads.read(Readmissions::steps);
        pods.until(&format!("{way}: every pod running"), PATIENCE, |c| c.running == n).await?;

        let handover = match stopped_leader {
            None => None,
            Some((from, at)) => {
                let to = self.leader().await?;
                self.xtask(&["cluster", "restart", &from]).await?;
                Some(Handover { from, to, at: at.saturating_duration_since(began) })
            }
        };
        Ok(Cycle { way, began, calls_done, steps, handover })
    }

    /// Kueue's Workloads deactivated, or the gated jobs held with `instance`.
    async fn stop_all(
        &self,
        way: Way,
        workloads: &Followed<Readmissions>,
        instance: u64,
    ) -> Result<(), String> {
        match way {
            Way::Kueue => self.set_active(&workloads.read(Readmissions::names), false).await,
            Way::Gate | Way::Handover => {
                let backend = &self.backend;
                let holds = self.jobs.iter().map(|object| async move {
                    let held = backend.hold(&deadline(), object, instance).await;
                    held.map_err(|e| format!("hold of {}: {e}", object.name))
                });
                all(holds).await
            }
        }
    }

    /// Kueue's Workloads activated, or the gated jobs released from `instance`, as
    /// many at once as [`IN_FLIGHT`]: when the last call answered.
    async fn let_all_go(
        &self,
        way: Way,
        workloads: &Followed<Readmissions>,
        instance: u64,
    ) -> Result<Instant, String> {
        match way {
            Way::Kueue => self.set_active(&workloads.read(Readmissions::names), true).await?,
            Way::Gate | Way::Handover => {
                let backend = &self.backend;
                let releases = self.jobs.iter().map(|object| async move {
                    // Release refuses while a held pod is still going; none is here, as
                    // the bench waited for every pod to go, but a JobSet may still count
                    // a Job active a moment longer.
                    loop {
                        match backend.release(&deadline(), object, instance).await {
                            Err(e) if e.is_pods_remain() => {
                                tokio::time::sleep(Duration::from_millis(500)).await;
                            }
                            released => {
                                return released
                                    .map_err(|e| format!("release of {}: {e}", object.name));
                            }
                        }
                    }
                });
                all(releases).await?;
            }
        }
        Ok(Instant::now())
    }

    /// `spec.active` of every Workload `names` names in Kueue's namespace.
    async fn set_active(&self, names: &[String], active: bool) -> Result<(), String> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.kube.clone(), ANCHOR, &resources::WORKLOAD.api_resource());
        let patch = json!({"spec": {"active": active}});
        let patches = names.iter().map(|name| {
            let (api, patch) = (&api, &patch);
            async move {
                let patched = api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await;
                patched.map(drop).map_err(|e| format!("Workload {name}: {e}"))
            }
        });
        all(patches).await
    }

    /// Once a fifth of the checks are Ready, stops the leading replica: its name, and
    /// when it was stopped.
    async fn stop_leader(
        &self,
        workloads: &Followed<Readmissions>,
    ) -> Result<(String, Instant), String> {
        let share = self.options.workloads / HANDOVER_AT;
        let ready = |r: &Readmissions| r.count(|w| w.ready) >= share;
        workloads.until("a fifth of the checks Ready", PATIENCE, ready).await?;
        let leader = self.leader().await?;
        let at = Instant::now();
        self.xtask(&["cluster", "stop", &leader]).await?;
        Ok((leader, at))
    }

    /// The process of the replica that holds the gate's Lease: `xtask cluster gate`
    /// names the replica `dispatch-kf-gate[-n]` and its identity `xtask-gate[-n]`.
    async fn leader(&self) -> Result<String, String> {
        let (namespace, name) = LEASE;
        let leases: Api<Lease> = Api::namespaced(self.kube.clone(), namespace);
        let lease = leases.get(name).await.map_err(|e| format!("the gate's Lease: {e}"))?;
        let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
        match holder.strip_prefix("xtask-gate") {
            Some(suffix) => Ok(format!("dispatch-kf-gate{suffix}")),
            None => Err(format!("the gate's Lease is held by {holder:?}, no replica of xtask's")),
        }
    }

    async fn xtask(&self, args: &[&str]) -> Result<(), String> {
        commands::xtask(&self.options.xtask, args).await
    }
}

/// Runs `calls`, [`IN_FLIGHT`] at once; the first error, once all have answered.
async fn all(
    calls: impl Iterator<Item = impl Future<Output = Result<(), String>>>,
) -> Result<(), String> {
    let results: Vec<Result<(), String>> =
        futures::stream::iter(calls).buffer_unordered(IN_FLIGHT).collect().await;
    results.into_iter().collect()
}

/// The namespaces; Kueue's ClusterQueue of its own, with no check, and a LocalQueue on
/// it; and the gated jobs' LocalQueue on the checked ClusterQueue.
async fn set_up(kube: &kube::Client, workloads: usize) -> Result<(), String> {
    for namespace in [GATED, ANCHOR] {
        crowd::ensure_namespace(kube, namespace).await?;
    }
    let quota = workloads.to_string();
    let cluster_queue = json!({
        "apiVersion": keys::KUEUE_API_VERSION, "kind": "ClusterQueue",
        "metadata": {"name": ANCHOR},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "pods"],
                "flavors": [{"name": "default-flavor", "resources": [
                    {"name": "nvidia.com/gpu", "nominalQuota": quota},
                    {"name": "pods", "nominalQuota": quota}]}]}]
        }
    });
    apply(kube, None, resources::CLUSTER_QUEUE, &cluster_queue).await?;
    for (namespace, cluster_queue) in [(ANCHOR, ANCHOR), (GATED, GATED_CLUSTER_QUEUE)] {
        let local_queue = json!({
            "apiVersion": keys::KUEUE_API_VERSION, "kind": "LocalQueue",
            "metadata": {"name": namespace, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue}
        });
        apply(kube, Some(namespace), resources::LOCAL_QUEUE, &local_queue).await?;
    }
    Ok(())
}

/// Server-side applies `object`, a `resource`.
async fn apply(
    kube: &kube::Client,
    namespace: Option<&str>,
    resource: resources::Resource,
    object: &Value,
) -> Result<(), String> {
    let api_resource = resource.api_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(kube.clone(), namespace, &api_resource),
        None => Api::all_with(kube.clone(), &api_resource),
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let params = PatchParams::apply("dispatch-kf-bench").force();
    let applied = api.patch(name, &params, &Patch::Apply(object)).await;
    applied.map(drop).map_err(|e| format!("{} {name}: {e}", resource.kind))
}

/// The trainer of every job: one rank of one GPU.
fn one_rank() -> Value {
    json!({"numNodes": 1, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}}})
}

/// The gated job `job`: one rank of one GPU on the stock runtime.
fn request(job: &JobId) -> dispatch_core::StartRequest {
    let request = json!({
        "job": job.as_str(), "generation": 0, "submission": 1, "attempt": 1,
        "spec": {
            "command": ["sleep", "86400"], "nodes": 1, "gpusPerNode": 1,
            "extensions": {
                "dispatch/Image": {"ref": "busybox:1.36"},
                "kubeflow/RuntimeRef": {"kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"}
            }
        }
    });
    serde_json::from_value(request).expect("a well-formed request")
}

/// The Backend's settings: Kueue mode, on the gated LocalQueue.
fn settings() -> Settings {
    Settings::from_value(&json!({
        "name": "kubeflow-gate-bench", "namespace": GATED, "mode": "kueue",
        "kueue": {"queue": GATED},
        "runtimes": [{"kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"}],
        "timeouts": {"request": "30s", "workload": "2m", "callBound": "2m"},
    }))
    .expect("the bench's settings")
}

/// A call context with two minutes to answer (the hold family needs a deadline).
fn deadline() -> CallContext {
    CallContext::with_deadline(std::time::Instant::now() + Duration::from_secs(120))
}
