//! The process a controller's binary is: its common flags ([`ReplicaArgs`], flattened
//! into the binary's own), logging, the client, signals, the probe server's listener,
//! then [`run`](crate::run) until SIGTERM or Ctrl-C ([`main`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio_util::sync::CancellationToken;

use crate::{Options, Telemetry, Work};

/// The flags every controller of dispatch takes.
#[derive(clap::Args, Clone, Debug)]
pub struct ReplicaArgs {
    /// A kubeconfig file; without it, the in-cluster configuration, then the default
    /// kubeconfig.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// The Lease's namespace.
    #[arg(long)]
    pub lease_namespace: String,
    /// This replica's identity in the Lease (default: $POD_NAME, then $HOSTNAME).
    #[arg(long)]
    pub identity: Option<String>,
    /// The Lease's duration in seconds; the renew deadline is two thirds of it.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(3..))]
    pub lease_duration_seconds: u64,
    /// Where `/healthz`, `/readyz` and `/metrics` are served (port 0: any free port,
    /// logged at start).
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub probe_address: SocketAddr,
    /// How log lines are written to standard error.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The log line formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
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

async fn connect(args: &ReplicaArgs) -> Result<(kube::Client, kube::Config), String> {
    let options = KubeConfigOptions { context: args.context.clone(), ..Default::default() };
    let config = match &args.kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path)
                .map_err(|e| format!("cannot read kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options).await.map_err(|e| e.to_string())?
        }
        None => kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    let client =
        kube::Client::try_from(config.clone()).map_err(|e| dispatch_kf_client::redacted(&e))?;
    Ok((client, config))
}

fn identity(args: &ReplicaArgs, program: &str) -> String {
    args.identity
        .clone()
        .or_else(|| std::env::var("POD_NAME").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{program}-{}", std::process::id()))
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

/// A controller's process: logs as `args` say, serves the probes of `telemetry`,
/// connects, campaigns for the Lease `lease_name` and runs the work `work` makes from
/// the client, its configuration and the options while it leads, until SIGTERM or
/// Ctrl-C. Exit code 2 when it cannot listen or connect, or `work` says why it cannot
/// start.
pub async fn main<T: Telemetry + Clone + Default>(
    program: &str,
    args: &ReplicaArgs,
    lease_name: &str,
    telemetry: T,
    work: impl FnOnce(kube::Client, kube::Config, &Options<T>) -> Result<Work, String>,
) -> ExitCode {
    init_logging(args.log_format);
    let listener = match tokio::net::TcpListener::bind(args.probe_address).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{program}: cannot listen on {}: {e}", args.probe_address);
            return ExitCode::from(2);
        }
    };
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, "serving /healthz, /readyz and /metrics");
    }
    let (client, config) = match connect(args).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{program}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options: Options<T> =
        Options::new(&args.lease_namespace, lease_name, &identity(args, program));
    options.lease_duration = Duration::from_secs(args.lease_duration_seconds);
    options.renew_deadline = Duration::from_secs(args.lease_duration_seconds * 2 / 3);
    options.retry_period = Duration::from_secs((args.lease_duration_seconds / 7).max(1));
    options.telemetry = telemetry;
    let token = CancellationToken::new();
    tokio::spawn(shutdown_signal(token.clone()));
    let probes = token.child_token();
    tokio::spawn(crate::probes::serve(listener, Arc::new(options.telemetry.clone()), probes));
    let work = match work(client.clone(), config, &options) {
        Ok(work) => work,
        Err(e) => {
            eprintln!("{program}: {e}");
            return ExitCode::from(2);
        }
    };
    crate::run(client, options, work, token).await;
    ExitCode::SUCCESS
}
