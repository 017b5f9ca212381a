//! The `dispatch-kf-events` binary: its flags; the process is
//! `dispatch_kf_replica::process::main`, the work the library's loop.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use dispatch_kf_client::Cluster;
use dispatch_kf_events::Options;
use dispatch_kf_events::telemetry::Telemetry;
use dispatch_kf_replica::process::ReplicaArgs;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// dispatch's cause controller: each TrainJob's end or eviction as an Event regarding
/// it, and TrainJobs by state and cause as Prometheus metrics.
#[derive(Parser)]
#[command(
    name = "dispatch-kf-events",
    version,
    about,
    after_help = "Example:\n  dispatch-kf-events --lease-namespace dispatch-system --namespace team-a --namespace team-b"
)]
struct Args {
    #[command(flatten)]
    replica: ReplicaArgs,
    /// The Lease's name.
    #[arg(long, default_value = "dispatch-events")]
    lease_name: String,
    /// A namespace to watch (repeat for several); without one, every namespace.
    #[arg(long = "namespace")]
    namespaces: Vec<String>,
    /// Also serve a series per TrainJob (`dispatch_trainjob_status`), which grows with
    /// the cluster.
    #[arg(long)]
    per_trainjob_metrics: bool,
}

/// How long one request to the apiserver may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let telemetry = Telemetry::new(args.per_trainjob_metrics);
    let namespaces = args.namespaces.clone();
    dispatch_kf_replica::process::main(
        "dispatch-kf-events",
        &args.replica,
        &args.lease_name,
        telemetry,
        |_, config, replica| {
            let (leading, follows) = watch::channel(false);
            let mut options = Options::new(&replica.identity);
            options.namespaces = namespaces;
            let cluster = Cluster::from_kube_config(config, REQUEST_TIMEOUT)
                .map_err(|e| format!("cannot build the client: {e}"))?;
            let looped = dispatch_kf_events::run(
                cluster,
                options,
                replica.clock.clone(),
                replica.telemetry.clone(),
                follows,
                CancellationToken::new(),
            );
            tokio::spawn(looped);
            Ok(dispatch_kf_events::work(leading))
        },
    )
    .await
}
