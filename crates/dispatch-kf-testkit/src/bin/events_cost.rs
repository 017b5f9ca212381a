//! `cargo xtask bench events` (`docs/events.md#what-it-costs`): what the cause
//! controller costs on a cluster of many TrainJobs. The bench makes the TrainJobs
//! (suspended, on the stock runtime, over many namespaces, as other tenants' would be),
//! waits until the Trainer has made their JobSets, then starts `dispatch-kf-events`
//! (built with optimizations) as a process of its own, its requests through the
//! counting proxy, and measures:
//!
//! - until it has listed everything (`dispatch_events_synced 1`): the time, its
//!   requests and bytes, its CPU time and resident memory;
//! - over an idle spell (`--idle`, 60 s): its requests, CPU time and memory;
//! - one TrainJob that ends out of memory (its rank's status written as the kubelet
//!   writes an OOM kill): the time from that write until the Trainer marks it `Failed`
//!   (upstream's), and from that until its Event exists (the controller's), and the
//!   TrainJob's `kubectl describe`.
//!
//! Usage: `events_cost --kubeconfig PATH --controller PATH [--train-jobs 10000]
//! [--namespaces 100] [--idle 60]`.

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use dispatch_kf_client::resources::{EVENT, POD, Resource, TRAIN_JOB};
use dispatch_kf_model::keys;
use dispatch_kf_testkit::commands::{self, proxy_kubeconfig};
use dispatch_kf_testkit::{
    Proxy, containers_ended, crowd, memory_kib_of, series_value, try_http_get,
};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The namespace of the controller's Lease and of the TrainJob that ends.
const NS: &str = "dispatch-bench";
/// The TrainJob that ends out of memory.
const ENDS: &str = "ends-out-of-memory";
/// Bar: from the TrainJob's `Failed` to its Event.
const MAX_TELL_SECONDS: f64 = 5.0;

fn main() -> ExitCode {
    let usage =
        "--kubeconfig PATH --controller PATH [--train-jobs 10000] [--namespaces 100] [--idle 60]";
    commands::bench_main("events_cost", usage, Options::parse, bench)
}

struct Options {
    kubeconfig: String,
    controller: String,
    train_jobs: usize,
    namespaces: usize,
    idle: u64,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let known = ["--kubeconfig", "--controller", "--train-jobs", "--namespaces", "--idle"];
        let flags = commands::Flags::parse(args, &known)?;
        Ok(Options {
            kubeconfig: flags.required("--kubeconfig")?,
            controller: flags.required("--controller")?,
            train_jobs: flags.count("--train-jobs", 10_000)?,
            namespaces: flags.count("--namespaces", 100)?.max(1),
            idle: flags.count("--idle", 60)? as u64,
        })
    }
}

/// One reading of the controller: its requests and bytes through the proxy, CPU time,
/// resident memory now and at its peak.
#[derive(Clone, Copy, Debug)]
struct Reading {
    at: Instant,
    requests: u64,
    bytes: u64,
    cpu: f64,
    rss_kib: f64,
    peak_kib: f64,
}

fn read(proxy: &Proxy, pid: u32) -> Reading {
    Reading {
        at: Instant::now(),
        requests: proxy.requests_seen(),
        bytes: proxy.bytes_received(),
        cpu: dispatch_kf_testkit::cpu_time_of(pid).as_secs_f64(),
        rss_kib: memory_kib_of(pid, "VmRSS"),
        peak_kib: memory_kib_of(pid, "VmHWM"),
    }
}

/// One row of the figures: what the controller did between `from` and `to` (time,
/// requests, bytes received, CPU), and its memory at `to`.
fn row(what: &str, from: &Reading, to: &Reading) {
    println!(
        "| {what} | {:.1} s | {} | {:.2} MB | {:.2} s | {:.0} MiB ({:.0} MiB) |",
        (to.at - from.at).as_secs_f64(),
        to.requests - from.requests,
        (to.bytes - from.bytes) as f64 / 1e6,
        to.cpu - from.cpu,
        to.rss_kib / 1024.0,
        to.peak_kib / 1024.0
    );
}

async fn bench(options: &Options) -> Result<bool, String> {
    let (direct, kube) = commands::client_of(&options.kubeconfig).await?;
    crowd::ensure_namespace(&kube, NS).await?;
    let namespaces: Vec<String> =
        (0..options.namespaces).map(|i| format!("tenant-{i:03}")).collect();
    for namespace in &namespaces {
        crowd::ensure_namespace(&kube, namespace).await?;
    }
    let names: Vec<(String, String)> = (0..options.train_jobs)
        .map(|i| (namespaces[i % namespaces.len()].clone(), format!("other-{i:05}")))
        .collect();
    let t0 = Instant::now();
    crowd::other_train_jobs(&kube, &names).await?;
    let made_in = t0.elapsed().as_secs_f64();
    crowd::until_job_sets(&kube, options.train_jobs).await?;
    eprintln!(
        "events_cost: {} TrainJobs made in {made_in:.1} s, their JobSets in {:.1} s",
        options.train_jobs,
        t0.elapsed().as_secs_f64()
    );

    let (proxy, _) = Proxy::in_front_of(&direct).await;
    let dir = std::env::temp_dir().join(format!("dispatch-kf-events-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let kubeconfig = proxy_kubeconfig(&dir, proxy.port(), NS)?;
    let probes = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let address = probes.local_addr().map_err(|e| e.to_string())?;
    drop(probes);
    let log = std::fs::File::create(dir.join("controller.log")).map_err(|e| e.to_string())?;
    let mut controller = tokio::process::Command::new(&options.controller)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--lease-namespace", NS, "--identity", "bench", "--log-format", "json"])
        .args(["--probe-address", &address.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", options.controller))?;
    let pid = controller.id().ok_or("the controller exited at once")?;
    // Before its first request: nothing of the process counted yet.
    let started = Reading { cpu: 0.0, rss_kib: 0.0, peak_kib: 0.0, ..read(&proxy, pid) };
    let synced = loop {
        if let Ok(Some(status)) = controller.try_wait() {
            let log = std::fs::read_to_string(dir.join("controller.log")).unwrap_or_default();
            return Err(format!("the controller exited ({status}):\n{log}"));
        }
        // Nothing answers until it listens; a GET is bounded so a stuck one cannot hang.
        let get = tokio::time::timeout(Duration::from_secs(2), try_http_get(address, "/metrics"));
        if let Ok(Ok((200, text))) = get.await
            && series_value(&text, "dispatch_events_synced") == Some(1.0)
            && series_value(&text, "dispatch_events_leading") == Some(1.0)
        {
            break read(&proxy, pid);
        }
        if started.at.elapsed() > Duration::from_secs(600) {
            return Err("the controller did not list everything within 10 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(Duration::from_secs(options.idle)).await;
    let idle = read(&proxy, pid);

    let (failed_in, told_in, describe) = end_one(&kube, &options.kubeconfig).await?;
    let after = read(&proxy, pid);
    let _ = controller.start_kill();
    let _ = controller.wait().await;

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\n`cargo xtask bench events`: {} TrainJobs over {} namespaces (JobSets made by the Trainer; no pods)",
        options.train_jobs, options.namespaces
    );
    println!("load average at the end: {}", load.trim());
    println!(
        "\n| | time | requests | received | CPU | resident (peak) |\n|---|---|---|---|---|---|"
    );
    row("start, until every watch has listed", &started, &synced);
    row("idle", &synced, &idle);
    row("one TrainJob made, run, ended out of memory, told", &idle, &after);
    println!(
        "\nout of memory -> TrainJob Failed (upstream): {failed_in:.2} s; Failed -> its Event: {told_in:.2} s"
    );
    println!("\n`kubectl describe trainjob {ENDS} -n {NS}`:\n\n{describe}");
    std::fs::remove_dir_all(&dir).ok();
    if told_in > MAX_TELL_SECONDS {
        eprintln!(
            "bar missed: the Event came {told_in:.2} s after the TrainJob failed (bar {MAX_TELL_SECONDS} s)"
        );
        return Ok(false);
    }
    Ok(true)
}

/// Makes a TrainJob of one rank, waits until the rank runs, writes its OOM kill, and
/// waits for the TrainJob's `Failed` and for its Event: those two times, and its
/// `kubectl describe`.
async fn end_one(kube: &kube::Client, kubeconfig: &str) -> Result<(f64, f64, String), String> {
    let running = crowd::on_stock_runtime(json!({"trainer": {"numNodes": 1}}));
    crowd::train_jobs(kube, &[(NS.to_owned(), ENDS.to_owned())], &running).await?;
    let in_ns = |resource: Resource| -> Api<DynamicObject> {
        Api::namespaced_with(kube.clone(), NS, &resource.api_resource())
    };
    let pods = in_ns(POD);
    let of_it = ListParams::default().labels(&format!("jobset.sigs.k8s.io/jobset-name={ENDS}"));
    let pod = poll("its rank running", Duration::from_secs(300), async || {
        let listed = pods.list(&of_it).await.map_err(|e| e.to_string())?;
        Ok(listed.items.into_iter().find(|p| p.data["status"]["phase"] == "Running"))
    })
    .await?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let value = serde_json::to_value(&pod).map_err(|e| e.to_string())?;
    let killed = Instant::now();
    let patch = containers_ended(&value, 137, "OOMKilled");
    pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| e.to_string())?;
    let train_jobs = in_ns(TRAIN_JOB);
    poll("the TrainJob failed", Duration::from_secs(300), async || {
        let tj = train_jobs.get(ENDS).await.map_err(|e| e.to_string())?;
        let conditions = tj.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
        Ok(conditions.iter().any(|c| c["type"] == "Failed" && c["status"] == "True").then_some(()))
    })
    .await?;
    let failed = Instant::now();
    let events = in_ns(EVENT);
    let event: Value = poll("its Event", Duration::from_secs(120), async || {
        let listed = events.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
        // JobSet's own Events regard the JobSet of the same name.
        let found = listed.items.into_iter().find(|e| {
            e.data["regarding"]["name"] == ENDS
                && e.data["regarding"]["kind"] == keys::KIND_TRAIN_JOB
                && e.data["reportingController"] == keys::EVENTS_CONTROLLER_NAME
        });
        Ok(found.map(|e| e.data))
    })
    .await?;
    let told = Instant::now();
    if event["reason"] != "OutOfMemory" {
        return Err(format!("the Event says {}, not OutOfMemory: {event}", event["reason"]));
    }
    let describe = std::process::Command::new("kubectl")
        .args(["--kubeconfig", kubeconfig, "describe", "trainjob", ENDS, "-n", NS])
        .output()
        .map_err(|e| format!("cannot run kubectl: {e}"))?;
    let describe = String::from_utf8_lossy(&describe.stdout).into_owned();
    Ok(((failed - killed).as_secs_f64(), (told - failed).as_secs_f64(), describe))
}

/// Looks every 100 ms until `look` finds something; an error after `patience`.
async fn poll<T>(
    what: &str,
    patience: Duration,
    mut look: impl AsyncFnMut() -> Result<Option<T>, String>,
) -> Result<T, String> {
    let t0 = Instant::now();
    loop {
        if let Some(found) = look().await? {
            return Ok(found);
        }
        if t0.elapsed() > patience {
            return Err(format!("{what}: not within {patience:?}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
