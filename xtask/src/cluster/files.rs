//! The configuration files the control plane's processes read: kwok's stages and
//! logs, and each controller's `Configuration`.

use std::path::Path;

use serde_json::json;

use super::components::path;
use super::manifests::{self, Upstream};

/// kwok's configuration: our stages (`xtask/cluster/kwok-stages.yaml`), and a
/// `ClusterLogs` that serves every pod's `node` container's output from
/// `fixtures/cluster/rank-output.log`, a file in the container runtime's (CRI) log format,
/// which kwok reads by absolute path.
pub(super) fn kwok_config() -> Result<String, String> {
    let root = crate::run::project_root();
    let stages = root.join("xtask/cluster/kwok-stages.yaml");
    let stages =
        std::fs::read_to_string(&stages).map_err(|e| format!("{}: {e}", stages.display()))?;
    let logs = json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
        "metadata": {"name": "rank-output"},
        "spec": {"logs": [{
            "containers": ["node"],
            "logsFile": path(&root.join(manifests::RANK_OUTPUT)),
            "follow": false
        }]}
    });
    // JSON is YAML: the document is appended as it is.
    Ok(format!("{stages}---\n{logs}\n"))
}

/// A controller's configuration file: its webhook on `webhook_port` serving the files of
/// `certs`, health on `health`, no metrics, no leader election, no certificate
/// management of its own (it would make certificates for in-cluster Service names).
/// The fields used are the same in every version of the stacks table.
pub(super) fn controller_config(
    upstream: &Upstream,
    webhook_port: u16,
    health: &str,
    certs: &Path,
    jobset_gates: &[&str],
) -> String {
    let certs = path(certs);
    // Only where there are some: a JobSet without these gates may not know the field.
    let gates = match jobset_gates {
        [] => String::new(),
        gates => {
            let on: Vec<String> = gates.iter().map(|g| format!("{g}: true")).collect();
            format!("featureGates: {{{}}}\n", on.join(", "))
        }
    };
    match upstream.command {
        "jobset" => format!(
            "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n\
             leaderElection: {{leaderElect: false}}\ninternalCertManagement: {{enable: false}}\n\
             webhook: {{port: {webhook_port}, host: 127.0.0.1, certDir: {certs}}}\n\
             metrics: {{bindAddress: \"0\", certDir: {certs}}}\nhealth: {{healthProbeBindAddress: \"{health}\"}}\n\
             {gates}"
        ),
        "trainer-controller-manager" => format!(
            "apiVersion: config.trainer.kubeflow.org/v1alpha1\nkind: Configuration\n\
             leaderElection: {{leaderElect: false}}\ncertManagement: {{enable: false}}\n\
             webhook: {{port: {webhook_port}, host: 127.0.0.1}}\n\
             metrics: {{bindAddress: \"0\"}}\n\
             health: {{healthProbeBindAddress: \"{health}\", readinessEndpointName: readyz, livenessEndpointName: healthz}}\n"
        ),
        _ => format!(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kueue-system\n\
             leaderElection: {{leaderElect: false}}\ninternalCertManagement: {{enable: false}}\n\
             webhook: {{port: {webhook_port}, host: 127.0.0.1, certDir: {certs}}}\n\
             metrics: {{bindAddress: \"0\"}}\nhealth: {{healthProbeBindAddress: \"{health}\"}}\n\
             manageJobsWithoutQueueName: false\n\
             integrations: {{frameworks: [\"trainer.kubeflow.org/trainjob\"]}}\n"
        ),
    }
}
