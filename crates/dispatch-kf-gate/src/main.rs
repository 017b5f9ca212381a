//! The `dispatch-kf-gate` binary: its flags; the process is
//! `dispatch_kf_replica::process::main`, the work the library's reconcilers.

use std::process::ExitCode;

use clap::Parser;
use dispatch_kf_replica::process::ReplicaArgs;

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
    #[command(flatten)]
    replica: ReplicaArgs,
    /// The Lease's name (the adapter's `kueue.lease` setting).
    #[arg(long, default_value = "dispatch-readmission-gate")]
    lease_name: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let telemetry = dispatch_kf_gate::telemetry::Telemetry::new();
    dispatch_kf_replica::process::main(
        "dispatch-kf-gate",
        &args.replica,
        &args.lease_name,
        telemetry,
        |client, _, options| Ok(dispatch_kf_gate::work(client, options)),
    )
    .await
}
