//! `cargo xtask bench scale` (`docs/dev/benchmarks.md#scale-cargo-xtask-bench-scale`): one
//! Backend in a namespace holding M other TrainJobs, watching N jobs of its own. For
//! each cell it prints what the adapter received per Find (requests, bytes), the watch
//! requests it made, Find's latency (median, p99), its CPU time per Find, its peak
//! resident memory and the memory each watched job costs; then the bars, and exits
//! non-zero when one is missed.
//!
//! Usage: `scale [--kubeconfig PATH] [--others 0,1000,10000] [--watched 1,100,1000]`.
//! Without `--kubeconfig` it measures the simulated cluster, served by a child process
//! of its own (`scale --serve-sim`), so the adapter's CPU and memory are its own. Bytes
//! are counted by a TCP proxy in front of the apiserver (TLS included), requests by
//! kube's own `HTTP` spans.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dispatch_core::{Backend, CallContext, ObsStream, Watcher};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_client::Cluster;
use dispatch_kf_model::Settings;
use dispatch_kf_testkit::{job, request};
use futures::StreamExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Finds measured per cell.
const FINDS: usize = 20;
/// How long nothing must reach the adapter before Finds are measured.
const QUIET: Duration = Duration::from_secs(2);
/// The longest the bench waits for the cluster to be quiet.
const MAX_QUIESCE: Duration = Duration::from_secs(300);
/// Bar: Find's bytes at the most other TrainJobs, over those at none.
const MAX_BYTES_GROWTH: f64 = 1.2;
/// Bar: memory per watched job, once its evidence is empty.
const MAX_MEMORY_PER_JOB: f64 = 64.0 * 1024.0;
/// Cells that open at least this many Watches measure memory per watched job.
const MANY_WATCHES: usize = 99;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve-sim") {
        return serve_sim();
    }
    let options = match Options::parse(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!(
                "scale: {e}\nusage: scale [--kubeconfig PATH] [--others 0,1000,10000] [--watched 1,100,1000]"
            );
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    match runtime.block_on(measure(&options)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("scale: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Options {
    kubeconfig: Option<String>,
    others: Vec<usize>,
    watched: Vec<usize>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            kubeconfig: None,
            others: vec![0, 1_000, 10_000],
            watched: vec![1, 100, 1_000],
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            let counts = || -> Result<Vec<usize>, String> {
                let mut v: Vec<usize> = value
                    .split(',')
                    .map(|n| n.parse().map_err(|_| format!("{flag}: {n:?} is not a count")))
                    .collect::<Result<_, _>>()?;
                v.sort_unstable();
                Ok(v)
            };
            match flag.as_str() {
                "--kubeconfig" => options.kubeconfig = Some(value.clone()),
                "--others" => options.others = counts()?,
                "--watched" => options.watched = counts()?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if options.watched.first() == Some(&0) {
            return Err("--watched counts start at 1".into());
        }
        Ok(options)
    }
}

/// The child's side: a simulated cluster, its kubeconfig's path on standard output,
/// served until standard input closes.
fn serve_sim() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let _sim = runtime.block_on(async {
        let sim = dispatch_kf_testkit::cluster().await;
        let path =
            std::env::temp_dir().join(format!("dispatch-kf-scale-{}.yaml", std::process::id()));
        std::fs::write(&path, sim.kubeconfig_yaml("admin").unwrap()).unwrap();
        println!("{}", path.display());
        std::io::stdout().flush().unwrap();
        sim
    });
    let mut sink = String::new();
    while std::io::stdin().lock().read_line(&mut sink).is_ok_and(|n| n > 0) {}
    ExitCode::SUCCESS
}

/// Where the cluster is, and the child serving it when it is the sim.
struct Target {
    kubeconfig: String,
    namespace: String,
    _child: Option<std::process::Child>,
}

impl Target {
    fn open(options: &Options) -> Result<Target, String> {
        if let Some(kubeconfig) = &options.kubeconfig {
            return Ok(Target {
                kubeconfig: kubeconfig.clone(),
                namespace: "dispatch-scale".into(),
                _child: None,
            });
        }
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .arg("--serve-sim")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the sim: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("the sim has no output")?;
        std::io::BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
        Ok(Target {
            kubeconfig: line.trim().to_owned(),
            namespace: dispatch_kf_testkit::NS.into(),
            _child: Some(child),
        })
    }
}

/// One cell's figures.
struct Cell {
    others: usize,
    watched: usize,
    requests: u64,
    bytes: u64,
    watch_requests: u64,
    median: Duration,
    p99: Duration,
    cpu_per_find: Duration,
    peak_mib: f64,
    /// Watches the cell opened, and the resident memory each cost.
    added: usize,
    per_job: Option<f64>,
}

async fn measure(options: &Options) -> Result<bool, String> {
    let counter = Requests::default();
    tracing::subscriber::set_global_default(tracing_subscriber::layer::SubscriberExt::with(
        tracing_subscriber::registry(),
        counter.clone(),
    ))
    .map_err(|e| e.to_string())?;
    let target = Target::open(options)?;
    let direct = load(&target.kubeconfig).await?;
    let proxy = Proxy::start(&direct).await?;
    let mut proxied = direct.clone();
    proxied.cluster_url = proxy.url(&direct)?;
    let kube = kube::Client::try_from(direct).map_err(|e| e.to_string())?;
    dispatch_kf_testkit::crowd::ensure_namespace(&kube, &target.namespace).await?;

    println!(
        "{:>6} {:>5} {:>9} {:>10} {:>8} {:>9} {:>9} {:>10} {:>9} {:>12}",
        "M",
        "N",
        "req/Find",
        "bytes/Find",
        "watches",
        "median",
        "p99",
        "cpu/Find",
        "peak",
        "mem/watched"
    );
    let mut cells = Vec::new();
    let mut started = 0;
    let mut made = 0;
    for &others in &options.others {
        made = fill(&kube, &target.namespace, made, others).await?;
        let settings = settings(&target.namespace);
        let cluster = Cluster::from_kube_config(proxied.clone(), Duration::from_secs(30))
            .map_err(|e| e.to_string())?;
        let backend = KubeflowBackend::with_cluster(settings, cluster, &cx())
            .await
            .map_err(|e| e.to_string())?;
        counter.watches.store(0, Ordering::Relaxed);
        let mut streams: Vec<ObsStream> = Vec::new();
        for &watched in &options.watched {
            while started < watched {
                backend
                    .start(&cx(), &request(&job(started as u32), 1))
                    .await
                    .map_err(|e| e.to_string())?;
                started += 1;
            }
            let before = resident_kib();
            let adding = watched - streams.len();
            while streams.len() < watched {
                let mut stream = backend
                    .watch(&cx(), &job(streams.len() as u32))
                    .await
                    .map_err(|e| e.to_string())?;
                stream.next().await.ok_or("a Watch ended at once")?.map_err(|e| e.to_string())?;
                streams.push(stream);
            }
            let per_job = (adding > 0).then(|| (resident_kib() - before) * 1024.0 / adding as f64);
            quiesce(&proxy).await;
            let mut cell = finds(&backend, &counter, &proxy, others, watched, per_job).await?;
            cell.added = adding;
            print_cell(&cell);
            cells.push(cell);
        }
        drop(streams);
    }
    Ok(bars(&cells))
}

/// [`FINDS`] Finds of the watched jobs, round the jobs.
async fn finds(
    backend: &KubeflowBackend,
    counter: &Requests,
    proxy: &Proxy,
    others: usize,
    watched: usize,
    per_job: Option<f64>,
) -> Result<Cell, String> {
    let mut latencies = Vec::new();
    let mut requests = Vec::new();
    let mut bytes = Vec::new();
    let cpu = dispatch_kf_testkit::cpu_time();
    for i in 0..FINDS {
        let (r0, b0) =
            (counter.all.load(Ordering::Relaxed), proxy.received.load(Ordering::Relaxed));
        let t0 = Instant::now();
        backend.find(&cx(), &job((i % watched) as u32)).await.map_err(|e| e.to_string())?;
        latencies.push(t0.elapsed());
        requests.push(counter.all.load(Ordering::Relaxed) - r0);
        bytes.push(proxy.received.load(Ordering::Relaxed) - b0);
    }
    let cpu = dispatch_kf_testkit::cpu_time() - cpu;
    latencies.sort();
    requests.sort();
    bytes.sort();
    Ok(Cell {
        others,
        watched,
        requests: requests[FINDS / 2],
        bytes: bytes[FINDS / 2],
        watch_requests: counter.watches.load(Ordering::Relaxed),
        median: latencies[FINDS / 2],
        p99: latencies[(FINDS * 99).div_ceil(100) - 1],
        cpu_per_find: cpu / FINDS as u32,
        peak_mib: peak_kib() / 1024.0,
        added: 0,
        per_job,
    })
}

/// Waits until the cluster is quiet: no byte reaches the adapter for [`QUIET`] (at most
/// [`MAX_QUIESCE`]). A real cluster's controllers go on working on the objects just
/// made, and their changes reach the Backend's watches over the proxy: a Find measured
/// meanwhile would count their bytes as its own.
async fn quiesce(proxy: &Proxy) {
    let t0 = Instant::now();
    loop {
        let before = proxy.received.load(Ordering::Relaxed);
        tokio::time::sleep(QUIET).await;
        if proxy.received.load(Ordering::Relaxed) == before || t0.elapsed() > MAX_QUIESCE {
            return;
        }
    }
}

fn print_cell(c: &Cell) {
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    let per_job = c.per_job.map_or("-".into(), |b| format!("{:.1} KiB", b / 1024.0));
    println!(
        "{:>6} {:>5} {:>9} {:>10} {:>8} {:>9} {:>9} {:>10} {:>5.0} MiB {:>12}",
        c.others,
        c.watched,
        c.requests,
        c.bytes,
        c.watch_requests,
        ms(c.median),
        ms(c.p99),
        ms(c.cpu_per_find),
        c.peak_mib,
        per_job
    );
}

/// Checks the bars on the cells; whether all hold.
fn bars(cells: &[Cell]) -> bool {
    let mut ok = true;
    let mut bar = |holds: bool, what: String| {
        println!("bar {}: {what}", if holds { "holds" } else { "MISSED" });
        ok &= holds;
    };
    let (Some(least), Some(most)) = (cells.first(), cells.iter().max_by_key(|c| c.others)) else {
        return true;
    };
    let at = |others: usize| cells.iter().filter(move |c| c.others == others);
    let bytes = |others| at(others).map(|c| c.bytes).max().unwrap_or(0) as f64;
    let growth = bytes(most.others) / bytes(least.others).max(1.0);
    bar(
        growth <= MAX_BYTES_GROWTH,
        format!(
            "Find's bytes at M = {} are {growth:.2}x those at M = {} (at most {MAX_BYTES_GROWTH}x)",
            most.others, least.others
        ),
    );
    for others in cells.iter().map(|c| c.others).collect::<std::collections::BTreeSet<_>>() {
        let watches: Vec<u64> = at(others).map(|c| c.watch_requests).collect();
        bar(
            watches.iter().all(|w| *w == watches[0]),
            format!("watch requests at M = {others} do not grow with N: {watches:?}"),
        );
    }
    // The worst cell that opened many Watches: a cell that opened one also pays what
    // the first Watch starts once (the pod watch), and the resident memory the
    // allocator kept from an earlier cell hides what later ones cost.
    let many = cells.iter().filter(|c| c.added >= MANY_WATCHES);
    let worst = many.filter_map(|c| Some((c, c.per_job?))).max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((c, per_job)) = worst {
        bar(
            per_job < MAX_MEMORY_PER_JOB,
            format!(
                "memory per watched job is at most {:.1} KiB (M = {}, N = {}; under {} KiB)",
                per_job / 1024.0,
                c.others,
                c.watched,
                MAX_MEMORY_PER_JOB / 1024.0
            ),
        );
    }
    ok
}

fn settings(namespace: &str) -> Settings {
    dispatch_kf_testkit::settings(json!({
        "namespace": namespace,
        "timeouts": {"request": "30s", "workload": "2s", "stopJob": "60s", "callBound": "120s"},
    }))
}

fn cx() -> CallContext {
    CallContext::background()
}

async fn load(kubeconfig: &str) -> Result<kube::Config, String> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
    kube::Config::from_custom_kubeconfig(file, &Default::default()).await.map_err(|e| e.to_string())
}

/// Makes other TrainJobs `from..to` (suspended, on the stock runtime, of no dispatch
/// job): what the namespace's other tenants hold. Returns `to`.
async fn fill(
    kube: &kube::Client,
    namespace: &str,
    from: usize,
    to: usize,
) -> Result<usize, String> {
    let t0 = Instant::now();
    let names: Vec<(String, String)> =
        (from..to).map(|i| (namespace.to_owned(), format!("other-{i}"))).collect();
    dispatch_kf_testkit::crowd::other_train_jobs(kube, &names).await?;
    if to > from {
        eprintln!(
            "scale: made {} other TrainJobs in {:.1} s",
            to - from,
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(to)
}

/// Requests the adapter made, counted from kube's `HTTP` spans.
#[derive(Clone, Default)]
struct Requests {
    all: Arc<AtomicU64>,
    watches: Arc<AtomicU64>,
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Requests {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _cx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() != "HTTP" {
            return;
        }
        self.all.fetch_add(1, Ordering::Relaxed);
        let mut url = UrlOf(String::new());
        attrs.record(&mut url);
        if url.0.contains("watch=true") {
            self.watches.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The `http.url` field of a span.
struct UrlOf(String);

impl tracing::field::Visit for UrlOf {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "http.url" {
            self.0 = format!("{value:?}");
        }
    }
}

/// A TCP proxy in front of the apiserver, counting the bytes the adapter receives.
struct Proxy {
    address: SocketAddr,
    received: Arc<AtomicU64>,
}

impl Proxy {
    async fn start(config: &kube::Config) -> Result<Proxy, String> {
        let upstream = upstream(config)?;
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        let received = Arc::new(AtomicU64::new(0));
        let counted = received.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (counted, upstream) = (counted.clone(), upstream.clone());
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        pipe(client, server, counted).await;
                    }
                });
            }
        });
        Ok(Proxy { address, received })
    }

    /// The cluster URL through the proxy: the same scheme, the proxy's address.
    fn url(&self, config: &kube::Config) -> Result<http::Uri, String> {
        let scheme = config.cluster_url.scheme_str().unwrap_or("https");
        format!("{scheme}://{}", self.address)
            .parse()
            .map_err(|e: http::uri::InvalidUri| e.to_string())
    }
}

/// The apiserver's `host:port`.
fn upstream(config: &kube::Config) -> Result<String, String> {
    let url = &config.cluster_url;
    let host = url.host().ok_or("the cluster URL has no host")?;
    let port = url.port_u16().unwrap_or(if url.scheme_str() == Some("http") { 80 } else { 443 });
    Ok(format!("{host}:{port}"))
}

/// Copies both ways, counting what the server sends.
async fn pipe(client: TcpStream, server: TcpStream, received: Arc<AtomicU64>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        let _ = server_write.shutdown().await;
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = server_read.read(&mut buf).await {
            if n == 0 || client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
            received.fetch_add(n as u64, Ordering::Relaxed);
        }
        let _ = client_write.shutdown().await;
    };
    tokio::join!(up, down);
}

fn resident_kib() -> f64 {
    dispatch_kf_testkit::memory_kib("VmRSS")
}

fn peak_kib() -> f64 {
    dispatch_kf_testkit::memory_kib("VmHWM")
}
