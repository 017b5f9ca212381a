//! `cargo xtask bench many-jobs` (`docs/dev/benchmarks.md#a-big-cluster-cargo-xtask-bench-many-jobs`):
//! a cluster of many TrainJobs over many namespaces, read through `dispatch-kf` beside
//! `kubectl`, in one run. With one dispatch job running in a namespace of its own, at
//! each size (no other TrainJob, 1,000, then all of them, made by the bench as other
//! tenants' would be: suspended, on the stock runtime), it measures:
//!
//! - `dispatch-kf explain -A -o json` and `kubectl get trainjobs -A -o json`: time,
//!   peak memory, requests and bytes (`--runs` of each);
//! - `dispatch-kf find` of the dispatch job, a cold Backend each time (eleven runs).
//!
//! Every command is a process of its own through the counting proxy
//! (`dispatch_kf_testkit::commands`). Before measuring a size it waits until the
//! Trainer has made every TrainJob's JobSet.
//!
//! Usage: `many_jobs --kubeconfig PATH --cli PATH [--train-jobs 10000] [--namespaces 100]
//! [--runs 3]`.

use std::process::ExitCode;
use std::time::Duration;

use dispatch_kf_model::keys;
use dispatch_kf_testkit::commands::{self, Call, Tools, median, write};
use dispatch_kf_testkit::{Proxy, crowd, job};
use serde_json::json;
use tokio::time::Instant;

/// The namespace of the dispatch job.
const NS: &str = "dispatch-bench";
/// Finds measured at each size.
const FINDS: usize = 11;
/// The size between none and all.
const MIDDLE: usize = 1_000;
/// Bar: explain -A's time over kubectl get's.
const MAX_EXPLAIN_RATIO: f64 = 2.0;
/// Bar: explain -A's peak memory with every TrainJob over with [`MIDDLE`].
const MAX_MEMORY_GROWTH: f64 = 1.5;
/// Bar: a Find among every TrainJob over one in an empty cluster.
const MAX_FIND_GROWTH: f64 = 1.3;

fn main() -> ExitCode {
    let usage = "--kubeconfig PATH --cli PATH [--train-jobs 10000] [--namespaces 100] [--runs 3]";
    commands::bench_main("many_jobs", usage, Options::parse, bench)
}

struct Options {
    kubeconfig: String,
    cli: String,
    train_jobs: usize,
    namespaces: usize,
    runs: usize,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let known = ["--kubeconfig", "--cli", "--train-jobs", "--namespaces", "--runs"];
        let flags = commands::Flags::parse(args, &known)?;
        Ok(Options {
            kubeconfig: flags.required("--kubeconfig")?,
            cli: flags.required("--cli")?,
            train_jobs: flags.count("--train-jobs", 10_000)?,
            namespaces: flags.count("--namespaces", 100)?.max(1),
            runs: flags.count("--runs", 3)?.max(1),
        })
    }
}

/// The figures at one size.
struct Size {
    others: usize,
    explains: Vec<Call>,
    gets: Vec<Call>,
    finds: Vec<Call>,
}

async fn bench(options: &Options) -> Result<bool, String> {
    let (direct, kube) = commands::client_of(&options.kubeconfig).await?;
    crowd::ensure_namespace(&kube, NS).await?;
    let (proxy, _) = Proxy::in_front_of(&direct).await;
    let dir = std::env::temp_dir().join(format!("dispatch-kf-many-jobs-{}", std::process::id()));
    let settings = json!({
        "name": "kubeflow-bench", "namespace": NS,
        "runtimes": [{"kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"}],
    });
    let tools = Tools::in_dir(&dir, options.cli.clone().into(), proxy.port(), NS, &settings)?;

    let job = job(1);
    let request = json!({
        "job": job.as_str(), "generation": 0, "submission": 1, "attempt": 1,
        "spec": {"command": ["sleep", "86400"], "nodes": 2, "gpusPerNode": 1,
                 "extensions": {"dispatch/Image": {"ref": "busybox:1.36"},
                    "kubeflow/RuntimeRef": {"kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"}}}
    });
    let request = write(&dir, "request.json", &request.to_string())?;
    let request = request.to_str().unwrap_or_default();
    let started = tools.run(&proxy, tools.dispatch(&["start", "--request", request])).await?;
    tools.run(&proxy, tools.dispatch(&["open", started.stdout.trim()])).await?;
    until_running(&tools, &proxy, job.as_str()).await?;

    let namespaces: Vec<String> =
        (0..options.namespaces).map(|i| format!("tenant-{i:03}")).collect();
    for namespace in &namespaces {
        crowd::ensure_namespace(&kube, namespace).await?;
    }
    let mut sizes = Vec::new();
    let mut made = 0;
    let mut steps = vec![0, MIDDLE.min(options.train_jobs), options.train_jobs];
    steps.dedup();
    for others in steps {
        let names: Vec<(String, String)> = (made..others)
            .map(|i| (namespaces[i % namespaces.len()].clone(), format!("other-{i:05}")))
            .collect();
        let t0 = Instant::now();
        crowd::other_train_jobs(&kube, &names).await?;
        let made_in = t0.elapsed();
        made = others;
        crowd::until_job_sets(&kube, made + 1).await?;
        eprintln!(
            "many_jobs: {} TrainJobs made in {:.1} s, their JobSets in {:.1} s",
            names.len(),
            made_in.as_secs_f64(),
            t0.elapsed().as_secs_f64()
        );
        let runs = options.runs;
        let explains = tools
            .repeated(&proxy, runs, || {
                tools.dispatch_without_settings(&["explain", "-A", "-o", "json"])
            })
            .await?;
        let gets = tools
            .repeated(&proxy, runs, || tools.kubectl(&["get", "trainjobs", "-A", "-o", "json"]))
            .await?;
        let finds = tools
            .repeated(&proxy, FINDS, || tools.dispatch(&["find", job.as_str(), "-o", "json"]))
            .await?;
        let listed = explains[0].stdout.matches("\"kind\": \"TrainJob\"").count();
        if listed != made + 1 {
            return Err(format!("explain -A listed {listed} TrainJobs of {}", made + 1));
        }
        sizes.push(Size { others, explains, gets, finds });
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    print!("{}", report(&sizes, options, &load));
    let misses = misses(&sizes);
    for miss in &misses {
        eprintln!("bar missed: {miss}");
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(misses.is_empty())
}

/// Waits until `find` says the dispatch job runs.
async fn until_running(tools: &Tools, proxy: &Proxy, job: &str) -> Result<(), String> {
    for _ in 0..120 {
        let found = tools.run(proxy, tools.dispatch(&["find", job, "-o", "json"])).await?;
        if found.stdout.contains("\"running\"") {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err("the dispatch job did not run within a minute".into())
}

/// The median time, peak memory, requests and bytes of `calls`.
fn cost(calls: &[Call]) -> String {
    let m = |f: fn(&Call) -> f64| median(calls.iter().map(f));
    format!(
        "{:.2} s, {:.0} MiB, {:.0} req, {:.1} MB",
        m(|c| c.seconds),
        m(|c| c.peak_kib as f64) / 1024.0,
        m(|c| c.requests as f64),
        m(|c| c.bytes as f64) / 1e6
    )
}

fn seconds(calls: &[Call]) -> f64 {
    median(calls.iter().map(|c| c.seconds))
}

fn peak(calls: &[Call]) -> f64 {
    median(calls.iter().map(|c| c.peak_kib as f64))
}

fn report(sizes: &[Size], options: &Options, load: &str) -> String {
    let mut out = format!(
        "{} namespaces; {} runs of explain and kubectl, {FINDS} finds; load average at the end: {}\n",
        options.namespaces,
        options.runs,
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    out.push_str(&format!(
        "{:>7} | {:>40} | {:>40} | {:>6} | {:>15}\n",
        "others", "explain -A -o json", "kubectl get trainjobs -A -o json", "ratio", "find"
    ));
    for s in sizes {
        out.push_str(&format!(
            "{:>7} | {:>40} | {:>40} | {:>5.2}x | {:>9.0} ms, {} req\n",
            s.others,
            cost(&s.explains),
            cost(&s.gets),
            seconds(&s.explains) / seconds(&s.gets),
            seconds(&s.finds) * 1e3,
            median(s.finds.iter().map(|c| c.requests as f64))
        ));
    }
    out
}

fn misses(sizes: &[Size]) -> Vec<String> {
    let mut out = Vec::new();
    let (Some(empty), Some(all)) = (sizes.first(), sizes.last()) else { return out };
    let ratio = seconds(&all.explains) / seconds(&all.gets);
    if ratio > MAX_EXPLAIN_RATIO {
        out.push(format!("explain -A took {ratio:.2}x kubectl get's time > {MAX_EXPLAIN_RATIO}x"));
    }
    if let Some(middle) = sizes.iter().find(|s| s.others == MIDDLE).filter(|_| all.others > MIDDLE)
    {
        let growth = peak(&all.explains) / peak(&middle.explains);
        if growth > MAX_MEMORY_GROWTH {
            out.push(format!(
                "explain -A's peak memory with {} others is {growth:.2}x that with {MIDDLE} > {MAX_MEMORY_GROWTH}x",
                all.others
            ));
        }
    }
    let growth = seconds(&all.finds) / seconds(&empty.finds);
    if growth > MAX_FIND_GROWTH {
        out.push(format!(
            "find among {} others took {growth:.2}x its time in an empty cluster > {MAX_FIND_GROWTH}x",
            all.others
        ));
    }
    out
}
