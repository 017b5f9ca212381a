//! The configuration files the control plane's processes read: kwok's stages and
//! logs, and each controller's `Configuration`.

use std::path::Path;

use serde_json::json;

use super::manifests::{self, Upstream};

/// A path of the cache folder as the text a command line or a configuration takes.
pub(crate) fn path(p: &Path) -> &str {
    p.to_str().expect("the cache path is UTF-8")
}

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

/// Where a Kueue release keeps the configuration its own deployment runs with.
const KUEUE_SHIPPED_CONFIG: &str = "config/components/manager/controller_manager_config.yaml";

/// The parts of Kueue's shipped configuration (in its module `module`) that set how
/// fast it works, as lines of our configuration: how many reconciles of each kind run
/// at once (`controller`) and the client's request rate (`clientConnection`). Without
/// them each of Kueue's controllers reconciles one object at a time, which no user's
/// Kueue does: v0.19 ships ten Workload reconciles at once, v0.17 five.
pub(super) fn kueue_shipped_tuning(module: &Path) -> Result<String, String> {
    let file = module.join(KUEUE_SHIPPED_CONFIG);
    let shipped = manifests::documents(&file)?.into_iter().next().unwrap_or_default();
    let mut lines = String::new();
    for key in ["controller", "clientConnection"] {
        let value = shipped.get(key).ok_or(format!("{}: no {key}", file.display()))?;
        // JSON is YAML: the value is written as it is.
        lines.push_str(&format!("{key}: {value}\n"));
    }
    Ok(lines)
}

/// A controller's configuration file: its webhook on `webhook_port` serving the files of
/// `certs`, health on `health`, no metrics, no leader election, no certificate
/// management of its own (it would make certificates for in-cluster Service names).
/// The fields used are the same in every version of the stacks table. Kueue's has
/// [`kueue_shipped_tuning`] appended.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A module folder holding `config` as Kueue's shipped configuration.
    fn module_with(name: &str, config: &str) -> std::path::PathBuf {
        let module =
            std::env::temp_dir().join(format!("xtask-files-{}-{name}", std::process::id()));
        let file = module.join(KUEUE_SHIPPED_CONFIG);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, config).unwrap();
        module
    }

    #[test]
    fn kueue_runs_with_the_concurrency_and_rates_its_release_ships() {
        let module = module_with(
            "shipped",
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n\
             controller:\n  groupKindConcurrency:\n    Workload.kueue.x-k8s.io: 10\n\
             clientConnection:\n  qps: 300\n  burst: 500\nwebhook:\n  port: 9443\n",
        );
        let lines = kueue_shipped_tuning(&module).unwrap();
        assert_eq!(
            lines,
            "controller: {\"groupKindConcurrency\":{\"Workload.kueue.x-k8s.io\":10}}\n\
             clientConnection: {\"burst\":500,\"qps\":300}\n"
        );
        let ours = controller_config(&manifests::KUEUE, 9443, "127.0.0.1:1", Path::new("/c"), &[]);
        let config = manifests::documents_of(&format!("{ours}{lines}")).unwrap();
        assert_eq!(config[0]["controller"]["groupKindConcurrency"]["Workload.kueue.x-k8s.io"], 10);
        assert_eq!(config[0]["webhook"]["port"], 9443, "ours, not the shipped one");
        std::fs::remove_dir_all(module).unwrap();
    }

    #[test]
    fn a_release_that_ships_no_tuning_is_an_error_not_a_slow_kueue() {
        let module = module_with("bare", "kind: Configuration\ncontroller: {}\n");
        let err = kueue_shipped_tuning(&module).unwrap_err();
        assert!(err.contains("no clientConnection"), "{err}");
        std::fs::remove_dir_all(module).unwrap();
    }
}
