//! `dispatch-kf sim serve`: runs the simulated cluster until interrupted, with GPU
//! nodes and the Trainer's `torch-distributed` runtime, and writes a kubeconfig for it.
//! A test double and a playground, never a production cluster.

use std::sync::Arc;

use dispatch_core::{Error, Result};
use dispatch_kf_model::keys;
use dispatch_kf_sim::{Releases, Sim, SimOptions};

use crate::connect::block_on;
use crate::console;

/// `sim`: the simulated cluster.
#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: SimCommand,
}

#[derive(clap::Subcommand)]
enum SimCommand {
    /// Serve the simulated cluster until interrupted.
    #[command(
        after_help = "Example:\n  dispatch-kf sim serve --kubeconfig-out /tmp/sim.kubeconfig\n  \
        kubectl --kubeconfig /tmp/sim.kubeconfig get clustertrainingruntimes"
    )]
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Where to write the kubeconfig (the admin user); standard output when absent.
    #[arg(long, value_name = "FILE")]
    kubeconfig_out: Option<String>,
    /// How many GPU nodes.
    #[arg(long, default_value_t = 4)]
    nodes: u32,
    /// GPUs (`nvidia.com/gpu`) per node.
    #[arg(long, default_value_t = 8)]
    gpus: u32,
    /// Serve Kueue's API and install Kueue's objects: a ResourceFlavor, a ClusterQueue
    /// with GPU quota whose admission checks list `dispatch-readmission`, that
    /// AdmissionCheck, and the LocalQueue `team-a` in the default namespace. Without
    /// it, Kueue's API is not served, as on a cluster without Kueue.
    #[arg(long)]
    kueue: bool,
    /// With --kueue, also run the readmission gate controller (dispatch-kf-gate)
    /// in-process, so Kueue-mode settings pass preflight at once.
    #[arg(long, requires = "kueue")]
    gate: bool,
    /// Play Kueue v0.17 or v0.18 as released, without the AdmissionGatedBy feature
    /// gate: Workloads are made without the start gate, which the adapter refuses.
    #[arg(long, requires = "kueue")]
    kueue_without_admission_gated_by: bool,
    /// Play Trainer v2.1: the TrainJob has no spec.runtimePatches (not in the served
    /// schema, dropped from writes), which the adapter refuses.
    #[arg(long)]
    trainer_without_runtime_patches: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    match args.command {
        SimCommand::Serve(serve) => block_on(serve.run()),
    }
}

impl ServeArgs {
    async fn run(self) -> Result<()> {
        let options = self.options();
        let failed = |e: &dyn std::fmt::Display| {
            Error::unreachable(format!("the simulated cluster failed: {e}"))
        };
        let sim = Sim::start_demo(options, self.nodes, self.gpus).await.map_err(|e| failed(&e))?;
        if self.kueue {
            sim.install_kueue(self.nodes * self.gpus).map_err(|e| failed(&e))?;
        }
        let kubeconfig = sim.kubeconfig_yaml("admin").map_err(|e| failed(&e))?;
        match &self.kubeconfig_out {
            Some(path) => {
                crate::private_file::write_own(std::path::Path::new(path), kubeconfig.as_bytes())
                    .map_err(|e| Error::invalid(format!("cannot write {path}: {e} (it is written 0600, never through a symbolic link)")))?;
                eprintln!("dispatch-kf: simulated cluster at {}; kubeconfig in {path}", sim.url());
            }
            None => crate::output::write_stdout(kubeconfig.as_bytes())?,
        }
        let gate = match self.gate {
            true => Some(start_gate(&sim).await?),
            false => None,
        };
        // Said once the cluster is whole: with --gate, once the gate leads.
        eprintln!("dispatch-kf: serving until interrupted (Ctrl-C); type help for the console");
        let sim = Arc::new(sim);
        let clock = sim.follow_wall_clock();
        let console = tokio::spawn(read_console(sim.clone()));
        let stopped = tokio::signal::ctrl_c().await;
        clock.abort();
        console.abort();
        if let Some(gate) = gate {
            gate.shut_down().await;
        }
        stopped.map_err(|e| Error::unreachable(format!("cannot wait for Ctrl-C: {e}")))
    }
}

impl ServeArgs {
    /// The simulated cluster's options: its clock at the wall clock's now, HTTPS with
    /// anonymous requests refused (the defaults: kubectl sends the kubeconfig's token
    /// over HTTPS), and Kueue's API served only with `--kueue`, so that a plain-mode
    /// preflight does not wait `timeouts.workload` to prove that a Kueue nobody asked
    /// for leaves its TrainJobs alone.
    fn options(&self) -> SimOptions {
        let unserved =
            if self.kueue { Vec::new() } else { vec![keys::KUEUE_API_VERSION.to_owned()] };
        let releases = Releases {
            trainer_runtime_patches: !self.trainer_without_runtime_patches,
            kueue_admission_gated_by: !self.kueue_without_admission_gated_by,
        };
        SimOptions { start: jiff::Timestamp::now(), unserved, releases, ..SimOptions::default() }
    }
}

/// The kube configuration of the simulated cluster's administrator, for a client in
/// this process.
pub(crate) async fn admin_config(sim: &Sim) -> Result<kube::Config> {
    let failed = |e: &dyn std::fmt::Display| {
        Error::unreachable(format!("the simulated cluster's kubeconfig does not load: {e}"))
    };
    let yaml = sim.kubeconfig_yaml("admin").map_err(|e| failed(&e))?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).map_err(|e| failed(&e))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| failed(&e))
}

/// Starts the readmission gate controller in-process against a simulated cluster, on
/// its virtual clock, with the Lease `dispatch-system/dispatch-readmission-gate` that
/// Kueue-mode settings name by default. Returns once it leads (it holds the Lease
/// within one try), or after [`GATE_LEADS_WITHIN`], saying so.
pub(crate) async fn start_gate(sim: &Sim) -> Result<dispatch_kf_gate::Running> {
    let client = kube::Client::try_from(admin_config(sim).await?)
        .map_err(|e| Error::unreachable(format!("cannot start the readmission gate: {e}")))?;
    let mut options = dispatch_kf_gate::Options::new(
        "dispatch-system",
        "dispatch-readmission-gate",
        "dispatch-kf-gate-embedded",
    );
    options.clock = Arc::new(sim.clock());
    options.retry_period = std::time::Duration::from_millis(200);
    let telemetry = options.telemetry.clone();
    let gate = dispatch_kf_gate::spawn(client, options);
    let leads = async {
        while telemetry.role() != dispatch_kf_gate::telemetry::Role::Leading {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    if tokio::time::timeout(GATE_LEADS_WITHIN, leads).await.is_err() {
        eprintln!(
            "dispatch-kf: the readmission gate does not lead yet after {GATE_LEADS_WITHIN:?}; Kueue-mode writes are refused until it does"
        );
    }
    Ok(gate)
}

/// How long `sim serve --gate` waits for its gate to lead before it says it serves.
const GATE_LEADS_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads console commands from standard input until it closes.
async fn read_console(sim: Arc<Sim>) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match console::parse(&line) {
            Ok(Some(command)) => eprintln!("{}", console::run(&sim, command)),
            Ok(None) => {}
            Err(e) => eprintln!("{}", e.message()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(kueue: bool) -> ServeArgs {
        ServeArgs {
            kubeconfig_out: None,
            nodes: 1,
            gpus: 8,
            kueue,
            gate: false,
            kueue_without_admission_gated_by: false,
            trainer_without_runtime_patches: false,
        }
    }

    #[test]
    fn kueues_api_is_served_only_with_kueue() {
        assert_eq!(serve(false).options().unserved, [keys::KUEUE_API_VERSION]);
        assert!(serve(true).options().unserved.is_empty());
    }

    #[test]
    fn the_releases_played_are_the_newest_unless_told() {
        assert_eq!(serve(true).options().releases, Releases::default());
        let old = ServeArgs {
            kueue_without_admission_gated_by: true,
            trainer_without_runtime_patches: true,
            ..serve(true)
        };
        let played = Releases { trainer_runtime_patches: false, kueue_admission_gated_by: false };
        assert_eq!(old.options().releases, played);
    }

    #[test]
    fn the_kueue_setup_names_the_gates_controller_and_takes_the_quota() {
        let setup = dispatch_kf_sim::kueue_setup(16);
        let check = setup.iter().find(|o| o["kind"] == "AdmissionCheck").unwrap();
        assert_eq!(check["spec"]["controllerName"], dispatch_kf_model::keys::GATE_CONTROLLER_NAME);
        let queue = setup.iter().find(|o| o["kind"] == "ClusterQueue").unwrap();
        let quota =
            &queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"];
        assert_eq!(quota, "16");
    }
}
