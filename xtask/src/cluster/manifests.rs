//! What `cluster up` puts into the apiserver: upstream's CRDs and webhook
//! configurations read from the module files Go downloaded (never copied into the
//! repository), the kwok nodes, the Trainer's `torch-distributed` runtime and, in Kueue
//! mode, the queue objects `sim serve --kueue` installs.
//!
//! Upstream's webhook manifests name a Service in the cluster; here every controller runs
//! on localhost, so each webhook is pointed at `https://127.0.0.1:<port><path>` with the
//! cluster's CA, and the selectors upstream's kustomizations add are added the same way.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Which upstream files and webhook rules belong to a controller.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Upstream {
    /// The controller's command (`versions.rs`).
    pub(crate) command: &'static str,
    /// The CRD files, relative to the module's folder; a trailing `/` means every
    /// `.yaml` file in that folder but `kustomization.yaml`.
    pub(crate) crds: &'static str,
    /// The webhook manifest, relative to the module's folder.
    pub(crate) webhooks: &'static str,
    /// The API groups whose webhooks are kept (the others are for integrations that
    /// are off here, and would make every pod creation wait on this controller).
    pub(crate) groups: &'static [&'static str],
}

/// The three controllers, in the order they are started.
pub(crate) const JOBSET: Upstream = Upstream {
    command: "jobset",
    crds: "config/components/crd/bases/",
    webhooks: "config/components/webhook/manifests.yaml",
    groups: &["jobset.x-k8s.io", ""],
};
pub(crate) const TRAINER: Upstream = Upstream {
    command: "trainer-controller-manager",
    crds: "manifests/base/crds/",
    webhooks: "manifests/base/webhook/manifests.yaml",
    groups: &["trainer.kubeflow.org"],
};
pub(crate) const KUEUE: Upstream = Upstream {
    command: "kueue",
    crds: "config/components/crd/bases/",
    webhooks: "config/components/webhook/manifests.yaml",
    groups: &["kueue.x-k8s.io", "trainer.kubeflow.org"],
};

/// The Trainer's stock torch runtime, relative to its module's folder.
pub(crate) const TORCH_RUNTIME: &str = "manifests/base/runtimes/torch_distributed.yaml";

/// The Trainer's stock runtime made to meet dispatch's runtime requirements
/// (docs/runtime-requirements.md), as an operator would before pointing dispatch at it,
/// and as the sim's `torch-distributed` has it: each replicated job's Job gets
/// `backoffLimit: 0` and its pods `restartPolicy: Never`.
pub(crate) fn dispatch_ready(mut runtime: Value) -> Value {
    let jobs =
        runtime.pointer_mut("/spec/template/spec/replicatedJobs").and_then(Value::as_array_mut);
    for job in jobs.into_iter().flatten() {
        let spec = &mut job["template"]["spec"];
        spec["backoffLimit"] = json!(0);
        spec["template"]["spec"]["restartPolicy"] = json!("Never");
    }
    runtime
}

/// The label kwok selects the nodes it manages by; taking it off a node makes kwok let
/// go of it (its lease stops), as a node that stops heartbeating.
pub(crate) const KWOK_MANAGED: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

/// What every pod's `node` container prints, as kwok serves it through `pods/log`: a
/// file (relative to the project root) in the container runtime's log format, one
/// `<time> stdout F <line>` a line. The e2e suite reads it to know what Output returns.
pub(crate) const RANK_OUTPUT: &str = "fixtures/cluster/rank-output.log";

/// The CRD files of `upstream` in its module folder `dir`.
pub(crate) fn crd_files(dir: &Path, upstream: &Upstream) -> Result<Vec<PathBuf>, String> {
    let folder = dir.join(upstream.crds);
    let entries = std::fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    files.sort();
    Ok(files)
}

/// Every YAML document of a file, as JSON.
pub(crate) fn documents(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    documents_of(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The YAML documents of `text`, empty ones left out.
pub(crate) fn documents_of(text: &str) -> Result<Vec<Value>, String> {
    use serde::Deserialize;
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).map_err(|e| e.to_string())?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// Upstream's webhook configurations, pointed at the controller on localhost: renamed
/// after the controller (JobSet's and Kueue's are both called
/// `mutating-webhook-configuration` before kustomize prefixes them), only the webhooks
/// of `upstream.groups` kept, each calling `https://127.0.0.1:<port><path>`.
pub(crate) fn webhook_configurations(
    upstream: &Upstream,
    manifests: Vec<Value>,
    port: u16,
    ca_bundle: &str,
) -> Vec<Value> {
    let mut out = Vec::new();
    for mut config in manifests {
        let kind = config["kind"].as_str().unwrap_or_default().to_owned();
        let verb = if kind.starts_with("Mutating") { "mutating" } else { "validating" };
        config["metadata"] = json!({"name": format!("{}-{verb}", upstream.command)});
        let webhooks = config["webhooks"].as_array().cloned().unwrap_or_default();
        let kept: Vec<Value> = webhooks
            .into_iter()
            .filter(|w| groups_of(w).iter().all(|g| upstream.groups.contains(&g.as_str())))
            .map(|w| localhost_webhook(upstream, w, port, ca_bundle))
            .collect();
        if !kept.is_empty() {
            config["webhooks"] = Value::Array(kept);
            out.push(config);
        }
    }
    out
}

/// The strings under `key` (`apiGroups`, `resources`) of every rule of a webhook.
fn rule_strings(webhook: &Value, key: &str) -> Vec<String> {
    let rules = webhook["rules"].as_array().map(Vec::as_slice).unwrap_or_default();
    rules
        .iter()
        .flat_map(|r| r[key].as_array().cloned().unwrap_or_default())
        .filter_map(|g| g.as_str().map(str::to_owned))
        .collect()
}

fn groups_of(webhook: &Value) -> Vec<String> {
    rule_strings(webhook, "apiGroups")
}

/// One webhook calling the controller on localhost, with the selector upstream's
/// kustomization gives it: JobSet's pod webhooks see only a JobSet's pods; Kueue's job
/// webhooks skip `kube-system` and `kueue-system`.
fn localhost_webhook(upstream: &Upstream, mut webhook: Value, port: u16, ca_bundle: &str) -> Value {
    let path = webhook["clientConfig"]["service"]["path"].as_str().unwrap_or("/").to_owned();
    webhook["clientConfig"] =
        json!({"url": format!("https://127.0.0.1:{port}{path}"), "caBundle": ca_bundle});
    let pods = rule_strings(&webhook, "resources").iter().any(|r| r == "pods");
    if upstream.command == JOBSET.command && pods {
        webhook["objectSelector"] = json!({"matchExpressions": [
            {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}
        ]});
    }
    let jobs = groups_of(&webhook).iter().any(|g| g == "trainer.kubeflow.org");
    if upstream.command == KUEUE.command && jobs {
        webhook["namespaceSelector"] = json!({"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
             "values": ["kube-system", "kueue-system"]}
        ]});
    }
    webhook
}

/// A kwok node with `gpus` GPUs, managed by kwok through its label.
pub(crate) fn node(name: &str, gpus: u32) -> Value {
    let resources = json!({
        "cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti",
        "nvidia.com/gpu": gpus.to_string()
    });
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                KWOK_MANAGED.0: KWOK_MANAGED.1,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok"
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"}
        },
        "spec": {},
        "status": {"allocatable": resources, "capacity": resources}
    })
}

/// The Kueue objects `sim serve --kueue` installs too (`crates/dispatch-kf-sim/data/kueue-setup.json`),
/// with the ClusterQueue's GPU quota set.
pub(crate) fn kueue_setup(text: &str, quota: u32) -> Result<Vec<Value>, String> {
    let text = text.replace("\"$QUOTA\"", &format!("\"{quota}\""));
    serde_json::from_str(&text).map_err(|e| format!("kueue-setup.json: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook(path: &str, group: &str, resource: &str) -> Value {
        json!({
            "name": format!("{resource}.kb.io"),
            "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
            "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "resources": [resource]}]
        })
    }

    #[test]
    fn webhooks_call_localhost_with_the_ca_and_keep_only_their_groups() {
        let manifests = vec![json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [
                webhook("/mutate-trainer-kubeflow-org-v1alpha1-trainjob", "trainer.kubeflow.org", "trainjobs"),
                webhook("/mutate--v1-pod", "", "pods"),
            ]
        })];
        let out = webhook_configurations(&KUEUE, manifests, 9443, "Q0E=");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["metadata"]["name"], "kueue-mutating");
        let hooks = out[0]["webhooks"].as_array().unwrap();
        assert_eq!(hooks.len(), 1, "the pod webhook is for an integration that is off");
        assert_eq!(
            hooks[0]["clientConfig"],
            json!({"url": "https://127.0.0.1:9443/mutate-trainer-kubeflow-org-v1alpha1-trainjob", "caBundle": "Q0E="})
        );
        assert_eq!(hooks[0]["namespaceSelector"]["matchExpressions"][0]["operator"], "NotIn");
    }

    #[test]
    fn jobsets_pod_webhooks_see_only_a_jobsets_pods() {
        let manifests = vec![json!({
            "kind": "ValidatingWebhookConfiguration",
            "webhooks": [webhook("/validate--v1-pod", "", "pods")]
        })];
        let out = webhook_configurations(&JOBSET, manifests, 1, "");
        assert_eq!(out[0]["metadata"]["name"], "jobset-validating");
        let selector = &out[0]["webhooks"][0]["objectSelector"]["matchExpressions"][0];
        assert_eq!(selector["key"], "jobset.sigs.k8s.io/jobset-name");
    }

    #[test]
    fn the_stock_runtime_is_made_to_meet_dispatchs_requirements() {
        let stock = json!({"spec": {"template": {"spec": {"replicatedJobs": [
            {"name": "node", "template": {"spec": {"template": {"spec": {"containers": []}}}}}
        ]}}}});
        let ready = dispatch_ready(stock);
        let job = &ready["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"];
        assert_eq!(job["backoffLimit"], 0);
        assert_eq!(job["template"]["spec"]["restartPolicy"], "Never");
        assert_eq!(job["template"]["spec"]["containers"], json!([]));
    }

    #[test]
    fn the_kueue_setup_takes_its_quota() {
        let text = r#"[{"spec": {"nominalQuota": "$QUOTA"}}]"#;
        assert_eq!(kueue_setup(text, 16).unwrap(), vec![json!({"spec": {"nominalQuota": "16"}})]);
    }
}
