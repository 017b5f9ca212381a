//! `dispatch-kf sim serve`: runs the simulated cluster until interrupted, with GPU
//! nodes and the Trainer's `torch-distributed` runtime, and writes a kubeconfig for it.
//! A test double and a playground, never a production cluster.

use dispatch_core::{Error, Result};
use dispatch_kf_sim::{Sim, SimOptions};
use serde_json::json;

use crate::connect::block_on;

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
    /// Also install Kueue's objects: a ClusterQueue with GPU quota whose admission
    /// checks list `dispatch-readmission`, that AdmissionCheck, and the LocalQueue
    /// `team-a` in the default namespace.
    #[arg(long)]
    kueue: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    match args.command {
        SimCommand::Serve(serve) => block_on(serve.run()),
    }
}

impl ServeArgs {
    async fn run(self) -> Result<()> {
        let options = SimOptions {
            start: jiff::Timestamp::now(),
            // kubectl sends no token over plain http: let it in as admin.
            anonymous: Some("admin".to_owned()),
            ..SimOptions::default()
        };
        let failed = |e: &dyn std::fmt::Display| {
            Error::unreachable(format!("the simulated cluster failed: {e}"))
        };
        let sim = Sim::start_demo(options, self.nodes, self.gpus).await.map_err(|e| failed(&e))?;
        if self.kueue {
            install_kueue(&sim, self.nodes * self.gpus).map_err(|e| failed(&e))?;
        }
        let kubeconfig = sim.kubeconfig_yaml("admin").map_err(|e| failed(&e))?;
        match &self.kubeconfig_out {
            Some(path) => {
                std::fs::write(path, &kubeconfig)
                    .map_err(|e| Error::invalid(format!("cannot write {path}: {e}")))?;
                eprintln!("dispatch-kf: simulated cluster at {}; kubeconfig in {path}", sim.url());
            }
            None => print!("{kubeconfig}"),
        }
        eprintln!("dispatch-kf: serving until interrupted (Ctrl-C)");
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| Error::unreachable(format!("cannot wait for Ctrl-C: {e}")))?;
        Ok(())
    }
}

/// The Kueue objects the readmission gate needs (spec/cli.md).
fn install_kueue(sim: &Sim, quota: u32) -> std::result::Result<(), dispatch_kf_sim::SimError> {
    sim.apply(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "gpu"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "default-flavor",
                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": quota.to_string()}]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "dispatch-readmission"}]}
        }
    }))?;
    sim.apply(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "dispatch-readmission"},
        "spec": {"controllerName": dispatch_kf_model::keys::GATE_CONTROLLER_NAME}
    }))?;
    sim.apply(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "team-a", "namespace": "default"}, "spec": {"clusterQueue": "gpu"}
    }))?;
    Ok(())
}
