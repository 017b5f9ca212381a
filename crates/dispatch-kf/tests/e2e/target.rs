//! The cluster the suite runs on: the simulated cluster by default, or a real one when
//! `DISPATCH_KF_E2E_KUBECONFIG` names a kubeconfig. The scenarios see the same thing
//! either way: a kubeconfig, a way to let time pass, and one helper that waits.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use dispatch_kf_model::keys;
use dispatch_kf_sim::{Propagation, Sim, SimOptions};
use serde_json::Value;

use super::suite::{NAMESPACE, Program};

/// The environment variable that points the suite at a real cluster.
pub(crate) const KUBECONFIG_VAR: &str = "DISPATCH_KF_E2E_KUBECONFIG";

/// How long one wait may last on a real cluster: long enough for two image pulls and
/// a JobSet's pods to start on a busy cluster.
const REAL_PATIENCE: Duration = Duration::from_secs(300);
/// How often a real cluster is asked again.
const REAL_POLL: Duration = Duration::from_secs(2);
/// Virtual time the simulated cluster moves on between two looks.
const SIM_STEP: Duration = Duration::from_secs(5);
/// Looks on the simulated cluster before a wait fails: ten virtual minutes.
const SIM_STEPS: u32 = 120;

/// Where the suite runs.
pub(crate) enum Target {
    /// The in-process simulated cluster, its clock moved on while the suite waits; in
    /// Kueue mode with Kueue's objects and the readmission gate running in-process.
    Sim(Sim, Option<dispatch_kf_gate::Running>),
    /// A real cluster, reached through this kubeconfig.
    Real(PathBuf),
}

/// The Kueue objects every Kueue-mode target has: those `sim serve --kueue` and
/// `cargo xtask cluster up --kueue` install, here with the quota of one job of the
/// suite (2 ranks of 8 GPUs), so that the sim's preemptor, which takes the victim's
/// GPUs, leaves it none, as the real preemptor that takes the whole quota does.
fn kueue_setup() -> Vec<Value> {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/cluster/kueue-setup.json");
    let text = std::fs::read_to_string(file).expect("fixtures/cluster/kueue-setup.json");
    serde_json::from_str(&text.replace("\"$QUOTA\"", "\"16\"")).expect("a JSON array")
}

impl Target {
    /// The simulated cluster, unless the environment names a kubeconfig.
    pub(crate) async fn pick() -> Target {
        match std::env::var_os(KUBECONFIG_VAR).filter(|v| !v.is_empty()) {
            Some(path) => Target::Real(PathBuf::from(path)),
            None => Target::Sim(super::common::cluster().await, None),
        }
    }

    /// [`Target::pick`] for a Kueue-mode scenario: on the sim, Kueue's objects and the
    /// readmission gate (its virtual clock at the wall clock's now, as the adapter
    /// checks the gate's Lease against its own clock); a real cluster brings its own.
    pub(crate) async fn pick_kueue() -> Target {
        if std::env::var_os(KUBECONFIG_VAR).is_some_and(|v| !v.is_empty()) {
            return Target::pick().await;
        }
        let options = SimOptions { start: jiff::Timestamp::now(), ..SimOptions::default() };
        let sim = super::common::cluster_with(options).await;
        for object in kueue_setup() {
            sim.apply(object).expect("the Kueue setup");
        }
        let target = Target::Sim(sim, None);
        let client = kube::Client::try_from(target.config().await).expect("a client");
        let Target::Sim(sim, None) = target else { unreachable!("made above") };
        let mut gate =
            dispatch_kf_gate::Options::new("dispatch-system", "dispatch-readmission-gate", "e2e");
        gate.clock = std::sync::Arc::new(sim.clock());
        // The suite moves virtual time on by minutes a look: a Lease that long keeps
        // the one replica leading throughout.
        gate.lease_duration = Duration::from_secs(3600);
        gate.renew_deadline = Duration::from_secs(2400);
        gate.retry_period = Duration::from_millis(20);
        let running = dispatch_kf_gate::spawn(client, gate);
        Target::Sim(sim, Some(running))
    }

    /// How the target is named in a failure.
    pub(crate) fn describe(&self) -> String {
        match self {
            Target::Sim(sim, _) => format!("the simulated cluster at {}", sim.url()),
            Target::Real(path) => format!("the cluster of {}", path.display()),
        }
    }

    /// The kubeconfig's text: the sim's admin, or the file the environment names.
    pub(crate) fn kubeconfig_yaml(&self) -> String {
        match self {
            Target::Sim(sim, _) => {
                sim.kubeconfig_yaml("admin").expect("the sim makes a kubeconfig")
            }
            Target::Real(path) => std::fs::read_to_string(path).unwrap_or_else(|e| {
                panic!("{KUBECONFIG_VAR}={}: cannot read it: {e}", path.display())
            }),
        }
    }

    /// A client configuration for the kubeconfig's current context.
    pub(crate) async fn config(&self) -> kube::Config {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig_yaml())
            .unwrap_or_else(|e| panic!("{}: not a kubeconfig: {e}", self.describe()));
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("{}: unusable kubeconfig: {e}", self.describe()))
    }

    /// Waits until `look` answers `Ok`, letting time pass between looks; fails the test
    /// with `what` and the last thing `look` saw when the target's patience runs out.
    pub(crate) async fn until<T>(
        &self,
        what: &str,
        mut look: impl AsyncFnMut() -> Result<T, String>,
    ) -> T {
        let deadline = Instant::now() + REAL_PATIENCE;
        let mut steps = 0;
        loop {
            let last = match look().await {
                Ok(found) => return found,
                Err(seen) => seen,
            };
            let patient = match self {
                Target::Sim(..) => steps < SIM_STEPS,
                Target::Real(_) => Instant::now() < deadline,
            };
            assert!(patient, "waited for {what} on {}; last saw: {last}", self.describe());
            steps += 1;
            self.pass_time().await;
        }
    }

    /// Lets time pass: on the sim, the programs the pods run act and the virtual clock
    /// moves on; on a real cluster, the suite sleeps.
    async fn pass_time(&self) {
        match self {
            Target::Sim(sim, gate) => {
                run_programs(sim);
                sim.advance(SIM_STEP);
                if gate.is_some() {
                    // The gate reconciles on its own task: give it a moment to.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Target::Real(_) => tokio::time::sleep(REAL_POLL).await,
        }
    }
}

impl Target {
    /// Kueue preempts the Workload `victim` for a Workload of higher priority that needs
    /// all of the ClusterQueue's quota: on the sim by its Kueue verb; on a real cluster
    /// by creating such a Workload (`e2e-preemptor`), which real Kueue then admits.
    pub(crate) async fn kueue_preempt(&self, kube: &kube::Client, victim: &str) {
        match self {
            Target::Sim(sim, _) => {
                assert!(sim.kueue_preempt(NAMESPACE, victim), "preempt {victim}")
            }
            Target::Real(_) => {
                let api = workloads(kube);
                let preemptor = serde_json::from_value(serde_json::json!({
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                    "metadata": {"name": PREEMPTOR, "namespace": NAMESPACE},
                    "spec": {"queueName": super::suite::QUEUE, "priority": 1_000_000, "podSets": [{
                        "name": "main", "count": 4,
                        "template": {"spec": {"restartPolicy": "Never", "containers": [{
                            "name": "c", "image": "busybox:1.36",
                            "resources": {"requests": {"nvidia.com/gpu": "8"}}
                        }]}}
                    }]}
                }))
                .expect("a Workload");
                api.create(&Default::default(), &preemptor).await.expect("the preemptor Workload");
            }
        }
    }

    /// The higher-priority Workload of [`Target::kueue_preempt`] ends, freeing its quota.
    pub(crate) async fn end_preemption(&self, kube: &kube::Client, victim: &str) {
        match self {
            Target::Sim(sim, _) => {
                let name = format!("preemptor-{victim}");
                assert!(sim.delete("workloads", NAMESPACE, &name, Propagation::Background));
            }
            Target::Real(_) => {
                workloads(kube).delete(PREEMPTOR, &Default::default()).await.expect("delete");
            }
        }
    }
}

/// The name of the higher-priority Workload a real cluster's preemption is made with.
const PREEMPTOR: &str = "e2e-preemptor";

fn workloads(kube: &kube::Client) -> kube::Api<kube::api::DynamicObject> {
    let resource = super::suite::Kind::Workload.resource();
    kube::Api::namespaced_with(kube.clone(), NAMESPACE, &resource)
}

/// The sim has no container runtime: its pods run until told otherwise. This plays the
/// one the suite's programs need, so a pod running `sh -c "exit N"` exits with N, one
/// reading `/dev/zero` is OOM-killed, and one whose working directory is missing never
/// gets past the prologue, as on a real node.
fn run_programs(sim: &Sim) {
    for pod in sim.list("pods", NAMESPACE) {
        let running =
            pod["status"]["phase"] == "Running" && pod["metadata"]["deletionTimestamp"].is_null();
        let Some(name) = pod["metadata"]["name"].as_str() else { continue };
        let Some(program) = program_of(&pod).filter(|_| running) else { continue };
        // A pod gone meanwhile has nothing left to run.
        let _gone = match program.ending() {
            Some((_, "OOMKilled")) => sim.oom(NAMESPACE, name),
            Some((code, _)) => sim.exit_with_message(NAMESPACE, name, code, &program.message()),
            None => false,
        };
    }
}

/// The program a pod's `node` container runs: the tail of its command, after the
/// adapter's prologue, and its working directory.
fn program_of(pod: &Value) -> Option<Program> {
    let containers = pod["spec"]["containers"].as_array()?;
    let node = containers.iter().find(|c| c["name"] == "node")?;
    let command: Vec<&str> = node["command"].as_array()?.iter().filter_map(Value::as_str).collect();
    let env = node["env"].as_array().map(Vec::as_slice).unwrap_or_default();
    let work_dir =
        env.iter().find(|e| e["name"] == keys::env::WORKDIR).and_then(|e| e["value"].as_str());
    Program::ALL.into_iter().find(|p| {
        let tail = p.command();
        let runs = command.len() >= tail.len() && command[command.len() - tail.len()..] == *tail;
        runs && work_dir == p.work_dir()
    })
}
