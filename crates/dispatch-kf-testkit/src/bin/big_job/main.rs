//! `cargo xtask bench job` (`docs/dev/benchmarks.md#one-big-job-cargo-xtask-bench-job`):
//! one job of many ranks on a real control plane, each step as a user runs it with
//! `dispatch-kf`, beside what the same user would run with `kubectl` instead, in one
//! run:
//!
//! - the TrainJob the adapter renders, made by `kubectl apply` on the same runtime, until
//!   every rank runs; then `kubectl delete` of it, until its pods are gone;
//! - `dispatch-kf start` and `open` of the job, until every rank runs;
//! - `find`, `inspect` and `ceased` of it, against `kubectl get` of the same objects:
//!   time, requests and bytes of each;
//! - `dispatch-kf stop-job`, until nothing of it is left;
//! - a second job, started and opened the same way, with `dispatch-kf watch` and
//!   `kubectl get pods -w` on it: the watch's memory, then one rank runs out of memory
//!   and the time until each shows it (the watch: the job ended, out of memory);
//!   then `stop-job` of the ended job.
//!
//! A small job of the same shape is read the same way first, so that the requests of a
//! Find can be compared as the ranks grow. Every command is a process of its own whose
//! requests go through a proxy that counts them (`dispatch_kf_testkit::commands`); the bench follows the
//! pods on a connection of its own (`dispatch_kf_testkit::follow`).
//!
//! Usage: `big_job --kubeconfig PATH --cli PATH [--pods 1024] [--gpus-per-pod 1]
//! [--runs 3]`.

mod report;

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use dispatch_core::{CauseKind, JobId, ObjectObs, ObjectState};
use dispatch_kf_model::keys;
use dispatch_kf_testkit::commands::{self, Call, Tools, write};
use dispatch_kf_testkit::follow::Pods;
use dispatch_kf_testkit::{Proxy, job};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use report::{Run, Small};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The namespace the bench works in.
const NS: &str = "dispatch-bench";
/// Runs of each read measured (after one not counted).
const READS: usize = 11;
/// Runs of `ceased` measured: each reads every Node of the job.
const CEASED: usize = 5;
/// The longest a job may take to run, or to go.
const PATIENCE: Duration = Duration::from_secs(900);
/// The pods of the small job Find's requests are compared with.
const SMALL_PODS: usize = 8;
/// How long the cluster is left alone before each timed start: the controllers finish
/// with the job torn down just before (the garbage collector, the node lifecycle), so
/// that every start, kubectl's or the adapter's, begins on a quiet cluster.
const SETTLE: Duration = Duration::from_secs(15);

fn main() -> ExitCode {
    let usage = "--kubeconfig PATH --cli PATH [--pods 1024] [--gpus-per-pod 1] [--runs 3]";
    commands::bench_main("big_job", usage, Options::parse, bench)
}

struct Options {
    kubeconfig: PathBuf,
    cli: PathBuf,
    pods: usize,
    gpus_per_pod: u32,
    runs: usize,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let known = ["--kubeconfig", "--cli", "--pods", "--gpus-per-pod", "--runs"];
        let flags = commands::Flags::parse(args, &known)?;
        let gpus_per_pod = flags.count("--gpus-per-pod", 1)?;
        let options = Options {
            kubeconfig: flags.required("--kubeconfig")?.into(),
            cli: flags.required("--cli")?.into(),
            pods: flags.count("--pods", 1024)?,
            gpus_per_pod: u32::try_from(gpus_per_pod).map_err(|_| "--gpus-per-pod is too big")?,
            runs: flags.count("--runs", 3)?,
        };
        if options.pods < SMALL_PODS || options.runs == 0 {
            return Err(format!("--pods at least {SMALL_PODS}, --runs at least 1"));
        }
        Ok(options)
    }
}

/// What every step shares: the bench's own client, the proxy, the commands and the
/// bench's folder.
struct Bench<'a> {
    options: &'a Options,
    kube: kube::Client,
    proxy: Proxy,
    tools: Tools,
    /// The runtime the requests name, as the cluster holds it (for `render`).
    runtime: PathBuf,
}

async fn bench(options: &Options) -> Result<bool, String> {
    let (direct, kube) = commands::client_of(path(&options.kubeconfig)).await?;
    dispatch_kf_testkit::crowd::ensure_namespace(&kube, NS).await?;
    let (proxy, _) = Proxy::in_front_of(&direct).await;
    let dir = std::env::temp_dir().join(format!("dispatch-kf-big-job-{}", std::process::id()));
    let cli = options.cli.clone();
    let tools = Tools::in_dir(&dir, cli, proxy.port(), NS, &settings())?;
    let runtime = runtime_of(&kube).await?;
    let runtime = write(&dir, "runtime.json", &runtime.to_string())?;
    let bench = Bench { options, kube, proxy, tools, runtime };

    let small = bench.small_job().await?;
    eprintln!("big_job: small job read; {} runs of {} pods follow", options.runs, options.pods);
    let mut runs = Vec::new();
    for n in 0..options.runs {
        let run = bench.one_run(n).await?;
        eprintln!("big_job: run {} of {} done", n + 1, options.runs);
        runs.push(run);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let report = report::Report {
        pods: options.pods,
        gpus_per_pod: options.gpus_per_pod,
        small,
        runs,
        load,
    };
    print!("{}", report.text());
    let misses = report.misses();
    for miss in &misses {
        eprintln!("bar missed: {miss}");
    }
    std::fs::remove_dir_all(&bench.tools.dir).ok();
    Ok(misses.is_empty())
}

impl Bench<'_> {
    /// The small job: started, opened, running; its Finds' requests; stopped.
    async fn small_job(&self) -> Result<Small, String> {
        let job = job(900);
        self.start_until_running(&job, SMALL_PODS).await?;
        let finds = self.finds(&job).await?;
        self.stop_job(&job).await?;
        Ok(Small { pods: SMALL_PODS, finds })
    }

    /// One run: kubectl's job, the adapter's, the watched one.
    async fn one_run(&self, n: usize) -> Result<Run, String> {
        let n = n as u32;
        let (kubectl_start, kubectl_stop) = self.kubectl_job(&job(1000 + 3 * n)).await?;

        let job_ = job(1001 + 3 * n);
        let (reference, start) = self.start_until_running(&job_, self.options.pods).await?;
        let finds = self.finds(&job_).await?;
        let inspects = self
            .tools
            .repeated(&self.proxy, READS, || {
                self.tools.dispatch(&["inspect", &reference, "-o", "json"])
            })
            .await?;
        let ceased = self
            .tools
            .repeated(&self.proxy, CEASED, || self.tools.dispatch(&["ceased", &reference]))
            .await?;
        let by_job = format!("{}={}", keys::LABEL_JOB_ID, job_);
        let gets = self
            .tools
            .repeated(&self.proxy, READS, || {
                self.tools.kubectl(&["get", "trainjobs,jobsets,pods", "-l", &by_job, "-o", "json"])
            })
            .await?;
        let nodes = self.node_names(&by_job).await?;
        let by_hostname = format!("kubernetes.io/hostname in ({})", nodes.join(","));
        let node_gets = self
            .tools
            .repeated(&self.proxy, READS, || {
                self.tools.kubectl(&["get", "nodes", "-l", &by_hostname, "-o", "json"])
            })
            .await?;
        let stop = self.stop_job(&job_).await?;

        let watched = job(1002 + 3 * n);
        let (_, second_start) = self.start_until_running(&watched, self.options.pods).await?;
        let oom = self.oom_seen(&watched).await?;
        let stop_ended = self.stop_job(&watched).await?;
        Ok(Run {
            kubectl_start,
            kubectl_stop,
            starts: [start, second_start],
            finds,
            inspects,
            ceased,
            gets,
            node_gets,
            stop,
            stop_ended,
            oom,
        })
    }

    /// The TrainJob the adapter renders for `job`, on the runtime itself and not
    /// suspended, made by `kubectl apply` until every rank runs, then deleted by
    /// `kubectl delete` until its pods are gone: the two times.
    async fn kubectl_job(&self, job: &JobId) -> Result<(Duration, Duration), String> {
        let request = request(job, self.options.pods, self.options.gpus_per_pod);
        let request = write(&self.tools.dir, "request.json", &request.to_string())?;
        let rendered = self
            .tools
            .run(
                &self.proxy,
                self.tools.dispatch_offline(&[
                    "render",
                    "--runtime",
                    path(&self.runtime),
                    "--request",
                    path(&request),
                    "--token",
                    "0123456789abcdef",
                    "-o",
                    "json",
                ]),
            )
            .await?;
        let train_job = as_applied(&rendered.stdout)?;
        let name = train_job["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let file = write(&self.tools.dir, "trainjob.json", &train_job.to_string())?;
        let pods = Pods::of(&self.kube, NS, &format!("{}={name}", keys::JOBSET_NAME));
        tokio::time::sleep(SETTLE).await;
        let t0 = Instant::now();
        self.tools.run(&self.proxy, self.tools.kubectl(&["apply", "-f", path(&file)])).await?;
        let all = self.options.pods;
        pods.until("kubectl's job running", PATIENCE, |c| c.running == all).await?;
        let started = t0.elapsed();
        let t0 = Instant::now();
        self.tools
            .run(&self.proxy, self.tools.kubectl(&["delete", "trainjob", &name, "-n", NS]))
            .await?;
        pods.until("kubectl's job gone", PATIENCE, |c| c.pods == 0).await?;
        Ok((started, t0.elapsed()))
    }

    /// `dispatch-kf start` of `job` with `pods` pods, then `open`, until every rank
    /// runs: its reference and the time from the start to the last rank running.
    async fn start_until_running(
        &self,
        job: &JobId,
        pods: usize,
    ) -> Result<(String, Duration), String> {
        let request = request(job, pods, self.options.gpus_per_pod);
        let request = write(&self.tools.dir, "request.json", &request.to_string())?;
        let running = Pods::of(&self.kube, NS, &format!("{}={job}", keys::LABEL_JOB_ID));
        tokio::time::sleep(SETTLE).await;
        let t0 = Instant::now();
        let started = self
            .tools
            .run(&self.proxy, self.tools.dispatch(&["start", "--request", path(&request)]))
            .await?;
        let reference = started.stdout.trim().to_owned();
        self.tools.run(&self.proxy, self.tools.dispatch(&["open", &reference])).await?;
        running.until("the adapter's job running", PATIENCE, |c| c.running == pods).await?;
        Ok((reference, t0.elapsed()))
    }

    async fn finds(&self, job: &JobId) -> Result<Vec<Call>, String> {
        let finds = self
            .tools
            .repeated(&self.proxy, READS, || {
                self.tools.dispatch(&["find", job.as_str(), "-o", "json"])
            })
            .await?;
        if let Some(find) = finds.iter().find(|f| !f.stdout.contains("\"running\"")) {
            return Err(format!("find of a running job did not say running: {}", find.stdout));
        }
        Ok(finds)
    }

    /// `dispatch-kf stop-job`, which answers once nothing of the job is left: its time.
    async fn stop_job(&self, job: &JobId) -> Result<Duration, String> {
        let pods = Pods::of(&self.kube, NS, &format!("{}={job}", keys::LABEL_JOB_ID));
        let t0 = Instant::now();
        self.tools.run(&self.proxy, self.tools.dispatch(&["stop-job", job.as_str()])).await?;
        let took = t0.elapsed();
        pods.until("nothing left after stop-job", Duration::from_secs(10), |c| c.pods == 0).await?;
        Ok(took)
    }

    /// The names of the Nodes the pods of `selector` run on.
    async fn node_names(&self, selector: &str) -> Result<Vec<String>, String> {
        let api: Api<Pod> = Api::namespaced(self.kube.clone(), NS);
        let pods = api.list(&kube::api::ListParams::default().labels(selector)).await;
        let mut names: Vec<String> = pods
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter_map(|p| p.spec.and_then(|s| s.node_name))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// With `dispatch-kf watch` and `kubectl get pods -w` following the running `job`:
    /// the watch's memory, then, once one rank is written out of memory, how long each
    /// took to show it.
    async fn oom_seen(&self, job: &JobId) -> Result<report::Oom, String> {
        let by_job = format!("{}={job}", keys::LABEL_JOB_ID);
        let (watch_pid, mut watch) =
            lines(self.tools.dispatch_alone(&["watch", job.as_str(), "-o", "json"]))?;
        let columns = "custom-columns=NAME:.metadata.name,PHASE:.status.phase";
        let (_, mut pods_w) = lines(self.tools.kubectl(&[
            "get",
            "pods",
            "-n",
            NS,
            "-l",
            &by_job,
            "-w",
            "--no-headers",
            "-o",
            columns,
        ]))?;
        // Both have shown the job running, and gone quiet.
        until_line(&mut watch, PATIENCE, |l| l.contains("\"running\"")).await?;
        let mut listed = 0;
        until_line(&mut pods_w, PATIENCE, |_| {
            listed += 1;
            listed == self.options.pods
        })
        .await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        drain(&mut watch);
        drain(&mut pods_w);
        let resident = dispatch_kf_testkit::memory_kib_of(watch_pid, "VmRSS");
        let peak = dispatch_kf_testkit::memory_kib_of(watch_pid, "VmHWM");

        let api: Api<Pod> = Api::namespaced(self.kube.clone(), NS);
        let mut ranks = api
            .list(&kube::api::ListParams::default().labels(&by_job))
            .await
            .map_err(|e| e.to_string())?
            .items;
        ranks.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let pod = ranks.first().ok_or("the job has no pods")?;
        let name = pod.metadata.name.clone().unwrap_or_default();
        let as_read = serde_json::to_value(pod).map_err(|e| e.to_string())?;
        let patch = dispatch_kf_testkit::containers_ended(&as_read, 137, "OOMKilled");
        let t0 = Instant::now();
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| format!("the pod's status: {e}"))?;
        let failed =
            until_line(&mut pods_w, PATIENCE, |l| l.starts_with(&name) && l.contains("Failed"))
                .await?
                .0;
        let out_of_memory = |l: &str, ended: bool| {
            serde_json::from_str::<ObjectObs>(l).is_ok_and(|o| {
                o.cause.kind == CauseKind::OutOfMemory && (!ended || o.state == ObjectState::Ended)
            })
        };
        let (named, line) = until_line(&mut watch, PATIENCE, |l| out_of_memory(l, false)).await?;
        let ended = match out_of_memory(&line, true) {
            true => named,
            false => until_line(&mut watch, PATIENCE, |l| out_of_memory(l, true)).await?.0,
        };
        Ok(report::Oom {
            resident_kib: resident,
            peak_kib: peak,
            kubectl_failed: failed.duration_since(t0),
            watch_cause: named.duration_since(t0),
            watch_ended: ended.duration_since(t0),
        })
    }
}

/// The lines a long-running command prints, each with when it came; the process is
/// killed when the receiver is dropped.
type Lines = mpsc::UnboundedReceiver<(Instant, String)>;

fn lines(mut cmd: tokio::process::Command) -> Result<(u32, Lines), String> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let pid = child.id().unwrap_or(0);
    let stdout = child.stdout.take().ok_or("no output")?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
        drop(child);
    });
    Ok((pid, rx))
}

/// Waits for the first line `matches` holds of: when it came, and the line.
async fn until_line(
    lines: &mut Lines,
    limit: Duration,
    mut matches: impl FnMut(&str) -> bool,
) -> Result<(Instant, String), String> {
    let deadline = Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, lines.recv()).await {
            Ok(Some((at, line))) if matches(&line) => return Ok((at, line)),
            Ok(Some(_)) => {}
            Ok(None) => return Err("the command ended".into()),
            Err(_) => return Err(format!("no such line within {limit:?}")),
        }
    }
}

/// Forgets the lines printed so far.
fn drain(lines: &mut Lines) {
    while lines.try_recv().is_ok() {}
}

/// A request of `pods` pods with `gpus` GPUs each, on the stock runtime.
fn request(job: &JobId, pods: usize, gpus: u32) -> Value {
    json!({
        "job": job.as_str(), "generation": 0, "submission": 1, "attempt": 1,
        "spec": {
            "command": ["sleep", "86400"], "nodes": pods, "gpusPerNode": gpus,
            "extensions": {
                "dispatch/Image": {"ref": "busybox:1.36"},
                "kubeflow/RuntimeRef": {"kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"}
            }
        }
    })
}

/// The TrainJob of `render`'s list, as a user who does without the adapter would apply
/// it: on the runtime itself (not a copy of it) and not suspended.
fn as_applied(rendered: &str) -> Result<Value, String> {
    let list: Value = serde_json::from_str(rendered).map_err(|e| format!("render: {e}"))?;
    let items = list["items"].as_array().ok_or("render printed no list")?;
    let mut train_job = items
        .iter()
        .find(|o| o["kind"] == keys::KIND_TRAIN_JOB)
        .cloned()
        .ok_or("render printed no TrainJob")?;
    train_job["spec"]["runtimeRef"] = json!({"apiGroup": keys::TRAINER_GROUP,
        "kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"});
    if let Some(spec) = train_job["spec"].as_object_mut() {
        spec.remove("suspend");
    }
    Ok(train_job)
}

fn settings() -> Value {
    json!({
        "name": "kubeflow-bench", "namespace": NS,
        "runtimes": [{"kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"}],
        "timeouts": {"stopJob": "15m", "callBound": "15m"},
    })
}

async fn runtime_of(kube: &kube::Client) -> Result<Value, String> {
    let resource = dispatch_kf_client::resources::CLUSTER_TRAINING_RUNTIME.api_resource();
    let api: Api<DynamicObject> = Api::all_with(kube.clone(), &resource);
    let runtime = api.get("torch-distributed").await.map_err(|e| format!("the runtime: {e}"))?;
    serde_json::to_value(runtime).map_err(|e| e.to_string())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}
