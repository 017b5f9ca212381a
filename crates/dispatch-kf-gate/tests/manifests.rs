//! The kustomization in `deploy/`: every file it lists parses, holds the kinds the gate
//! needs, and agrees with itself and with the binary (probe paths and port, the
//! ServiceAccount the roles bind, the AdmissionCheck's controller); and, when the real
//! control plane of `cargo xtask cluster up` is running, the apiserver accepts it
//! (`kubectl apply --dry-run=server`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use dispatch_kf_model::keys;
use serde::Deserialize;
use serde_yaml_ng::Value;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// The files `kustomization.yaml` lists, in its order.
fn listed_files() -> Vec<String> {
    let text = std::fs::read_to_string(deploy_dir().join("kustomization.yaml")).unwrap();
    let kustomization: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(kustomization["kind"].as_str(), Some("Kustomization"));
    let resources = kustomization["resources"].as_sequence().expect("a resources list");
    resources.iter().map(|r| r.as_str().expect("a file name").to_owned()).collect()
}

/// Every document of every listed file, with the file it came from.
fn documents() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for file in listed_files() {
        let text = std::fs::read_to_string(deploy_dir().join(&file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        for document in serde_yaml_ng::Deserializer::from_str(&text) {
            let value = Value::deserialize(document).unwrap_or_else(|e| panic!("{file}: {e}"));
            if !value.is_null() {
                out.push((file.clone(), value));
            }
        }
    }
    out
}

fn one<'a>(documents: &'a [(String, Value)], kind: &str) -> Vec<&'a Value> {
    documents.iter().map(|(_, d)| d).filter(|d| d["kind"].as_str() == Some(kind)).collect()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

fn namespace(object: &Value) -> &str {
    object["metadata"]["namespace"].as_str().unwrap_or("")
}

/// The value that follows `flag` in a container's args.
fn flag<'a>(args: &'a [Value], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a.as_str() == Some(flag))?;
    args.get(at + 1)?.as_str()
}

#[test]
fn every_listed_manifest_parses_into_the_kinds_the_gate_needs() {
    let documents = documents();
    let kinds: BTreeSet<&str> = documents.iter().filter_map(|(_, d)| d["kind"].as_str()).collect();
    let want = [
        "AdmissionCheck",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Namespace",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ];
    assert_eq!(kinds, want.into_iter().collect(), "the kinds of deploy/");
    for (file, document) in &documents {
        assert!(document["apiVersion"].as_str().is_some(), "{file}: an object without apiVersion");
        assert!(!name(document).is_empty(), "{file}: an object without a name");
    }
    // Every YAML file of deploy/ is listed, so none is left out of `apply -k`.
    let listed: BTreeSet<String> = listed_files().into_iter().collect();
    for entry in std::fs::read_dir(deploy_dir()).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file.ends_with(".yaml") && file != "kustomization.yaml" {
            assert!(listed.contains(&file), "{file} is not in kustomization.yaml");
        }
    }
}

#[test]
fn the_deployment_probes_the_port_the_gate_listens_on() {
    let documents = documents();
    let deployment = one(&documents, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let args = container["args"].as_sequence().expect("args");
    let address: std::net::SocketAddr =
        flag(args, "--probe-address").expect("--probe-address").parse().unwrap();
    let ports = container["ports"].as_sequence().expect("ports");
    let port = ports
        .iter()
        .find(|p| p["containerPort"].as_u64() == Some(u64::from(address.port())))
        .expect("a containerPort on the probe address's port");
    let port_name = port["name"].as_str().expect("a named port");
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"].as_str(), Some(path), "{probe}");
        let target = &get["port"];
        assert!(
            target.as_str() == Some(port_name)
                || target.as_u64() == Some(u64::from(address.port())),
            "{probe} targets {target:?}, not the probe port"
        );
    }
    let lease_namespace = flag(args, "--lease-namespace").expect("--lease-namespace");
    assert_eq!(lease_namespace, namespace(deployment), "the Lease lives with the gate");
    let log_format = flag(args, "--log-format").unwrap_or("text");
    assert!(["text", "json"].contains(&log_format));
    // The Service that exposes /metrics selects the Deployment's pods on that port.
    let service = one(&documents, "Service")[0];
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (key, value) in service["spec"]["selector"].as_mapping().expect("a selector") {
        assert_eq!(&labels[key.as_str().unwrap()], value, "the Service selects the pods");
    }
    assert_eq!(service["spec"]["ports"][0]["targetPort"].as_str(), Some(port_name));
}

#[test]
fn the_service_account_the_roles_bind_is_the_deployment_s() {
    let documents = documents();
    let namespaces: Vec<&str> = one(&documents, "Namespace").into_iter().map(name).collect();
    let account = one(&documents, "ServiceAccount")[0];
    let deployment = one(&documents, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"].as_str(), Some(name(account)));
    for object in documents.iter().map(|(_, d)| d).filter(|d| !namespace(d).is_empty()) {
        assert!(
            namespaces.contains(&namespace(object)),
            "{} in an unlisted namespace",
            name(object)
        );
    }
    for (binding, role_kind) in [("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")] {
        let binding = one(&documents, binding)[0];
        let role = &binding["roleRef"];
        assert_eq!(role["kind"].as_str(), Some(role_kind));
        let roles: Vec<&str> = one(&documents, role_kind).into_iter().map(name).collect();
        assert!(roles.contains(&role["name"].as_str().unwrap()), "{role:?} is not defined");
        let subject = &binding["subjects"][0];
        assert_eq!(subject["kind"].as_str(), Some("ServiceAccount"));
        assert_eq!(subject["name"].as_str(), Some(name(account)));
        assert_eq!(subject["namespace"].as_str(), Some(namespace(account)));
    }
    // The Lease role lives where the Lease does, and lets the gate campaign.
    let lease_role = one(&documents, "Role")[0];
    assert_eq!(namespace(lease_role), namespace(deployment));
    let rule = &lease_role["rules"][0];
    assert_eq!(rule["resources"][0].as_str(), Some("leases"));
    let verbs: BTreeSet<&str> =
        rule["verbs"].as_sequence().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(["get", "create", "update"].iter().all(|v| verbs.contains(v)), "{verbs:?}");
    let check = one(&documents, "AdmissionCheck")[0];
    assert_eq!(check["apiVersion"].as_str(), Some(keys::KUEUE_API_VERSION));
    assert_eq!(check["spec"]["controllerName"].as_str(), Some(keys::GATE_CONTROLLER_NAME));
}

/// The real control plane's admin kubeconfig, when it exists and its apiserver answers
/// `/readyz`; otherwise why not.
fn real_control_plane() -> Result<PathBuf, String> {
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    let kubeconfig = PathBuf::from(home).join(".cache/dispatch-kf/cluster/run/admin.kubeconfig");
    if !kubeconfig.exists() {
        return Err(format!("{} does not exist", kubeconfig.display()));
    }
    let ready = kubectl(&kubeconfig, &["get", "--raw", "/readyz"]);
    match ready {
        Ok(_) => Ok(kubeconfig),
        Err(e) => Err(format!("the apiserver of {} is not ready: {e}", kubeconfig.display())),
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=20s")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run kubectl: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)))
    }
}

#[test]
fn the_real_apiserver_accepts_the_kustomization_in_a_server_side_dry_run() {
    let kubeconfig = match real_control_plane() {
        Ok(k) => k,
        Err(why) => {
            println!("skipped: the server-side dry run needs `cargo xtask cluster up`: {why}");
            return;
        }
    };
    // A dry run creates nothing, so the namespaced objects need the namespace to exist,
    // and the AdmissionCheck needs Kueue's CRDs; without them, the files that can be
    // checked are.
    let documents = documents();
    let namespace = name(one(&documents, "Namespace")[0]).to_owned();
    let has_namespace = kubectl(&kubeconfig, &["get", "namespace", &namespace]).is_ok();
    let has_kueue = kubectl(&kubeconfig, &["get", "--raw", "/apis/kueue.x-k8s.io/v1beta2"]).is_ok();
    let dir = deploy_dir();
    if has_namespace && has_kueue {
        let out = kubectl(&kubeconfig, &["apply", "--dry-run=server", "-k", dir.to_str().unwrap()]);
        let out = out.unwrap_or_else(|e| panic!("kubectl apply --dry-run=server -k failed:\n{e}"));
        println!("{out}");
        assert_eq!(out.matches("(server dry run)").count(), documents.len(), "{out}");
        return;
    }
    println!(
        "the namespace {namespace} exists: {has_namespace}; Kueue is installed: {has_kueue}; \
         dry-running the files that need neither"
    );
    let mut checked = 0;
    for (file, document) in &documents {
        let needs_namespace = !self::namespace(document).is_empty();
        let needs_kueue = document["apiVersion"].as_str().is_some_and(|v| v.starts_with("kueue."));
        if (needs_namespace && !has_namespace) || (needs_kueue && !has_kueue) {
            println!(
                "skipped {file}: {} {}",
                document["kind"].as_str().unwrap_or(""),
                name(document)
            );
            continue;
        }
        let json = serde_json::to_string(document).unwrap();
        let applied = apply_stdin(&kubeconfig, &json)
            .unwrap_or_else(|e| panic!("{file}: kubectl apply --dry-run=server failed:\n{e}"));
        println!("{applied}");
        checked += 1;
    }
    assert!(checked > 0, "nothing could be dry-run");
}

fn apply_stdin(kubeconfig: &Path, json: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--request-timeout=20s", "apply", "--dry-run=server", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run kubectl: {e}"))?;
    child.stdin.take().unwrap().write_all(json.as_bytes()).map_err(|e| e.to_string())?;
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}
