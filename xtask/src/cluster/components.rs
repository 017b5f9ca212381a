//! Starting the control plane, component by component, each waited for before the next:
//! the one place that holds their ports and flags (the stack's own after the common
//! ones); `files.rs` writes their configuration files.
//!
//! Timings are shortened so a node loss shows within a minute: kwok renews node leases
//! every 2 s, the node lifecycle controller calls a node lost after 10 s without one, and
//! pods tolerate an unreachable node for 10 s before the taint manager evicts them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::files::{controller_config, kueue_shipped_tuning, kwok_config, path};
use super::manifests::{self, JOBSET, KUEUE, TRAINER, Upstream};
use super::pki::Pki;
use super::process::{self, Ready};
use super::versions::{COMMON_KUEUE_FEATURE_GATES, Stack};
use super::{Options, build};

/// The admin kubeconfig's file name in the run folder.
pub(crate) const KUBECONFIG_NAME: &str = "admin.kubeconfig";

/// Every port the control plane listens on, all on 127.0.0.1.
mod port {
    pub(super) const ETCD: u16 = 23790;
    pub(super) const ETCD_PEER: u16 = 23800;
    pub(super) const APISERVER: u16 = 26443;
    pub(super) const CONTROLLER_MANAGER: u16 = 20257;
    pub(super) const SCHEDULER: u16 = 20259;
    pub(super) const KWOK: u16 = 20250;
    pub(super) const JOBSET_WEBHOOK: u16 = 29443;
    pub(super) const JOBSET_HEALTH: u16 = 28081;
    pub(super) const TRAINER_WEBHOOK: u16 = 29444;
    pub(super) const TRAINER_HEALTH: u16 = 28082;
    pub(super) const KUEUE_WEBHOOK: u16 = 29445;
    pub(super) const KUEUE_HEALTH: u16 = 28083;
}

/// How long one component may take to become ready.
const PATIENCE: Duration = Duration::from_secs(120);

/// Kueue reads its metrics certificate from this fixed path when its own certificate
/// management is off (`cmd/kueue/main.go`); nothing else of the cluster is outside the
/// run folder.
const KUEUE_METRICS_CERTS: &str = "/etc/kueue/metrics/certs";

/// Kills the control plane's process `name` if it runs, starts it again as it was
/// first started, and waits until it is ready: what a crash and its supervisor's
/// restart do to a component. Returns its new pid.
pub(crate) fn restart(dir: &Path, name: &str) -> Result<u32, String> {
    let recipe = process::recipe(dir, name)?;
    if let Ok(old) = process::signal_named(dir, name, "KILL") {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while process::alive(old) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let stack = super::running_stack()?;
    let plane = Plane {
        dir,
        pki: Pki { dir: dir.join("pki") },
        kubeconfig: dir.join(KUBECONFIG_NAME),
        stack,
    };
    // As a kubelet would, start it again when it exits at once (its port may not be
    // free yet in the moment after the kill).
    let mut tries = 0;
    loop {
        let pid = process::respawn(dir, name)?;
        match plane.wait_ready(name, pid, &recipe.ready) {
            Ok(()) => return Ok(pid),
            Err(_) if !process::alive(pid) && tries < 10 => tries += 1,
            Err(e) => return Err(e),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

struct Plane<'a> {
    dir: &'a Path,
    pki: Pki,
    kubeconfig: PathBuf,
    stack: &'static Stack,
}

/// Starts everything `options` asks for in the empty folder `dir`; returns the admin
/// kubeconfig once every component is ready.
pub(crate) fn start_all(dir: &Path, options: &Options) -> Result<PathBuf, String> {
    let pki = Pki::make(&dir.join("pki"))?;
    let kubeconfig = dir.join(KUBECONFIG_NAME);
    std::fs::write(&kubeconfig, admin_kubeconfig(&pki)?).map_err(|e| format!("{e}"))?;
    let plane = Plane { dir, pki, kubeconfig: kubeconfig.clone(), stack: options.stack };
    plane.etcd()?;
    plane.apiserver()?;
    plane.controller_manager()?;
    plane.scheduler()?;
    plane.kwok(options)?;
    plane.controller(&JOBSET, port::JOBSET_WEBHOOK, port::JOBSET_HEALTH)?;
    plane.controller(&TRAINER, port::TRAINER_WEBHOOK, port::TRAINER_HEALTH)?;
    plane.torch_runtime()?;
    if options.kueue {
        plane.controller(&KUEUE, port::KUEUE_WEBHOOK, port::KUEUE_HEALTH)?;
        plane.kueue_setup(options.nodes * options.gpus)?;
    }
    Ok(kubeconfig)
}

fn admin_kubeconfig(pki: &Pki) -> Result<String, String> {
    let user = [
        ("client-certificate-data", Pki::base64_of(&pki.admin_crt())?),
        ("client-key-data", Pki::base64_of(&pki.admin_key())?),
    ];
    kubeconfig(pki, "admin", &user)
}

/// A kubeconfig for the ServiceAccount `name` with its `token`.
pub(crate) fn token_kubeconfig(pki: &Pki, name: &str, token: &str) -> Result<String, String> {
    kubeconfig(pki, name, &[("token", token.to_owned())])
}

/// A kubeconfig for the cluster, as the user `name` whose credentials are `user`.
fn kubeconfig(pki: &Pki, name: &str, user: &[(&str, String)]) -> Result<String, String> {
    let user: String = user.iter().map(|(key, value)| format!("    {key}: {value}\n")).collect();
    Ok(format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: dispatch-kf\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority-data: {}\nusers:\n- name: {name}\n  user:\n{user}contexts:\n- name: dispatch-kf\n  context: {{cluster: dispatch-kf, user: {name}, namespace: default}}\ncurrent-context: dispatch-kf\n",
        port::APISERVER,
        Pki::base64_of(&pki.ca_crt())?,
    ))
}

/// Runs kubectl with `kubeconfig`: its output, or why it failed.
pub(crate) fn kubectl(kubeconfig: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run kubectl (is it installed?): {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!("kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr)))
    }
}

impl Plane<'_> {
    fn command(&self, name: &str) -> Command {
        Command::new(build::binary(&self.stack.component(name)))
    }

    /// Starts `name` and waits until it is `ready`.
    fn start(&self, name: &str, command: Command, ready: Ready) -> Result<(), String> {
        eprintln!("xtask: starting {name}");
        let pid = process::spawn(self.dir, name, command, ready.clone())?;
        self.wait_ready(name, pid, &ready)
    }

    fn wait_ready(&self, name: &str, pid: u32, ready: &Ready) -> Result<(), String> {
        process::wait_ready(self.dir, name, pid, PATIENCE, || match ready {
            Ready::Answers(url) => self.answers(url),
            Ready::Running => true,
        })
    }

    /// A GET of a local HTTP(S) endpoint, as the admin for the apiserver, answering 200.
    fn answers(&self, url: &str) -> bool {
        let mut curl = Command::new("curl");
        curl.args([
            "-sf",
            "-o",
            "/dev/null",
            "--max-time",
            "5",
            "--cacert",
            path(&self.pki.ca_crt()),
        ]);
        if url.contains(&format!(":{}/", port::APISERVER)) {
            curl.args([
                "--cert",
                path(&self.pki.admin_crt()),
                "--key",
                path(&self.pki.admin_key()),
            ]);
        } else {
            curl.arg("-k");
        }
        curl.arg(url).status().is_ok_and(|s| s.success())
    }

    fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        kubectl(&self.kubeconfig, args)
    }

    /// `kubectl wait` for a condition, asked again while the objects are too new to have
    /// conditions at all (kubectl then fails at once instead of waiting).
    fn wait_for(&self, what: &[&str]) -> Result<(), String> {
        let deadline = std::time::Instant::now() + PATIENCE;
        let mut args = vec!["wait", "--timeout=60s"];
        args.extend_from_slice(what);
        loop {
            match self.kubectl(&args) {
                Ok(_) => return Ok(()),
                Err(e) if std::time::Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }

    /// Server-side applies files, as upstream's docs install their large CRDs.
    fn apply_files(&self, files: &[PathBuf]) -> Result<(), String> {
        let mut args = vec![
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=dispatch-kf-xtask",
        ];
        for file in files {
            args.extend(["-f", path(file)]);
        }
        self.kubectl(&args).map(|_| ())
    }

    /// Server-side applies objects, kept as `manifests/<name>.json` for a reader.
    fn apply(&self, name: &str, objects: &[Value]) -> Result<(), String> {
        let folder = self.dir.join("manifests");
        std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        let file = folder.join(format!("{name}.json"));
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        std::fs::write(&file, serde_json::to_vec_pretty(&list).expect("JSON"))
            .map_err(|e| format!("{}: {e}", file.display()))?;
        self.apply_files(&[file])
    }

    fn etcd(&self) -> Result<(), String> {
        let mut etcd = self.command("etcd");
        let client = format!("http://127.0.0.1:{}", port::ETCD);
        let peer = format!("http://127.0.0.1:{}", port::ETCD_PEER);
        etcd.args(["--name=node0", "--unsafe-no-fsync", "--auto-compaction-retention=1"])
            .arg(format!("--data-dir={}", path(&self.dir.join("etcd"))))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=node0={peer}"));
        self.start("etcd", etcd, Ready::Answers(format!("{client}/health")))
    }

    /// The apiserver's arguments: the common ones, then the stack's own.
    fn apiserver_args(&self) -> Vec<String> {
        let pki = &self.pki;
        let mut args = vec![
            format!("--etcd-servers=http://127.0.0.1:{}", port::ETCD),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={}", port::APISERVER),
            format!("--tls-cert-file={}", path(&pki.serving_crt())),
            format!("--tls-private-key-file={}", path(&pki.serving_key())),
            format!("--client-ca-file={}", path(&pki.ca_crt())),
            format!("--kubelet-client-certificate={}", path(&pki.admin_crt())),
            format!("--kubelet-client-key={}", path(&pki.admin_key())),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            format!("--service-account-key-file={}", path(&pki.sa_pub())),
            format!("--service-account-signing-key-file={}", path(&pki.sa_key())),
            "--authorization-mode=Node,RBAC".into(),
            "--service-cluster-ip-range=10.96.0.0/16".into(),
            "--allow-privileged=true".into(),
            "--enable-admission-plugins=NodeRestriction".into(),
            "--default-not-ready-toleration-seconds=10".into(),
            "--default-unreachable-toleration-seconds=10".into(),
        ];
        args.extend(self.stack.apiserver_flags.iter().map(|f| (*f).to_owned()));
        args
    }

    fn apiserver(&self) -> Result<(), String> {
        let mut apiserver = self.command("kube-apiserver");
        apiserver.args(self.apiserver_args());
        let url = format!("https://127.0.0.1:{}/readyz", port::APISERVER);
        self.start("kube-apiserver", apiserver, Ready::Answers(url))
    }

    fn controller_manager(&self) -> Result<(), String> {
        let mut kcm = self.command("kube-controller-manager");
        kcm.arg(format!("--kubeconfig={}", path(&self.kubeconfig)))
            .args([
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--use-service-account-credentials=false",
            ])
            .arg(format!("--secure-port={}", port::CONTROLLER_MANAGER))
            .arg(format!("--root-ca-file={}", path(&self.pki.ca_crt())))
            .arg(format!("--service-account-private-key-file={}", path(&self.pki.sa_key())))
            .args(["--node-monitor-period=1s", "--node-monitor-grace-period=10s"])
            .args(["--node-eviction-rate=10", "--secondary-node-eviction-rate=10"])
            .args(["--kube-api-qps=200", "--kube-api-burst=400"]);
        let url = format!("https://127.0.0.1:{}/healthz", port::CONTROLLER_MANAGER);
        self.start("kube-controller-manager", kcm, Ready::Answers(url))
    }

    fn scheduler(&self) -> Result<(), String> {
        let mut scheduler = self.command("kube-scheduler");
        scheduler
            .arg(format!("--kubeconfig={}", path(&self.kubeconfig)))
            .args(["--leader-elect=false", "--bind-address=127.0.0.1"])
            .arg(format!("--secure-port={}", port::SCHEDULER))
            .args(["--kube-api-qps=200", "--kube-api-burst=400"]);
        let url = format!("https://127.0.0.1:{}/healthz", port::SCHEDULER);
        self.start("kube-scheduler", scheduler, Ready::Answers(url))
    }

    /// kwok, then `options.nodes` nodes `kwok-node-<i>` that it makes Ready.
    fn kwok(&self, options: &Options) -> Result<(), String> {
        let config = self.dir.join("kwok.yaml");
        std::fs::write(&config, kwok_config()?)
            .map_err(|e| format!("{}: {e}", config.display()))?;
        let mut kwok = self.command("kwok");
        kwok.arg(format!("--kubeconfig={}", path(&self.kubeconfig)))
            .arg(format!("--config={}", path(&config)))
            .arg("--manage-all-nodes=false")
            .arg(format!(
                "--manage-nodes-with-label-selector={}={}",
                manifests::KWOK_MANAGED.0,
                manifests::KWOK_MANAGED.1
            ))
            .args(["--node-ip=127.0.0.1", "--node-name=localhost", "--cidr=10.0.0.0/16"])
            .arg(format!("--node-port={}", port::KWOK))
            .arg(format!("--server-address=127.0.0.1:{}", port::KWOK))
            .arg(format!("--tls-cert-file={}", path(&self.pki.serving_crt())))
            .arg(format!("--tls-private-key-file={}", path(&self.pki.serving_key())))
            .arg("--node-lease-duration-seconds=8");
        self.start("kwok", kwok, Ready::Running)?;
        let nodes: Vec<Value> = (0..options.nodes)
            .map(|i| manifests::node(&format!("kwok-node-{i}"), options.gpus))
            .collect();
        self.apply("nodes", &nodes)?;
        self.kubectl(&["wait", "--for=condition=Ready", "nodes", "--all", "--timeout=120s"])
            .map(|_| ())
    }

    /// One of the three controllers: its CRDs, its configuration, the process, and once
    /// it is ready its webhooks.
    fn controller(
        &self,
        upstream: &Upstream,
        webhook_port: u16,
        health_port: u16,
    ) -> Result<(), String> {
        let component = self.stack.component(upstream.command);
        let module = build::module_dir(&component)?;
        self.apply_files(&manifests::crd_files(&module, upstream)?)?;
        self.wait_for(&["--for=condition=Established", "crd", "--all"])?;
        let certs = self.dir.join(upstream.command).join("certs");
        self.serving_certs_in(&certs)?;
        let config = self.dir.join(upstream.command).join("config.yaml");
        let health = format!("127.0.0.1:{health_port}");
        let jobset_gates = super::versions::jobset_feature_gates(self.stack.jobset);
        let mut text = controller_config(upstream, webhook_port, &health, &certs, jobset_gates);
        if upstream.command == KUEUE.command {
            text.push_str(&kueue_shipped_tuning(&module)?);
        }
        std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
        if upstream.command == KUEUE.command {
            let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}});
            self.apply("kueue-namespace", &[namespace])?;
            self.serving_certs_in(Path::new(KUEUE_METRICS_CERTS))?;
        }
        let mut command = self.command(upstream.command);
        command
            .args(self.controller_args(upstream, &config, &health))
            .env("KUBECONFIG", &self.kubeconfig)
            // The Trainer serves its webhooks from controller-runtime's default folder,
            // under TMPDIR; it has no setting for it.
            .env("TMPDIR", self.dir.join(upstream.command));
        let trainer_certs =
            self.dir.join(upstream.command).join("k8s-webhook-server/serving-certs");
        self.serving_certs_in(&trainer_certs)?;
        let ready = format!("http://{health}/readyz");
        self.start(upstream.command, command, Ready::Answers(ready))?;
        let manifests = manifests::documents(&module.join(upstream.webhooks))?;
        let ca = Pki::base64_of(&self.pki.ca_crt())?;
        let configs = manifests::webhook_configurations(upstream, manifests, webhook_port, &ca);
        self.apply(&format!("{}-webhooks", upstream.command), &configs)
    }

    /// A controller's arguments: its configuration file, and the flags its
    /// configuration has no field for.
    fn controller_args(&self, upstream: &Upstream, config: &Path, health: &str) -> Vec<String> {
        let mut args = vec![format!("--config={}", path(config))];
        match upstream.command {
            "jobset" => args.extend([
                "--leader-elect=false".to_owned(),
                "--metrics-bind-address=0".to_owned(),
                format!("--health-probe-bind-address={health}"),
            ]),
            "kueue" => {
                let gates = [COMMON_KUEUE_FEATURE_GATES, self.stack.kueue_feature_gates].concat();
                args.push(format!("--feature-gates={}", gates.join(",")));
            }
            _ => {}
        }
        args
    }

    /// The serving certificate as `tls.crt` and `tls.key` in `dir`.
    fn serving_certs_in(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (from, to) in [(self.pki.serving_crt(), "tls.crt"), (self.pki.serving_key(), "tls.key")]
        {
            std::fs::copy(&from, dir.join(to)).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        Ok(())
    }

    /// The Trainer's stock `torch-distributed` ClusterTrainingRuntime, made to meet
    /// dispatch's runtime requirements.
    fn torch_runtime(&self) -> Result<(), String> {
        let module = build::module_dir(&self.stack.component(TRAINER.command))?;
        let stock = manifests::documents(&module.join(manifests::TORCH_RUNTIME))?;
        let ready: Vec<Value> = stock.into_iter().map(manifests::dispatch_ready).collect();
        self.apply("torch-distributed", &ready)
    }

    /// Kueue's queues and the readmission AdmissionCheck, as `sim serve --kueue` has them.
    fn kueue_setup(&self, quota: u32) -> Result<(), String> {
        let file = crate::run::project_root().join("crates/dispatch-kf-sim/data/kueue-setup.json");
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        self.apply("kueue-setup", &manifests::kueue_setup(&text, quota)?)
    }
}

#[cfg(test)]
mod tests;
