//! The `dispatch-kf-gate` binary: flags, configuration, logging, signals, the probe
//! server's listener; the work is the library's [`dispatch_kf_gate::run`] and
//! [`dispatch_kf_gate::probes::serve`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use dispatch_kf_gate::Options;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio_util::sync::CancellationToken;

/// dispatch's Kueue readmission gate: an AdmissionCheck controller with leader election.
#[derive(Parser)]
#[command(
    name = "dispatch-kf-gate",
    version,
    about,
    after_help = "Example:\n  dispatch-kf-gate --kubeconfig sim.kubeconfig \
                  --lease-namespace dispatch-system --lease-name dispatch-readmission-gate"
)]
struct Args {
    /// A kubeconfig file; without it, the in-cluster configuration, then the default
    /// kubeconfig.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long)]
    context: Option<String>,
    /// The Lease's namespace.
    #[arg(long)]
    lease_namespace: String,
    /// The Lease's name (the adapter's `kueue.lease` setting).
    #[arg(long, default_value = "dispatch-readmission-gate")]
    lease_name: String,
    /// This replica's identity in the Lease (default: $POD_NAME, then $HOSTNAME).
    #[arg(long)]
    identity: Option<String>,
    /// The Lease's duration in seconds; the renew deadline is two thirds of it.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(3..))]
    lease_duration_seconds: u64,
    /// Where `/healthz`, `/readyz` and `/metrics` are served (port 0: any free port,
    /// logged at start).
    #[arg(long, default_value = "0.0.0.0:8080")]
    probe_address: SocketAddr,
    /// How log lines are written to standard error.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// The log line formats.
#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for a log collector.
    Json,
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,kube=warn".into());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
}

async fn client(args: &Args) -> Result<kube::Client, String> {
    let options = KubeConfigOptions { context: args.context.clone(), ..Default::default() };
    let config = match &args.kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path)
                .map_err(|e| format!("cannot read kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options).await.map_err(|e| e.to_string())?
        }
        None => kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    kube::Client::try_from(config).map_err(|e| dispatch_kf_client::redacted(&e))
}

fn identity(args: &Args) -> String {
    args.identity
        .clone()
        .or_else(|| std::env::var("POD_NAME").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("dispatch-kf-gate-{}", std::process::id()))
}

async fn shutdown_signal(token: CancellationToken) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let terminated = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated => {}
    }
    token.cancel();
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    init_logging(args.log_format);
    let listener = match tokio::net::TcpListener::bind(args.probe_address).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("dispatch-kf-gate: cannot listen on {}: {e}", args.probe_address);
            return ExitCode::from(2);
        }
    };
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, "serving /healthz, /readyz and /metrics");
    }
    let client = match client(&args).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dispatch-kf-gate: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = Options::new(&args.lease_namespace, &args.lease_name, &identity(&args));
    options.lease_duration = Duration::from_secs(args.lease_duration_seconds);
    options.renew_deadline = Duration::from_secs(args.lease_duration_seconds * 2 / 3);
    options.retry_period = Duration::from_secs((args.lease_duration_seconds / 7).max(1));
    let token = CancellationToken::new();
    tokio::spawn(shutdown_signal(token.clone()));
    let probes = token.child_token();
    tokio::spawn(dispatch_kf_gate::probes::serve(listener, options.telemetry.clone(), probes));
    dispatch_kf_gate::run(client, options, token).await;
    ExitCode::SUCCESS
}
