//! The checks of a controller's kustomization (`crates/<controller>/deploy/`) that hold
//! for every controller of dispatch: every file is listed and parses; the Deployment
//! probes the port its binary listens on and its Service exposes it; the roles bind the
//! Deployment's ServiceAccount and the Lease role lets it campaign; and, when the real
//! control plane of `cargo xtask cluster up` runs, the apiserver accepts the whole
//! (`kubectl apply --dry-run=server`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_yaml_ng::Value;

/// A kustomization's documents, each with the file it came from.
pub struct Kustomization {
    dir: PathBuf,
    /// Every document of every listed file, in the kustomization's order.
    pub documents: Vec<(String, Value)>,
}

/// An object's name.
pub fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

/// An object's namespace, or `""`.
pub fn namespace(object: &Value) -> &str {
    object["metadata"]["namespace"].as_str().unwrap_or("")
}

/// The value that follows `flag` in a container's args.
pub fn flag<'a>(args: &'a [Value], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a.as_str() == Some(flag))?;
    args.get(at + 1)?.as_str()
}

impl Kustomization {
    /// Reads the kustomization of `dir`; fails the test when a file does not parse or
    /// a YAML file of the folder is not listed (it would be left out of `apply -k`).
    pub fn read(dir: &Path) -> Kustomization {
        let text = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
        let kustomization: Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(kustomization["kind"].as_str(), Some("Kustomization"));
        let resources = kustomization["resources"].as_sequence().expect("a resources list");
        let files: Vec<String> =
            resources.iter().map(|r| r.as_str().expect("a file name").to_owned()).collect();
        let mut documents = Vec::new();
        for file in &files {
            let text =
                std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            for document in serde_yaml_ng::Deserializer::from_str(&text) {
                let value = Value::deserialize(document).unwrap_or_else(|e| panic!("{file}: {e}"));
                if !value.is_null() {
                    assert!(
                        value["apiVersion"].as_str().is_some(),
                        "{file}: an object without apiVersion"
                    );
                    assert!(!name(&value).is_empty(), "{file}: an object without a name");
                    documents.push((file.clone(), value));
                }
            }
        }
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.ends_with(".yaml") && file != "kustomization.yaml" {
                assert!(files.contains(&file), "{file} is not in kustomization.yaml");
            }
        }
        Kustomization { dir: dir.to_owned(), documents }
    }

    /// The kinds of its documents.
    pub fn kinds(&self) -> BTreeSet<&str> {
        self.documents.iter().filter_map(|(_, d)| d["kind"].as_str()).collect()
    }

    /// Its documents of `kind`.
    pub fn all(&self, kind: &str) -> Vec<&Value> {
        self.documents.iter().map(|(_, d)| d).filter(|d| d["kind"].as_str() == Some(kind)).collect()
    }

    /// Its one document of `kind`.
    pub fn one(&self, kind: &str) -> &Value {
        let all = self.all(kind);
        assert_eq!(all.len(), 1, "one {kind}");
        all[0]
    }

    /// The Deployment's container probes `/healthz` and `/readyz` on the port of its
    /// `--probe-address`, its Lease lives in its namespace, its log format is one the
    /// binary takes, and the Service selects its pods on that port. Its args.
    pub fn check_probes(&self) -> Vec<Value> {
        let deployment = self.one("Deployment");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let args = container["args"].as_sequence().expect("args").clone();
        let address: std::net::SocketAddr =
            flag(&args, "--probe-address").expect("--probe-address").parse().unwrap();
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
        let lease_namespace = flag(&args, "--lease-namespace").expect("--lease-namespace");
        assert_eq!(lease_namespace, namespace(deployment), "the Lease lives with the Deployment");
        let log_format = flag(&args, "--log-format").unwrap_or("text");
        assert!(["text", "json"].contains(&log_format));
        let service = self.one("Service");
        let labels = &deployment["spec"]["template"]["metadata"]["labels"];
        for (key, value) in service["spec"]["selector"].as_mapping().expect("a selector") {
            assert_eq!(&labels[key.as_str().unwrap()], value, "the Service selects the pods");
        }
        assert_eq!(service["spec"]["ports"][0]["targetPort"].as_str(), Some(port_name));
        args
    }

    /// Every namespaced object is in a namespace the kustomization makes; each binding
    /// binds a role it defines to the Deployment's ServiceAccount; the Lease role, in
    /// the Deployment's namespace, lets it campaign.
    pub fn check_account(&self) {
        let namespaces: Vec<&str> = self.all("Namespace").into_iter().map(name).collect();
        let account = self.one("ServiceAccount");
        let deployment = self.one("Deployment");
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"].as_str(), Some(name(account)));
        for object in self.documents.iter().map(|(_, d)| d).filter(|d| !namespace(d).is_empty()) {
            assert!(
                namespaces.contains(&namespace(object)),
                "{} in an unlisted namespace",
                name(object)
            );
        }
        for (binding, role_kind) in [("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")]
        {
            let binding = self.one(binding);
            let role = &binding["roleRef"];
            assert_eq!(role["kind"].as_str(), Some(role_kind));
            let roles: Vec<&str> = self.all(role_kind).into_iter().map(name).collect();
            assert!(roles.contains(&role["name"].as_str().unwrap()), "{role:?} is not defined");
            let subject = &binding["subjects"][0];
            assert_eq!(subject["kind"].as_str(), Some("ServiceAccount"));
            assert_eq!(subject["name"].as_str(), Some(name(account)));
            assert_eq!(subject["namespace"].as_str(), Some(namespace(account)));
        }
        let lease_role = self.one("Role");
        assert_eq!(namespace(lease_role), namespace(deployment));
        let rule = &lease_role["rules"][0];
        assert_eq!(rule["resources"][0].as_str(), Some("leases"));
        assert_eq!(verbs(rule), ["create", "get", "update"].into_iter().collect());
    }

    /// The ClusterRole's rules, as (API group, resource) to verbs.
    pub fn cluster_rules(&self) -> Vec<((String, String), BTreeSet<String>)> {
        let role = self.one("ClusterRole");
        let mut out = Vec::new();
        for rule in role["rules"].as_sequence().expect("rules") {
            let verbs: BTreeSet<String> = verbs(rule).into_iter().map(str::to_owned).collect();
            for group in rule["apiGroups"].as_sequence().expect("apiGroups") {
                for resource in rule["resources"].as_sequence().expect("resources") {
                    let key =
                        (group.as_str().unwrap().to_owned(), resource.as_str().unwrap().to_owned());
                    out.push((key, verbs.clone()));
                }
            }
        }
        out
    }

    /// When the real control plane runs: `kubectl apply --dry-run=server` of the whole
    /// kustomization, or, when its namespace or a CRD a document needs (`needs` says
    /// which API group needs what) is not there, of each document that can be checked.
    /// Otherwise prints why it is skipped.
    pub fn dry_run_on_the_real_control_plane(&self) {
        let kubeconfig = match real_control_plane() {
            Ok(k) => k,
            Err(why) => {
                println!("skipped: the server-side dry run needs `cargo xtask cluster up`: {why}");
                return;
            }
        };
        let namespace_name = name(self.one("Namespace")).to_owned();
        let has_namespace = kubectl(&kubeconfig, &["get", "namespace", &namespace_name]).is_ok();
        let served = |api_version: &str| {
            !api_version.contains('.')
                || kubectl(&kubeconfig, &["get", "--raw", &format!("/apis/{api_version}")]).is_ok()
        };
        let checkable = |document: &Value| {
            let api_version = document["apiVersion"].as_str().unwrap_or("");
            (namespace(document).is_empty() || has_namespace) && served(api_version)
        };
        if self.documents.iter().all(|(_, d)| checkable(d)) {
            let dir = self.dir.to_str().unwrap();
            let out = kubectl(&kubeconfig, &["apply", "--dry-run=server", "-k", dir]);
            let out =
                out.unwrap_or_else(|e| panic!("kubectl apply --dry-run=server -k failed:\n{e}"));
            println!("{out}");
            assert_eq!(out.matches("(server dry run)").count(), self.documents.len(), "{out}");
            return;
        }
        let mut checked = 0;
        for (file, document) in &self.documents {
            if !checkable(document) {
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
}

fn verbs(rule: &Value) -> BTreeSet<&str> {
    rule["verbs"].as_sequence().expect("verbs").iter().filter_map(Value::as_str).collect()
}

/// The real control plane's admin kubeconfig, when it exists and its apiserver answers
/// `/readyz`; otherwise why not.
fn real_control_plane() -> Result<PathBuf, String> {
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    let kubeconfig = PathBuf::from(home).join(".cache/dispatch-kf/cluster/run/admin.kubeconfig");
    if !kubeconfig.exists() {
        return Err(format!("{} does not exist", kubeconfig.display()));
    }
    match kubectl(&kubeconfig, &["get", "--raw", "/readyz"]) {
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
