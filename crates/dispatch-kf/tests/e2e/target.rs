//! The cluster the suite runs on: the simulated cluster by default, or a real one when
//! `DISPATCH_KF_E2E_KUBECONFIG` names a kubeconfig. The scenarios see the same thing
//! either way: a kubeconfig, a way to let time pass, and one helper that waits.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use dispatch_kf_model::keys;
use dispatch_kf_sim::{Fault, FaultAction, Propagation, Sim, SimOptions};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::suite::{GATE_LEASE, NAMESPACE, Program, RUNTIME};

/// The environment variable that points the suite at a real cluster.
pub(crate) const KUBECONFIG_VAR: &str = "DISPATCH_KF_E2E_KUBECONFIG";

/// How long one wait may last on a real cluster: long enough for two image pulls and
/// a JobSet's pods to start on a busy cluster.
const REAL_PATIENCE: Duration = Duration::from_secs(300);
/// How often a real cluster is asked again.
const REAL_POLL: Duration = Duration::from_secs(2);
/// Virtual time the simulated cluster moves on between two looks.
const SIM_STEP: Duration = Duration::from_secs(5);
/// Time the simulated cluster's readers get after each step, on tokio's paused clock:
/// every task that can run (the gate reconciling, a Watch gathering evidence) runs
/// before it passes, and no wall-clock time is spent waiting. Longer than a Watch
/// waits for changes to go quiet before it looks again (`coalesce::QUIET`, 100 ms), as
/// a real cluster's poll is, so each step's changes are observed before the scenario's
/// next step; and short enough that a whole wait (`SIM_STEPS` of them) stays within the
/// client's watch timeouts, which run on the same paused clock while the sim's
/// answers take real time.
const SIM_CATCH_UP: Duration = Duration::from_millis(200);
/// Real time the sim's answers get to cross their sockets after each step.
const SIM_REAL_MOMENT: Duration = Duration::from_millis(20);
/// Looks on the simulated cluster before a wait fails: ten virtual minutes.
const SIM_STEPS: u32 = 120;

/// Where the suite runs.
pub(crate) enum Target {
    /// The in-process simulated cluster, its clock moved on while the suite waits; in
    /// Kueue mode with Kueue's objects and the readmission gate running in-process.
    Sim(Sim, Option<Box<SimGate>>),
    /// A real cluster, reached through this kubeconfig.
    Real(PathBuf),
}

/// The in-process readmission gate of a Kueue-mode sim, which a scenario may stop and
/// start again as a real cluster's gate process is.
pub(crate) struct SimGate {
    client: kube::Client,
    options: dispatch_kf_gate::Options,
    running: std::sync::Mutex<Option<dispatch_kf_gate::Running>>,
}

impl SimGate {
    fn start(&self) {
        let running = dispatch_kf_gate::spawn(self.client.clone(), self.options.clone());
        let old = self.running.lock().expect("not poisoned").replace(running);
        assert!(old.is_none(), "the gate was already running");
    }
}

/// The simulated cluster `start` makes, on a runtime whose clock is paused: on the sim
/// the suite waits on virtual time alone (tokio's clock, the sim's own), never on the
/// wall clock.
async fn paused(start: impl Future<Output = Sim>) -> Sim {
    tokio::time::pause();
    start.await
}

impl Target {
    /// The simulated cluster, unless the environment names a kubeconfig.
    pub(crate) async fn pick() -> Target {
        match std::env::var_os(KUBECONFIG_VAR).filter(|v| !v.is_empty()) {
            Some(path) => Target::Real(PathBuf::from(path)),
            None => Target::Sim(paused(dispatch_kf_testkit::cluster()).await, None),
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
        let sim = paused(dispatch_kf_testkit::cluster_with(options)).await;
        // The quota of one job of the suite (2 ranks of 8 GPUs), so that the sim's
        // preemptor, which takes the victim's GPUs, leaves it none, as the real
        // preemptor that takes the whole quota does.
        sim.install_kueue(16).expect("the Kueue setup");
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
        let gate = SimGate { client, options: gate, running: Default::default() };
        gate.start();
        Target::Sim(sim, Some(Box::new(gate)))
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

    /// Lets time pass: on the sim, the programs the pods run act and the virtual
    /// clocks (the sim's and tokio's) move on; on a real cluster, the suite sleeps.
    pub(crate) async fn pass_time(&self) {
        match self {
            Target::Sim(sim, _) => {
                run_programs(sim);
                sim.advance(SIM_STEP);
                // What reads the sim on tasks of its own (the gate reconciling, a Watch
                // gathering evidence) runs on the test's runtime: give it a moment to.
                // Its answers cross real sockets, which a paused clock does not wait
                // for: a moment of real time first, in which tokio holds the clock.
                let real = tokio::task::spawn_blocking(|| std::thread::sleep(SIM_REAL_MOMENT));
                real.await.expect("a blocking sleep");
                tokio::time::sleep(SIM_CATCH_UP).await;
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
                let preemptor = serde_json::from_value(json!({
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

impl Target {
    /// Adds the node `name` with `gpus` GPUs, tainted `taint=<name>:NoSchedule`,
    /// replacing one of that name: on the sim by its verb, on a real cluster as a Node
    /// that kwok manages (its label) and makes Ready.
    pub(crate) async fn add_node(&self, kube: &kube::Client, name: &str, gpus: u32, taint: &str) {
        let nodes = nodes(kube);
        let taints = json!([{"key": taint, "value": name, "effect": "NoSchedule"}]);
        match self {
            Target::Sim(sim, _) => {
                sim.delete_node(name);
                sim.add_gpu_node(name, gpus);
                let patch = json!({"spec": {"taints": taints}});
                nodes
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .expect("taint");
            }
            Target::Real(_) => {
                if nodes.get_opt(name).await.expect("read the node").is_some() {
                    nodes.delete(name, &Default::default()).await.expect("delete the old node");
                    self.until(&format!("the old {name} gone"), async || {
                        match nodes.get_opt(name).await.map_err(|e| e.to_string())? {
                            Some(_) => Err("still there".into()),
                            None => Ok(()),
                        }
                    })
                    .await;
                }
                let node = serde_json::from_value(kwok_node(name, gpus, taints)).expect("a Node");
                nodes.create(&Default::default(), &node).await.expect("create the node");
            }
        }
    }

    /// The node stops reporting, as when its kubelet or its network dies: on the sim by
    /// its verb; on a real cluster by taking kwok's label off it, so that kwok lets go of
    /// it and its lease runs out.
    pub(crate) async fn lose_node(&self, kube: &kube::Client, name: &str) {
        match self {
            Target::Sim(sim, _) => assert!(sim.lose_node(name), "lose {name}"),
            Target::Real(_) => {
                let patch = json!({"metadata": {"labels": {KWOK_MANAGED: null}}});
                let params = PatchParams::default();
                nodes(kube).patch(name, &params, &Patch::Merge(&patch)).await.expect("unlabel");
            }
        }
    }

    /// An administrator confirms the node is down: the `out-of-service` taint.
    pub(crate) async fn take_out_of_service(&self, kube: &kube::Client, name: &str) {
        match self {
            Target::Sim(sim, _) => assert!(sim.taint_out_of_service(name), "taint {name}"),
            Target::Real(_) => {
                let nodes = nodes(kube);
                // The node lifecycle controller writes taints too: the taint goes in on
                // the version read, and again on a conflict.
                self.until("the out-of-service taint", async || {
                    let node = nodes.get(name).await.map_err(|e| e.to_string())?;
                    let mut taints = node.data["spec"]["taints"].as_array().cloned().unwrap_or_default();
                    taints.push(json!({"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}));
                    let patch = json!({"metadata": {"resourceVersion": node.metadata.resource_version},
                                       "spec": {"taints": taints}});
                    let params = PatchParams::default();
                    nodes.patch(name, &params, &Patch::Merge(&patch)).await.map_err(|e| e.to_string())
                })
                .await;
            }
        }
    }

    /// Removes the node, once its scenario is done with it.
    pub(crate) async fn remove_node(&self, kube: &kube::Client, name: &str) {
        match self {
            Target::Sim(sim, _) => drop(sim.delete_node(name)),
            Target::Real(_) => {
                let gone = nodes(kube).delete(name, &Default::default()).await;
                gone.map(drop).or_else(not_found).expect("delete the node");
            }
        }
    }

    /// The scheduler preempts `victim` on `node` for a pod of higher priority that needs
    /// `gpus` GPUs there: on the sim by its verb; on a real cluster by creating that pod
    /// (`dispatch-e2e-preemptor`, of the PriorityClass `dispatch-e2e-high`), which the
    /// real scheduler can place only by preempting a rank.
    pub(crate) async fn scheduler_preempt(
        &self,
        kube: &kube::Client,
        victim: &str,
        node: &str,
        gpus: u32,
    ) {
        match self {
            Target::Sim(sim, _) => assert!(sim.preempt(NAMESPACE, victim), "preempt {victim}"),
            Target::Real(_) => create_preemptor(kube, node, gpus).await,
        }
    }

    /// The higher-priority pod of [`Target::scheduler_preempt`] goes.
    pub(crate) async fn end_scheduler_preemption(&self, kube: &kube::Client) {
        if let Target::Real(_) = self {
            let gone = pods(kube)
                .delete(SCHEDULER_PREEMPTOR, &DeleteParams::default().grace_period(0))
                .await;
            gone.map(drop).or_else(not_found).expect("delete the preemptor pod");
        }
    }
}

/// Creates the PriorityClass `dispatch-e2e-high` and, of that class, a pod that needs
/// `gpus` GPUs on `node` (replacing one left by an earlier run).
async fn create_preemptor(kube: &kube::Client, node: &str, gpus: u32) {
    let class = json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": HIGH_PRIORITY}, "value": 1_000_000
    });
    let classes = Api::<DynamicObject>::all_with(kube.clone(), &priority_classes());
    let apply = PatchParams::apply("dispatch-kf-e2e").force();
    classes.patch(HIGH_PRIORITY, &apply, &Patch::Apply(&class)).await.expect("the class");
    let gpus = gpus.to_string();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": SCHEDULER_PREEMPTOR, "namespace": NAMESPACE},
        "spec": {
            "priorityClassName": HIGH_PRIORITY, "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"key": super::suite::OWN_NODE_TAINT, "operator": "Equal",
                             "value": node, "effect": "NoSchedule"}],
            "containers": [{"name": "c", "image": super::suite::IMAGE, "command": ["sleep", "600"],
                            "resources": {"requests": {GPU: gpus}, "limits": {GPU: gpus}}}]
        }
    });
    let pods = pods(kube);
    let _gone = pods.delete(SCHEDULER_PREEMPTOR, &DeleteParams::default().grace_period(0)).await;
    let pod = serde_json::from_value(pod).expect("a Pod");
    pods.create(&Default::default(), &pod).await.expect("the preemptor pod");
}

/// The label kwok manages its nodes by.
const KWOK_MANAGED: &str = "kwok.x-k8s.io/node";
/// The taint of a node an administrator has confirmed down.
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
/// The extended resource of a GPU.
const GPU: &str = "nvidia.com/gpu";
/// The PriorityClass of the scheduler's preemptor.
const HIGH_PRIORITY: &str = "dispatch-e2e-high";
/// The pod that makes the real scheduler preempt.
const SCHEDULER_PREEMPTOR: &str = "dispatch-e2e-preemptor";

/// A node kwok manages: it fills in the status and keeps the lease.
fn kwok_node(name: &str, gpus: u32, taints: Value) -> Value {
    let resources = json!({"cpu": "32", "memory": "256Gi", "pods": "110", GPU: gpus.to_string()});
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {KWOK_MANAGED: "fake", "kubernetes.io/hostname": name}},
        "spec": {"taints": taints},
        "status": {"allocatable": resources, "capacity": resources}
    })
}

/// A delete that found nothing to delete is done.
fn not_found(e: kube::Error) -> Result<(), kube::Error> {
    match e {
        kube::Error::Api(status) if status.code == 404 => Ok(()),
        other => Err(other),
    }
}

fn nodes(kube: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(kube.clone(), &super::suite::Kind::Node.resource())
}

fn pods(kube: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(kube.clone(), NAMESPACE, &super::suite::Kind::Pod.resource())
}

fn priority_classes() -> kube::api::ApiResource {
    let gvk = kube::api::GroupVersionKind::gvk("scheduling.k8s.io", "v1", "PriorityClass");
    kube::api::ApiResource::from_gvk_with_plural(&gvk, "priorityclasses")
}

/// The name of the higher-priority Workload a real cluster's preemption is made with.
const PREEMPTOR: &str = "e2e-preemptor";

fn workloads(kube: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(kube.clone(), NAMESPACE, &super::suite::Kind::Workload.resource())
}

impl Target {
    /// From now on no admission webhook can be called for the TrainJobs of `job`, as
    /// while the Trainer's webhook server is down: on the sim by a fault answering every
    /// write of a TrainJob as the apiserver does then; on a real cluster by a
    /// ValidatingWebhookConfiguration for those TrainJobs (by their job label), failing
    /// closed, whose server is a port nobody listens on, so the real apiserver answers
    /// 500 "failed calling webhook" itself. Returns once the apiserver does so.
    pub(crate) async fn break_webhook(&self, kube: &kube::Client, job: &str) {
        match self {
            Target::Sim(sim, _) => {
                let url = "https://127.0.0.1:1/";
                refuse_train_job_writes(sim, &webhook_unreachable(&down_webhook(job), url));
            }
            Target::Real(_) => {
                let config: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": "ValidatingWebhookConfiguration",
                    "metadata": {"name": down_webhook(job)},
                    "webhooks": [{
                        "name": down_webhook(job),
                        "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                        "rules": [{"apiGroups": [keys::TRAINER_GROUP], "apiVersions": ["*"],
                                   "operations": ["CREATE", "UPDATE"], "resources": ["trainjobs"]}],
                        "objectSelector": {"matchLabels": {(keys::LABEL_JOB_ID): job}},
                        "failurePolicy": "Fail", "sideEffects": "None",
                        "admissionReviewVersions": ["v1"], "timeoutSeconds": 2
                    }]
                }))
                .expect("a ValidatingWebhookConfiguration");
                // Applied, so that one an interrupted earlier run left is taken over.
                let apply = PatchParams::apply("dispatch-kf-e2e").force();
                webhook_configurations(kube)
                    .patch(&down_webhook(job), &apply, &Patch::Apply(&config))
                    .await
                    .expect("apply the ValidatingWebhookConfiguration");
                self.until("the apiserver calls the webhook", async || {
                    match probe_admission(kube, job).await {
                        Err(e) if e.contains("failed calling webhook") => Ok(()),
                        other => Err(format!("not yet: {other:?}")),
                    }
                })
                .await;
            }
        }
    }

    /// The webhooks of [`Target::break_webhook`] can be called again. Returns once the
    /// apiserver no longer calls the broken one.
    pub(crate) async fn mend_webhook(&self, kube: &kube::Client, job: &str) {
        match self {
            Target::Sim(sim, _) => sim.clear_faults(),
            Target::Real(_) => {
                webhook_configurations(kube)
                    .delete(&down_webhook(job), &Default::default())
                    .await
                    .expect("delete the ValidatingWebhookConfiguration");
                self.until("the apiserver no longer calls the webhook", async || {
                    match probe_admission(kube, job).await {
                        Err(e) if e.contains("failed calling webhook") => Err(e),
                        _ => Ok(()),
                    }
                })
                .await;
            }
        }
    }
}

/// The name of [`Target::break_webhook`]'s webhook for `job`.
fn down_webhook(job: &str) -> String {
    format!("down.{}.dispatch-e2e.example.com", job.to_ascii_lowercase())
}

fn webhook_configurations(kube: &kube::Client) -> Api<DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
    );
    let resource =
        kube::api::ApiResource::from_gvk_with_plural(&gvk, "validatingwebhookconfigurations");
    Api::all_with(kube.clone(), &resource)
}

/// A dry-run create of a TrainJob labelled with `job`: admission runs in full, nothing
/// is stored. The apiserver's answer, as text.
async fn probe_admission(kube: &kube::Client, job: &str) -> Result<(), String> {
    let probe = serde_json::from_value(json!({
        "apiVersion": keys::TRAINER_API_VERSION, "kind": keys::KIND_TRAIN_JOB,
        "metadata": {"name": "dispatch-e2e-admission-probe", "namespace": NAMESPACE,
                     "labels": {(keys::LABEL_JOB_ID): job}},
        "spec": {"suspend": true, "runtimeRef": {
            "apiGroup": keys::TRAINER_GROUP, "kind": keys::KIND_TRAINING_RUNTIME,
            "name": super::suite::RUNTIME}}
    }))
    .expect("a TrainJob");
    let train_jobs = Api::<DynamicObject>::namespaced_with(
        kube.clone(),
        NAMESPACE,
        &super::suite::Kind::TrainJob.resource(),
    );
    let params = kube::api::PostParams { dry_run: true, ..Default::default() };
    train_jobs.create(&params, &probe).await.map(|_| ()).map_err(|e| e.to_string())
}

/// The sim has no container runtime: its pods run until told otherwise. This plays the
/// one the suite's programs need, so a pod running `sh -c "exit N"` exits with N, one
/// reading `/dev/zero` is OOM-killed, one whose working directory is missing never gets
/// past the prologue, and one failing on the JobSet's first attempt does so, as on a
/// real node; and every running pod prints [`rank_output`], as kwok's do.
fn run_programs(sim: &Sim) {
    let output = super::suite::rank_output();
    for pod in sim.list("pods", NAMESPACE) {
        let running =
            pod["status"]["phase"] == "Running" && pod["metadata"]["deletionTimestamp"].is_null();
        let Some(name) = pod["metadata"]["name"].as_str() else { continue };
        let Some(program) = program_of(&pod).filter(|_| running) else { continue };
        sim.set_log(NAMESPACE, name, &output);
        let attempt = pod["metadata"]["labels"][keys::JOBSET_RESTART_ATTEMPT].as_str();
        let attempt = attempt.and_then(|a| a.parse().ok()).unwrap_or(0);
        // A pod gone meanwhile has nothing left to run.
        let _gone = match program.ending(attempt) {
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

/// The variable naming the `xtask` executable that started the real control plane, set
/// by `cargo xtask e2e --real` and `matrix`: with it the suite can kill and restart the
/// control plane's processes (`cargo xtask cluster kill|restart`). Without it, on
/// somebody's cluster, the scenarios that need to skip.
pub(crate) const CONTROL_VAR: &str = "DISPATCH_KF_E2E_CONTROL";

/// A process of the control plane that a scenario kills or restarts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    /// kube-apiserver.
    Apiserver,
    /// The Trainer's controller manager, which serves its webhooks.
    Trainer,
    /// The readmission gate (Kueue mode).
    Gate,
    /// kube-controller-manager: the garbage collector, the Job controller and the rest.
    ControllerManager,
    /// The cause controller (on the sim, the scenario's own: `told.rs`).
    Events,
}

impl Component {
    /// The name `cargo xtask cluster` started it as.
    fn process(self) -> &'static str {
        match self {
            Component::Apiserver => "kube-apiserver",
            Component::Trainer => "trainer-controller-manager",
            Component::Gate => "dispatch-kf-gate",
            Component::ControllerManager => "kube-controller-manager",
            Component::Events => "dispatch-kf-events",
        }
    }
}

impl Target {
    /// Whether the scenario can kill and restart the control plane's processes: the
    /// sim plays what each does; a real cluster only when xtask started it.
    pub(crate) fn controls_processes(&self) -> bool {
        match self {
            Target::Sim(..) => true,
            Target::Real(_) => std::env::var_os(CONTROL_VAR).is_some_and(|v| !v.is_empty()),
        }
    }

    /// Kills `component` (SIGKILL: a crash); it stays down until [`Target::restart`].
    /// The sim plays what the cluster then answers: the gate aborted in-process and its
    /// Lease made as old as a dead holder's is once it expires; every TrainJob write
    /// answered as while the Trainer's webhook cannot be called; every connection
    /// refused while the apiserver is down; none of the controller manager's
    /// controllers (the Job controller, the garbage collector) while it is down.
    pub(crate) async fn kill(&self, kube: &kube::Client, component: Component) {
        let Target::Sim(sim, gate) = self else {
            return xtask(&["cluster", "kill", component.process()]).await;
        };
        match component {
            Component::Gate => {
                let gate = gate.as_ref().expect("a Kueue-mode sim runs the gate");
                let running = gate.running.lock().expect("not poisoned").take();
                running.expect("the gate runs").abort().await;
                let expired = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
                let expired = expired.round(jiff::Unit::Second).expect("a time");
                let renewed = json!({"spec": {"renewTime": expired.to_string()}});
                let (namespace, name) = GATE_LEASE;
                Api::<DynamicObject>::namespaced_with(kube.clone(), namespace, &lease_resource())
                    .patch(name, &PatchParams::default(), &Patch::Merge(&renewed))
                    .await
                    .expect("the gate's Lease made expired");
            }
            Component::Trainer => {
                let url = "https://127.0.0.1:29444/validate-trainer-kubeflow-org-v1alpha1-trainjob";
                refuse_train_job_writes(sim, &webhook_unreachable(TRAINER_WEBHOOK, url));
            }
            Component::Apiserver => sim.set_refusing(true).await,
            Component::ControllerManager => sim.set_controller_manager_down(true),
            Component::Events => unreachable!("the sim's cause controller is the scenario's"),
        }
    }

    /// Kills `component` if it runs and starts it again as it was started; returns once
    /// it is ready. The sim plays a restart by what the next writes of a job meet: the
    /// gate started again in-process; the Trainer's webhook back but its cache not yet
    /// holding the runtime copy (the next TrainJob create denied in the upstream
    /// words); the apiserver answering again. A write the apiserver's going cuts is
    /// not played here: the Backend then waits out the call bound on the wall clock,
    /// which the sim's steps do not move (`start_faults.rs` plays it).
    pub(crate) async fn restart(&self, component: Component) {
        let Target::Sim(sim, gate) = self else {
            return xtask(&["cluster", "restart", component.process()]).await;
        };
        match component {
            Component::Gate => gate.as_ref().expect("a Kueue-mode sim runs the gate").start(),
            Component::Trainer => {
                sim.clear_faults();
                sim.add_fault(Fault::on("create", "trainjobs", runtime_not_in_trainer_cache()));
            }
            Component::Apiserver => sim.set_refusing(false).await,
            Component::ControllerManager => {
                sim.set_controller_manager_down(false);
                sim.settle();
            }
            Component::Events => unreachable!("the sim's cause controller is the scenario's"),
        }
    }
}

impl Target {
    /// The running pod `pod` runs out of memory, as its kubelet would report it: its
    /// container terminated 137, `OOMKilled`, the pod failed. On the sim its `oom`
    /// verb; on a real cluster a write of the pod's status.
    pub(crate) async fn oom(&self, kube: &kube::Client, pod: &str) {
        match self {
            Target::Sim(sim, _) => assert!(sim.oom(NAMESPACE, pod), "oom {pod}"),
            Target::Real(_) => {
                let found = pods(kube).get(pod).await.expect("the pod");
                let patch = dispatch_kf_testkit::containers_ended(&found.data, 137, "OOMKilled");
                pods(kube)
                    .patch_status(pod, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .expect("the pod's status: out of memory");
            }
        }
    }
}

/// The Trainer's TrainJob webhook, as the apiserver names it.
const TRAINER_WEBHOOK: &str = "validator.trainjob.trainer.kubeflow.org";

/// The apiserver's answer while the webhook `name`, served at `url`, cannot be called.
fn webhook_unreachable(name: &str, url: &str) -> FaultAction {
    Fault::status(
        500,
        "InternalError",
        &format!(
            "Internal error occurred: failed calling webhook \"{name}\": failed to call webhook: Post \"{url}\": dial tcp 127.0.0.1: connect: connection refused"
        ),
    )
}

/// Every write of a TrainJob from now on answered `answer`, as the apiserver answers
/// while a webhook for TrainJobs cannot be called.
fn refuse_train_job_writes(sim: &Sim, answer: &FaultAction) {
    for verb in ["create", "update", "patch"] {
        sim.add_fault(Fault::on(verb, "trainjobs", answer.clone()).always());
    }
}

/// The Trainer webhook's denial of a TrainJob whose runtime its cache does not hold yet.
fn runtime_not_in_trainer_cache() -> FaultAction {
    Fault::status(
        403,
        "Forbidden",
        &format!(
            "admission webhook \"{TRAINER_WEBHOOK}\" denied the request: spec.runtimeRef: Invalid value: \"{RUNTIME}\": specified trainingRuntime {}",
            keys::TRAINER_RUNTIME_NOT_SEEN
        ),
    )
}

/// Runs the xtask executable of [`CONTROL_VAR`] with `args`, failing the scenario if it fails.
async fn xtask(args: &[&str]) {
    let program = std::env::var_os(CONTROL_VAR).expect("checked by controls_processes");
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&program).args(&args).status().map(|s| (s, args))
    });
    let (status, args) = status.await.expect("a blocking task").expect("run xtask");
    assert!(status.success(), "xtask {}: {status}", args.join(" "));
}

fn lease_resource() -> kube::api::ApiResource {
    let gvk = kube::api::GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease");
    kube::api::ApiResource::from_gvk_with_plural(&gvk, "leases")
}
