//! `cargo xtask chaos` (`docs/dev/chaos.md`): random faults on the real control plane while
//! a supervisor model drives jobs through one Backend, checked by an observer that reads
//! the cluster with plain Kubernetes requests, not through the adapter.
//!
//! xtask starts the control plane (and in Kueue mode two gate replicas) and runs this
//! with the admin kubeconfig and its own executable, through which the process faults
//! are done (`xtask cluster kill|freeze|thaw|restart`). This process:
//!
//! - makes the namespace (and in Kueue mode its LocalQueue);
//! - makes one Backend by Factory, every request of it through a proxy that can stall
//!   its connections (`dispatch_kf_testkit::Proxy`);
//! - runs `--jobs` supervisors (`supervisor.rs`), each a job submitted again and again,
//!   every fifth through the command `--cli` (`driver.rs`), a process a call, through
//!   the same proxy;
//! - injects a fault every few seconds, drawn from `--seed` (`faults.rs`);
//! - samples the cluster every half second (`observer.rs`);
//! - at the end mends every fault, StopJobs every job, and checks (`report.rs`).
//!
//! Usage: `chaos --kubeconfig FILE --xtask FILE --cli FILE --mode plain|kueue --seconds S
//! --seed N --jobs J --report FILE`. Exits 1 on any violation.

mod driver;
mod faults;
mod observer;
mod report;
mod supervisor;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dispatch_kf::KubeflowBackend;
use dispatch_kf_client::Cluster;
use dispatch_kf_model::Settings;
use dispatch_kf_testkit::Proxy;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::json;

/// The namespace the run works in.
pub(crate) const NS: &str = "dispatch-chaos";
/// The field manager of the harness's own writes.
const MANAGER: &str = "dispatch-kf-chaos";

/// What the run was asked for.
#[derive(Clone, Debug)]
pub(crate) struct Args {
    kubeconfig: String,
    pub(crate) xtask: String,
    /// The `dispatch-kf` executable.
    cli: String,
    pub(crate) kueue: bool,
    seconds: u64,
    seed: u64,
    jobs: u32,
    report: String,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut found = std::collections::BTreeMap::new();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or(format!("{flag} needs a value"))?;
        found.insert(flag.trim_start_matches("--").to_owned(), value.clone());
    }
    let take = |name: &str| found.get(name).cloned().ok_or(format!("--{name} is missing"));
    let number = |name: &str| take(name)?.parse::<u64>().map_err(|e| format!("--{name}: {e}"));
    let kueue = match take("mode")?.as_str() {
        "plain" => false,
        "kueue" => true,
        other => return Err(format!("--mode is plain or kueue, not {other:?}")),
    };
    Ok(Args {
        kubeconfig: take("kubeconfig")?,
        xtask: take("xtask")?,
        cli: take("cli")?,
        kueue,
        seconds: number("seconds")?,
        seed: number("seed")?,
        jobs: u32::try_from(number("jobs")?).map_err(|e| format!("--jobs: {e}"))?,
        report: take("report")?,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!(
                "chaos: {e}\nusage: chaos --kubeconfig FILE --xtask FILE --cli FILE --mode plain|kueue --seconds S --seed N --jobs J --report FILE"
            );
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let report = runtime.block_on(run(args.clone()));
    let text = report.render();
    println!("{text}");
    if let Err(e) = std::fs::write(&args.report, &text) {
        eprintln!("chaos: {}: {e}", args.report);
        return ExitCode::FAILURE;
    }
    if report.violations.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The whole run: set up, drive and fault until the time is up, mend, stop, check.
async fn run(args: Args) -> report::Report {
    let config = kube_config(&args).await;
    let kube = kube::Client::try_from(config.clone()).expect("a client");
    set_up(&kube, args.kueue).await;
    let (proxy, through) = Proxy::in_front_of(&config).await;
    let command = command(&args, &through);
    let cluster = Cluster::from_kube_config(through, Duration::from_secs(30)).expect("a client");
    let backend = KubeflowBackend::with_cluster(settings(args.kueue), cluster, &driver::cx())
        .await
        .expect("Factory");
    let driver = |n: u32| {
        if n % 5 == 4 {
            driver::Driver::Command(command.clone())
        } else {
            driver::Driver::Library(backend.clone())
        }
    };

    let log = Arc::new(report::Log::default());
    log.line(&format!("{} jobs for {} s, seed {}", args.jobs, args.seconds, args.seed));
    let started = Instant::now();
    let until = started + Duration::from_secs(args.seconds);
    let observer = observer::Observer::start(kube.clone(), args.kueue, log.clone());
    let mut supervisors = Vec::new();
    for n in 0..args.jobs {
        let slot =
            supervisor::Supervisor::new(n, driver(n), backend.clone(), log.clone(), args.seed);
        supervisors.push(tokio::spawn(slot.run(until)));
    }
    let faults = faults::Faults::new(&args, kube.clone(), Arc::new(proxy), log.clone());
    faults.run(until, &observer).await;
    let warm = log.memory_mib();
    for supervisor in supervisors {
        supervisor.await.expect("a supervisor ends");
    }
    // Every job stopped for good: what is left after that is a violation.
    let stops = (0..args.jobs).map(|n| {
        let (driver, log) = (driver(n), log.clone());
        async move { supervisor::stop_for_good(&driver, &supervisor::job(n), &log).await }
    });
    futures::future::join_all(stops).await;
    let _ = std::fs::remove_dir_all(&command.dir);
    observer.stop().await;
    sweep_probes(&kube, &backend, &args, &log).await;
    let left = observer::left(&kube).await;
    report::Report::of(&log, &args, started.elapsed(), warm, left)
}

/// The probes a killed command left (the driver kills a command past its call's
/// limit, mid-probe too): a Factory now is the next probe, and must delete those past
/// their expiry, which is a violation otherwise; those not yet past it may belong to a
/// probe still running as far as any adapter can tell, and the harness stops them.
async fn sweep_probes(
    kube: &kube::Client,
    backend: &KubeflowBackend,
    args: &Args,
    log: &report::Log,
) {
    let left = observer::probes(kube).await;
    if left.is_empty() {
        log.note("probes left by killed commands: none".to_owned());
        return;
    }
    let cluster = Cluster::from_kube_config(kube_config(args).await, Duration::from_secs(30))
        .expect("a client");
    let probing = KubeflowBackend::with_cluster(settings(args.kueue), cluster, &driver::cx()).await;
    if let Err(e) = probing {
        log.violation(format!("the final Factory, which sweeps abandoned probes, failed: {e}"));
    }
    let past = left.iter().filter(|(_, expired)| **expired).count();
    log.note(format!(
        "probes left by killed commands: {past} past their expiry (the final Factory deletes them), {} not yet (the harness stops them)",
        left.len() - past
    ));
    let swept = observer::until_gone(kube, left.iter().filter(|(_, e)| **e).map(|(j, _)| j)).await;
    for job in swept {
        log.violation(format!(
            "the probe {job}, past its expiry, was not deleted by the next probe"
        ));
    }
    for job in left.keys() {
        let job = dispatch_core::JobId::parse(job).expect("a probe's job id");
        if let Err(e) = dispatch_core::Backend::stop_job(backend, &driver::cx(), &job).await {
            log.violation(format!("StopJob of the probe {job}: {e}"));
        }
    }
}

/// The client configuration of the run's kubeconfig.
async fn kube_config(args: &Args) -> kube::Config {
    let kubeconfig = kube::config::Kubeconfig::read_from(&args.kubeconfig).expect("the kubeconfig");
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client configuration")
}

/// The command, with the run's settings, on a kubeconfig that reaches the apiserver
/// through the proxy (which presents the admin's credentials onward), in a folder of
/// its own under the system's temporary folder.
fn command(args: &Args, through: &kube::Config) -> Arc<driver::Command> {
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: proxy, cluster: {{server: \"{}\"}}}}]\nusers: [{{name: admin, user: {{}}}}]\ncontexts: [{{name: proxy, context: {{cluster: proxy, user: admin}}}}]\ncurrent-context: proxy\n",
        through.cluster_url
    );
    let dir = std::env::temp_dir().join(format!("dispatch-kf-chaos-{}", std::process::id()));
    let settings = settings_json(args.kueue);
    Arc::new(driver::Command::new(std::path::Path::new(&args.cli), &dir, &settings, &kubeconfig))
}

/// The namespace, the PriorityClass the scheduler's preemptors run at, and in Kueue
/// mode the LocalQueue on the shared ClusterQueue.
async fn set_up(kube: &kube::Client, kueue: bool) {
    let apply = PatchParams::apply(MANAGER).force();
    let namespaces = Api::<DynamicObject>::all_with(
        kube.clone(),
        &resource("", "v1", "Namespace", "namespaces"),
    );
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    namespaces.patch(NS, &apply, &Patch::Apply(&ns)).await.expect("the namespace");
    let class = json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": faults::HIGH_PRIORITY}, "value": 1_000_000
    });
    let classes = Api::<DynamicObject>::all_with(
        kube.clone(),
        &resource("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses"),
    );
    let high = classes.patch(faults::HIGH_PRIORITY, &apply, &Patch::Apply(&class)).await;
    high.expect("the PriorityClass of the preemptors");
    if kueue {
        let queue = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": NS, "namespace": NS}, "spec": {"clusterQueue": "gpu"}
        });
        let queues = Api::<DynamicObject>::namespaced_with(
            kube.clone(),
            NS,
            &resource("kueue.x-k8s.io", "v1beta2", "LocalQueue", "localqueues"),
        );
        queues.patch(NS, &apply, &Patch::Apply(&queue)).await.expect("the LocalQueue");
    }
}

pub(crate) fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// The Backend's settings: the cluster's `torch-distributed` runtime; half a minute for
/// Kueue to make a Workload (Kueue is down for up to eight seconds at a time here, and
/// Start is *rejected* past the bound, as the reference pages have it).
fn settings(kueue: bool) -> Settings {
    Settings::from_value(&settings_json(kueue)).expect("settings")
}

/// [`settings`] as the command's settings file has them.
fn settings_json(kueue: bool) -> serde_json::Value {
    let mut settings = json!({
        "name": "kubeflow-chaos",
        "namespace": NS,
        "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}],
        "timeouts": {"request": "20s", "workload": "30s", "stopJob": "2m", "callBound": "60s"},
    });
    if kueue {
        settings["mode"] = json!("kueue");
        settings["kueue"] = json!({"queue": NS});
    }
    settings
}
