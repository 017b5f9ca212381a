//! What the suite fixes, so that a kubeconfig is its only cluster-specific input: the
//! namespace, the runtime it brings, the image, the programs its pods run, the settings,
//! and the plain Kubernetes reads that check what the Backend says.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dispatch_core::{Backend, CallContext, JobId, JobSpec, ObjectObs, StartRequest, Watcher};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_client::Cluster;
use dispatch_kf_model::{Settings, keys};
use dispatch_kf_testkit::Proxy;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::target::Target;

/// The Lease the readmission gate holds (namespace, name), as its deployment names it.
pub(crate) const GATE_LEASE: (&str, &str) = ("dispatch-system", "dispatch-readmission-gate");
/// The namespace the suite makes and works in.
pub(crate) const NAMESPACE: &str = "dispatch-e2e";
/// The TrainingRuntime the suite brings into its namespace.
pub(crate) const RUNTIME: &str = "dispatch-e2e-torch";
/// The image every rank runs: small, public, with a POSIX shell.
pub(crate) const IMAGE: &str = "busybox:1.36";
/// The environment variable naming the folder where scenarios record how they ended.
pub(crate) const RECORD_VAR: &str = "DISPATCH_KF_E2E_RECORD";
/// The field manager of the suite's own writes.
const MANAGER: &str = "dispatch-kf-e2e";

/// What a rank runs. The list is closed, so the sim can play each one; on the real
/// control plane kwok's stages play them from the pod's spec, as a node would run them
/// (`xtask/cluster/kwok-stages.yaml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Program {
    /// Runs for ten minutes: long enough to be held, released and stopped.
    Sleep,
    /// Exits 0 at once.
    Succeed,
    /// Exits 1 at once.
    Fail,
    /// Reads `/dev/zero` into memory until the kernel's OOM killer ends it.
    ExhaustMemory,
    /// Never starts: the prologue finds no working directory and exits 125.
    MissingWorkdir,
    /// Exits 1 on the JobSet's first attempt and runs like [`Program::Sleep`] once the
    /// JobSet has restarted (it reads the attempt from `DISPATCH_K8S_RESTART_ATTEMPT`).
    FailFirstAttempt,
}

/// The working directory [`Program::MissingWorkdir`] asks for.
pub(crate) const MISSING_WORKDIR: &str = "/nonexistent/dispatch-e2e";

impl Program {
    /// Every program.
    pub(crate) const ALL: [Program; 6] = [
        Program::Sleep,
        Program::Succeed,
        Program::Fail,
        Program::ExhaustMemory,
        Program::MissingWorkdir,
        Program::FailFirstAttempt,
    ];

    /// The job's command.
    pub(crate) fn command(self) -> &'static [&'static str] {
        match self {
            Program::Sleep | Program::MissingWorkdir => &["sleep", "600"],
            Program::Succeed => &["sh", "-c", "exit 0"],
            Program::Fail => &["sh", "-c", "exit 1"],
            Program::ExhaustMemory => &["sh", "-c", "tail /dev/zero"],
            Program::FailFirstAttempt => {
                &["sh", "-c", "test \"$DISPATCH_K8S_RESTART_ATTEMPT\" != 0 || exit 1; sleep 600"]
            }
        }
    }

    /// The job's working directory.
    pub(crate) fn work_dir(self) -> Option<&'static str> {
        (self == Program::MissingWorkdir).then_some(MISSING_WORKDIR)
    }

    /// What it leaves in its termination log: the prologue's words when it finds no
    /// working directory (`docs/render.md#the-prologue`), nothing otherwise.
    pub(crate) fn message(self) -> String {
        match self.work_dir() {
            Some(dir) => format!("dispatch-prologue: working directory {dir} does not exist\n"),
            None => String::new(),
        }
    }

    /// How a rank running it on the JobSet's `restart_attempt` ends by itself: its exit
    /// code and the runtime's reason.
    pub(crate) fn ending(self, restart_attempt: u32) -> Option<(i64, &'static str)> {
        match self {
            Program::Sleep => None,
            Program::FailFirstAttempt => (restart_attempt == 0).then_some((1, "Error")),
            Program::Succeed => Some((0, "Completed")),
            Program::Fail => Some((1, "Error")),
            Program::ExhaustMemory => Some((137, "OOMKilled")),
            Program::MissingWorkdir => Some((125, "Error")),
        }
    }
}

/// What every rank prints: on the real control plane kwok serves it for every `node`
/// container from `fixtures/cluster/rank-output.log` (the container runtime's log
/// format, `<time> <stream> <tag> <line>`); on the sim the target sets it.
pub(crate) fn rank_output() -> String {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/cluster/rank-output.log");
    let text = std::fs::read_to_string(file).expect("fixtures/cluster/rank-output.log");
    text.lines()
        .map(|line| line.splitn(4, ' ').nth(3).unwrap_or_default().to_owned() + "\n")
        .collect()
}

/// The runtimes the suite brings into its namespace, each the Trainer's torch shape
/// stating what dispatch requires of a runtime (`restartPolicy: Never`, `backoffLimit:
/// 0`), which the Trainer's stock `torch-distributed` does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    /// Ranks go wherever the scheduler puts them; a failed rank fails the JobSet.
    Plain,
    /// The JobSet restarts once on failure (its `failurePolicy.maxRestarts: 1`).
    Restarting,
    /// Ranks run only on the scenario's own node (`BackendOnTarget::own_node`), so that what
    /// the scenario does to that node touches no other scenario's pods.
    OnOwnNode(&'static str),
    /// [`Runtime::OnOwnNode`], and the JobSet restarts once on failure.
    RestartingOnOwnNode(&'static str),
    /// Its JobSet restarts only the Job that failed (`failurePolicy.rules[].action:
    /// RestartJob`, JobSet v0.12 behind its `RestartJob` feature gate): what the adapter
    /// refuses (runtime rule 8). Not brought with the others: the scenario that needs it
    /// brings it, since a Trainer built against an older JobSet refuses it.
    RestartsOneJob,
    /// As a platform team sets a runtime up to clean up after itself: its JobSet
    /// template has `ttlSecondsAfterFinished` ([`JOBSET_TTL_SECONDS`]), which the
    /// adapter's copy leaves out.
    CleaningUp,
}

/// The JobSet TTL of [`Runtime::CleaningUp`].
pub(crate) const JOBSET_TTL_SECONDS: i64 = 5;

/// The node of the scheduler-preemption scenario.
pub(crate) const PREEMPTION_NODE: &str = "dispatch-e2e-preemption";
/// The node of the node-loss scenario.
pub(crate) const LOST_NODE: &str = "dispatch-e2e-node-loss";
/// The node the first instance of a name runs on in the instances scenario, deleted
/// before the second starts.
pub(crate) const FIRST_INSTANCE_NODE: &str = "dispatch-e2e-first-instance";
/// The node the second instance of that name runs on.
pub(crate) const SECOND_INSTANCE_NODE: &str = "dispatch-e2e-second-instance";
/// The taint that keeps every pod but its scenario's off an own node; its value is the
/// node's name.
pub(crate) const OWN_NODE_TAINT: &str = "dispatch-e2e/own-node";

impl Runtime {
    /// Every runtime the suite brings.
    pub(crate) const ALL: [Runtime; 7] = [
        Runtime::Plain,
        Runtime::Restarting,
        Runtime::CleaningUp,
        Runtime::OnOwnNode(PREEMPTION_NODE),
        Runtime::OnOwnNode(LOST_NODE),
        Runtime::RestartingOnOwnNode(FIRST_INSTANCE_NODE),
        Runtime::OnOwnNode(SECOND_INSTANCE_NODE),
    ];

    /// The TrainingRuntime's name.
    pub(crate) fn name(self) -> String {
        match self {
            Runtime::Plain => RUNTIME.to_owned(),
            Runtime::Restarting => format!("{RUNTIME}-restarting"),
            Runtime::CleaningUp => format!("{RUNTIME}-cleaning-up"),
            Runtime::OnOwnNode(node) => format!("{RUNTIME}-on-{node}"),
            Runtime::RestartingOnOwnNode(node) => format!("{RUNTIME}-restarting-on-{node}"),
            Runtime::RestartsOneJob => format!("{RUNTIME}-restarts-one-job"),
        }
    }

    /// The TrainingRuntime.
    fn object(self) -> Value {
        let mut pod = json!({
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "containers": [{"name": keys::NODE_CONTAINER, "image": IMAGE,
                            "command": ["sh", "-c", "echo runtime default"]}]
        });
        if let Runtime::OnOwnNode(node) | Runtime::RestartingOnOwnNode(node) = self {
            pod["nodeSelector"] = json!({"kubernetes.io/hostname": node});
            pod["tolerations"] = json!([{
                "key": OWN_NODE_TAINT, "operator": "Equal", "value": node, "effect": "NoSchedule"
            }]);
        }
        let mut jobset = json!({"replicatedJobs": [{
            "name": "node",
            "template": {
                "metadata": {"labels": {(keys::TRAINER_ANCESTOR_STEP): keys::TRAINER_STEP}},
                "spec": {"backoffLimit": 0, "template": {"spec": pod}}
            }
        }]});
        if matches!(self, Runtime::Restarting | Runtime::RestartingOnOwnNode(_)) {
            jobset["failurePolicy"] = json!({"maxRestarts": 1});
        }
        if self == Runtime::RestartsOneJob {
            jobset["failurePolicy"] = json!({"maxRestarts": 1, "rules": [
                {"name": "restart-the-failed-job", "action": "RestartJob"}
            ]});
        }
        if self == Runtime::CleaningUp {
            jobset["ttlSecondsAfterFinished"] = json!(JOBSET_TTL_SECONDS);
        }
        json!({
            "apiVersion": keys::TRAINER_API_VERSION, "kind": keys::KIND_TRAINING_RUNTIME,
            "metadata": {"name": self.name(), "namespace": NAMESPACE,
                         "labels": {"trainer.kubeflow.org/framework": "torch"}},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": jobset}}
        })
    }

    /// How a request or the settings name it.
    fn reference(self) -> Value {
        json!({"kind": keys::KIND_TRAINING_RUNTIME, "name": self.name()})
    }
}

/// The LocalQueue Kueue-mode scenarios submit to, in the suite's namespace, on the
/// ClusterQueue `gpu` of the Kueue setup (`crates/dispatch-kf-sim/data/kueue-setup.json`).
pub(crate) const QUEUE: &str = "dispatch-e2e";

/// The adapter's mode a scenario runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Plain: the start gate is `spec.suspend`.
    Plain,
    /// Kueue: jobs queue in [`QUEUE`] and are admitted through the readmission gate.
    Kueue,
}

/// The settings every scenario's Backend is made with: in Kueue mode, on the LocalQueue
/// `queue`.
fn settings(mode: Mode, queue: &str) -> Settings {
    let listed = Runtime::ALL.into_iter().chain([Runtime::RestartsOneJob]);
    let runtimes: Vec<Value> = listed.map(Runtime::reference).collect();
    let mut settings = json!({
        "name": "kubeflow-e2e",
        "namespace": NAMESPACE,
        "runtimes": runtimes,
        "timeouts": {"request": "30s", "workload": "3s", "stopJob": "5m", "callBound": "90s"},
    });
    if mode == Mode::Kueue {
        settings["mode"] = json!("kueue");
        settings["kueue"] = json!({"queue": queue});
    }
    Settings::from_value(&settings).expect("the suite's settings are valid")
}

/// A job id of the suite: scenario `n`.
pub(crate) fn job(n: u32) -> JobId {
    JobId::parse(&format!("01JE2E0000000000000000{n:04}")).expect("a valid job id")
}

/// Submission 1 of `job`: two nodes, no GPU, running `program`, with a time limit that
/// ends anything a failed run leaves behind on a real cluster.
pub(crate) fn request(job: &JobId, program: Program) -> StartRequest {
    request_on(job, program, Runtime::Plain)
}

/// [`request`] on `runtime`.
pub(crate) fn request_on(job: &JobId, program: Program, runtime: Runtime) -> StartRequest {
    serde_json::from_value(json!({
        "job": job.as_str(), "generation": 3, "submission": 1, "attempt": 1,
        "spec": {
            "command": program.command(), "workDir": program.work_dir(),
            "nodes": 2, "gpusPerNode": 0, "timeLimit": "15m",
            "extensions": {
                "dispatch/Image": {"ref": IMAGE},
                (keys::EXT_RUNTIME_REF): runtime.reference()
            }
        }
    }))
    .expect("a valid request")
}

/// [`request`] for `nodes` ranks of `gpus` GPUs each, so that Kueue counts them
/// against the ClusterQueue's quota.
pub(crate) fn request_with_gpus(job: &JobId, program: Program, gpus: i64) -> StartRequest {
    let mut request = request(job, program);
    request.spec.gpus_per_node = gpus;
    request
}

/// Points `spec` at the Trainer's stock runtime, which the suite's settings do not list.
pub(crate) fn name_an_unlisted_runtime(spec: &mut JobSpec) {
    let other = json!({"kind": keys::KIND_CLUSTER_TRAINING_RUNTIME, "name": "torch-distributed"});
    spec.extensions.insert(keys::EXT_RUNTIME_REF.into(), other);
}

/// The kinds the suite reads through plain Kubernetes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// TrainJobs.
    TrainJob,
    /// TrainingRuntimes (the adapter's copies).
    TrainingRuntime,
    /// JobSets.
    JobSet,
    /// Pods.
    Pod,
    /// batch/v1 Jobs (the JobSet's children).
    Job,
    /// Kueue's Workloads.
    Workload,
    /// Nodes.
    Node,
}

impl Kind {
    /// Every kind an adapter's job leaves in the namespace, and the suite checks.
    pub(crate) const ALL: [Kind; 5] =
        [Kind::TrainJob, Kind::TrainingRuntime, Kind::JobSet, Kind::Job, Kind::Pod];

    /// The kind's API resource.
    pub(crate) fn resource(self) -> ApiResource {
        let (api_version, kind, plural) = match self {
            Kind::TrainJob => (keys::TRAINER_API_VERSION, keys::KIND_TRAIN_JOB, "trainjobs"),
            Kind::TrainingRuntime => {
                (keys::TRAINER_API_VERSION, keys::KIND_TRAINING_RUNTIME, "trainingruntimes")
            }
            Kind::JobSet => (keys::JOBSET_API_VERSION, "JobSet", "jobsets"),
            Kind::Pod => ("v1", "Pod", "pods"),
            Kind::Job => ("batch/v1", "Job", "jobs"),
            Kind::Workload => ("kueue.x-k8s.io/v1beta2", "Workload", "workloads"),
            Kind::Node => ("v1", "Node", "nodes"),
        };
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        ApiResource::from_gvk_with_plural(&gvk, plural)
    }
}

/// One scenario's Backend on its target: the target, a Backend made by Factory on it,
/// and a plain Kubernetes client for checking what the Backend says.
pub(crate) struct BackendOnTarget {
    /// Where it runs.
    pub(crate) target: Target,
    /// The Backend under test.
    pub(crate) backend: KubeflowBackend,
    kube: kube::Client,
    mode: Mode,
}

impl BackendOnTarget {
    /// Picks the target, makes the namespace and the runtime, and runs Factory.
    pub(crate) async fn new() -> BackendOnTarget {
        BackendOnTarget::in_mode(Mode::Plain).await.expect("plain mode runs anywhere")
    }

    /// [`BackendOnTarget::new`] in `mode`; `None` in Kueue mode on a cluster that does not serve
    /// Kueue's API, where a Kueue scenario has nothing to prove.
    pub(crate) async fn in_mode(mode: Mode) -> Option<BackendOnTarget> {
        let target = match mode {
            Mode::Plain => Target::pick().await,
            Mode::Kueue => Target::pick_kueue().await,
        };
        let config = target.config().await;
        let kube = kube::Client::try_from(config.clone()).expect("a client");
        let apply = PatchParams::apply(MANAGER).force();
        let namespace = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
        );
        let namespaces: Api<DynamicObject> = Api::all_with(kube.clone(), &namespace);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
        namespaces.patch(NAMESPACE, &apply, &Patch::Apply(&ns)).await.expect("the namespace");
        for runtime in Runtime::ALL {
            Self::bring_on(&kube, runtime)
                .await
                .unwrap_or_else(|e| panic!("the suite's runtime {}: {e}", runtime.name()));
        }
        if mode == Mode::Kueue {
            let queue = json!({
                "apiVersion": keys::KUEUE_API_VERSION, "kind": "LocalQueue",
                "metadata": {"name": QUEUE, "namespace": NAMESPACE},
                "spec": {"clusterQueue": "gpu"}
            });
            let queues = Api::<DynamicObject>::namespaced_with(
                kube.clone(),
                NAMESPACE,
                &ApiResource::from_gvk_with_plural(
                    &kube::api::GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "LocalQueue"),
                    "localqueues",
                ),
            );
            if let Err(e) = queues.patch(QUEUE, &apply, &Patch::Apply(&queue)).await {
                eprintln!("skipped: {} does not serve Kueue's API ({e})", target.describe());
                return None;
            }
        }
        let backend = Self::factory(&target, mode, QUEUE).await;
        Some(BackendOnTarget { target, backend, kube, mode })
    }

    /// Factory on `target` in `mode` (on the LocalQueue `queue` in Kueue mode), as the
    /// command runs it for each call.
    async fn factory(target: &Target, mode: Mode, queue: &str) -> KubeflowBackend {
        Self::factory_with(target, target.config().await, mode, queue).await
    }

    /// [`BackendOnTarget::factory`] with the client configuration `config`.
    async fn factory_with(
        target: &Target,
        config: kube::Config,
        mode: Mode,
        queue: &str,
    ) -> KubeflowBackend {
        Self::try_factory_with(config, mode, queue)
            .await
            .unwrap_or_else(|e| panic!("Factory on {}: {e}", target.describe()))
    }

    /// Factory with the client configuration `config`, as it answered.
    async fn try_factory_with(
        config: kube::Config,
        mode: Mode,
        queue: &str,
    ) -> dispatch_core::Result<KubeflowBackend> {
        let cluster = Cluster::from_kube_config(config, Duration::from_secs(30))
            .expect("a client for the adapter");
        KubeflowBackend::with_cluster(settings(mode, queue), cluster, &patient_cx()).await
    }

    /// A Backend whose every request goes through a proxy that can stall its
    /// connections (`dispatch_kf_testkit::Proxy`, ending TLS in front of the target).
    pub(crate) async fn backend_through_proxy(&self) -> (Proxy, KubeflowBackend) {
        let (proxy, config) = Proxy::in_front_of(&self.target.config().await).await;
        (proxy, Self::factory_with(&self.target, config, self.mode, QUEUE).await)
    }

    /// A Backend made anew, as a command made now would have it (its preflight
    /// probed now).
    pub(crate) async fn another_backend(&self) -> KubeflowBackend {
        Self::factory(&self.target, self.mode, QUEUE).await
    }

    /// [`BackendOnTarget::another_backend`] as Factory answered, failure included.
    pub(crate) async fn try_another_backend(&self) -> dispatch_core::Result<KubeflowBackend> {
        Self::try_factory_with(self.target.config().await, self.mode, QUEUE).await
    }

    /// Brings `runtime` into the suite's namespace, as the suite brings
    /// [`Runtime::ALL`]; the apiserver's refusal, in its words.
    pub(crate) async fn bring(&self, runtime: Runtime) -> Result<(), String> {
        Self::bring_on(&self.kube, runtime).await
    }

    /// Applies `runtime` in the suite's namespace through `kube`.
    async fn bring_on(kube: &kube::Client, runtime: Runtime) -> Result<(), String> {
        let apply = PatchParams::apply(MANAGER).force();
        Self::api(kube, Kind::TrainingRuntime)
            .patch(&runtime.name(), &apply, &Patch::Apply(&runtime.object()))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Leaves the objects a preflight probe of `job` makes, expiring at `expires`, as a
    /// process killed mid-probe leaves them: the runtime copy and the TrainJob, rendered
    /// on the settings' probe runtime (the first listed, [`Runtime::Plain`]).
    pub(crate) async fn leave_probe(&self, job: &JobId, expires: jiff::Timestamp) {
        use dispatch_kf_model::internal::probe;
        use dispatch_kf_model::{Purpose, SourceRuntime, TokenSuffix, render};
        let settings = self.backend.settings();
        assert_eq!(settings.probe_runtime.to_value(), Runtime::Plain.reference());
        let source = SourceRuntime::from_value(&Runtime::Plain.object()).expect("the runtime");
        let request = probe::request(settings, job.clone());
        let suffix = TokenSuffix::parse("00000000000000e2").expect("a suffix");
        let rendered =
            render(settings, &request, Some(&source), &suffix, Purpose::Probe { expires })
                .expect("the probe renders");
        for (kind, object) in
            [(Kind::TrainingRuntime, rendered.runtime_copy), (Kind::TrainJob, rendered.train_job)]
        {
            let object: DynamicObject = serde_json::from_value(object).expect("an object");
            Self::api(&self.kube, kind)
                .create(&kube::api::PostParams::default(), &object)
                .await
                .unwrap_or_else(|e| {
                    panic!("the probe's {kind:?} on {}: {e}", self.target.describe())
                });
        }
    }

    /// The plain Kubernetes client the suite checks with.
    pub(crate) fn kube(&self) -> &kube::Client {
        &self.kube
    }

    /// The name of the Workload Kueue made for the TrainJob `uid`.
    pub(crate) async fn workload_of(&self, uid: &str) -> String {
        self.target
            .until("the TrainJob's Workload", async || {
                let all = Self::api(&self.kube, Kind::Workload)
                    .list(&ListParams::default().labels(&format!("{}={uid}", keys::KUEUE_JOB_UID)))
                    .await
                    .map_err(|e| e.to_string())?;
                all.items.first().and_then(|w| w.metadata.name.clone()).ok_or("none yet".into())
            })
            .await
    }

    /// A Backend on its target where `job` has no object left from an earlier run of the
    /// suite.
    pub(crate) async fn for_job(job: &JobId) -> BackendOnTarget {
        let on_target = BackendOnTarget::new().await;
        on_target
            .backend
            .stop_job(&patient_cx(), job)
            .await
            .expect("StopJob of an earlier run's leftovers");
        on_target
    }

    /// [`BackendOnTarget::for_job`] in Kueue mode; `None` where Kueue is not served.
    pub(crate) async fn for_kueue_job(job: &JobId) -> Option<BackendOnTarget> {
        let on_target = BackendOnTarget::in_mode(Mode::Kueue).await?;
        on_target
            .backend
            .stop_job(&patient_cx(), job)
            .await
            .expect("StopJob of an earlier run's leftovers");
        Some(on_target)
    }

    fn api(kube: &kube::Client, kind: Kind) -> Api<DynamicObject> {
        match kind {
            Kind::Node => Api::all_with(kube.clone(), &kind.resource()),
            _ => Api::namespaced_with(kube.clone(), NAMESPACE, &kind.resource()),
        }
    }

    /// When `DISPATCH_KF_E2E_RECORD` names a folder, writes into it what `scenario` ended
    /// with: `<scenario>.observation.json`, what the Backend reported, and
    /// `<scenario>.dump.json`, the namespace's objects and the Nodes as a `kubectl get -o
    /// json` list that `dispatch-kf classify` reads. `cargo xtask fidelity` compares the
    /// records of the two targets; `cargo xtask fixtures cluster` keeps the real ones.
    pub(crate) async fn record(&self, scenario: &str, observation: &ObjectObs) {
        let Some(dir) = std::env::var_os(RECORD_VAR).filter(|v| !v.is_empty()) else { return };
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("the record folder");
        let mut items = Vec::new();
        for kind in [Kind::TrainJob, Kind::JobSet, Kind::Job, Kind::Pod, Kind::Workload, Kind::Node]
        {
            // Kinds the cluster does not serve (Workloads without Kueue) are left out.
            if let Ok(list) = Self::api(&self.kube, kind).list(&ListParams::default()).await {
                for mut object in list.items {
                    object.metadata.managed_fields = None;
                    let mut value = serde_json::to_value(&object).expect("JSON");
                    let resource = kind.resource();
                    value["apiVersion"] = json!(resource.api_version);
                    value["kind"] = json!(resource.kind);
                    items.push(value);
                }
            }
        }
        let dump = json!({"apiVersion": "v1", "kind": "List", "items": items});
        let write = |name: String, value: &Value| {
            let text = serde_json::to_string_pretty(value).expect("JSON") + "\n";
            std::fs::write(dir.join(name), text).expect("the record");
        };
        write(format!("{scenario}.dump.json"), &dump);
        write(
            format!("{scenario}.observation.json"),
            &serde_json::to_value(observation).expect("JSON"),
        );
    }

    /// The objects of `kind` labelled with `job`, as the cluster holds them.
    pub(crate) async fn labelled(&self, kind: Kind, job: &JobId) -> Vec<DynamicObject> {
        let selector = format!("{}={}", keys::LABEL_JOB_ID, job.as_str());
        Self::api(&self.kube, kind)
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap_or_else(|e| panic!("list {kind:?} on {}: {e}", self.target.describe()))
            .items
    }

    /// Requests on the suite's objects of `kind`, as a user other than dispatch sends
    /// them.
    pub(crate) fn objects(&self, kind: Kind) -> Api<DynamicObject> {
        Self::api(&self.kube, kind)
    }

    /// A TrainJob by name.
    pub(crate) async fn train_job(&self, name: &str) -> DynamicObject {
        Self::api(&self.kube, Kind::TrainJob).get(name).await.expect("the TrainJob")
    }

    /// Waits until Find reports `job`'s only object in a state `want` accepts; fails
    /// with what Find last reported.
    pub(crate) async fn until_found(
        &self,
        job: &JobId,
        what: &str,
        want: impl Fn(&ObjectObs) -> bool,
    ) -> ObjectObs {
        self.target
            .until(what, async || {
                let found =
                    self.backend.find(&patient_cx(), job).await.map_err(|e| e.to_string())?;
                match found.objects.as_slice() {
                    [only] if want(only) => Ok(only.clone()),
                    objects => Err(format!("{objects:#?}")),
                }
            })
            .await
    }

    /// The name and phase of each pod of `job` that belongs to the JobSet `name`.
    async fn pods_of(&self, job: &JobId, name: &str) -> Vec<(String, String)> {
        let mut pods = Vec::new();
        for pod in self.labelled(Kind::Pod, job).await {
            let labels = pod.metadata.labels.unwrap_or_default();
            if labels.get(keys::JOBSET_NAME).map(String::as_str) == Some(name) {
                let phase = pod.data["status"]["phase"].as_str().unwrap_or_default().to_owned();
                pods.push((pod.metadata.name.unwrap_or_default(), phase));
            }
        }
        pods
    }

    /// Waits until exactly `count` pods of the TrainJob `name` exist and all run (with
    /// `count` 0: until none is left).
    pub(crate) async fn until_pods_run(&self, job: &JobId, name: &str, count: usize) {
        let what = format!("{count} running pods of {name}");
        self.target
            .until(&what, async || {
                let pods = self.pods_of(job, name).await;
                let running = pods.iter().filter(|(_, phase)| phase == "Running").count();
                if running == count && pods.len() == count {
                    Ok(())
                } else {
                    Err(format!("{pods:?}"))
                }
            })
            .await;
    }
}

/// What Watch has said of a job so far, gathered by a task of its own, as a supervisor
/// would: its evidence outlives pods the cluster has already removed.
pub(crate) struct Watched {
    seen: Arc<Mutex<Vec<ObjectObs>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Watched {
    /// What the Watch has said so far.
    pub(crate) fn seen_now(&self) -> Vec<ObjectObs> {
        self.seen.lock().expect("not poisoned").clone()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BackendOnTarget {
    /// Starts watching `job`; a watch that fails is subscribed to again, as the Watch
    /// contract asks.
    pub(crate) fn watch(&self, job: &JobId) -> Watched {
        Self::watch_with(&self.backend, job)
    }

    /// [`BackendOnTarget::watch`] through `backend`.
    pub(crate) fn watch_with(backend: &KubeflowBackend, job: &JobId) -> Watched {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (backend, job, into) = (backend.clone(), job.clone(), seen.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok(mut stream) = backend.watch(&patient_cx(), &job).await else { continue };
                while let Some(Ok(obs)) = stream.next().await {
                    into.lock().expect("not poisoned").push(obs);
                }
            }
        });
        Watched { seen, task }
    }

    /// Waits until Watch has reported an observation of the job's own objects that
    /// `want` accepts; fails with the last one it reported. Foreign observations are
    /// passed over: Watch reports orphans too, and Start makes the runtime copy before
    /// its TrainJob, so a Find between the two sees the copy as an orphan, ended.
    pub(crate) async fn until_watched(
        &self,
        watched: &Watched,
        what: &str,
        want: impl Fn(&ObjectObs) -> bool,
    ) -> ObjectObs {
        self.target
            .until(what, async || {
                let seen = watched.seen.lock().expect("not poisoned");
                match seen.iter().find(|o| !o.foreign && want(o)) {
                    Some(found) => Ok(found.clone()),
                    None => Err(format!("{:#?}", seen.last())),
                }
            })
            .await
    }

    /// Gives the scenario a node of its own with `gpus` GPUs, tainted so that only
    /// [`Runtime::OnOwnNode`] pods run there; a node of that name left by an earlier run
    /// is replaced.
    pub(crate) async fn own_node(&self, name: &'static str, gpus: u32) {
        self.target.add_node(&self.kube, name, gpus, OWN_NODE_TAINT).await;
        self.target
            .until(&format!("node {name} Ready"), async || {
                let node = Self::api(&self.kube, Kind::Node).get(name).await;
                let node = node.map_err(|e| e.to_string())?;
                let conditions = node.data["status"]["conditions"].as_array().cloned();
                let ready = conditions
                    .unwrap_or_default()
                    .into_iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                if ready { Ok(()) } else { Err(format!("{:#?}", node.data["status"])) }
            })
            .await;
    }

    /// Applies the ClusterQueue `name`, of the shared setup's flavor `default-flavor`,
    /// covering `covered` (a quota of 16 each) and checking every admission with the
    /// setup's `dispatch-readmission`, and a LocalQueue `name` on it in the suite's
    /// namespace. Applied again, it replaces what it covers.
    pub(crate) async fn apply_queue(&self, name: &str, covered: &[&str]) {
        let apply = PatchParams::apply(MANAGER).force();
        let resources: Vec<Value> =
            covered.iter().map(|r| json!({"name": r, "nominalQuota": "16"})).collect();
        let cluster_queue = json!({
            "apiVersion": keys::KUEUE_API_VERSION, "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": covered,
                                    "flavors": [{"name": "default-flavor", "resources": resources}]}],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "dispatch-readmission"}]}
            }
        });
        let local_queue = json!({
            "apiVersion": keys::KUEUE_API_VERSION, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"clusterQueue": name}
        });
        let kueue = |kind: &str, plural: &str| {
            let gvk = kube::api::GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind);
            ApiResource::from_gvk_with_plural(&gvk, plural)
        };
        Api::<DynamicObject>::all_with(self.kube.clone(), &kueue("ClusterQueue", "clusterqueues"))
            .patch(name, &apply, &Patch::Apply(&cluster_queue))
            .await
            .unwrap_or_else(|e| panic!("ClusterQueue {name}: {e}"));
        Api::<DynamicObject>::namespaced_with(
            self.kube.clone(),
            NAMESPACE,
            &kueue("LocalQueue", "localqueues"),
        )
        .patch(name, &apply, &Patch::Apply(&local_queue))
        .await
        .unwrap_or_else(|e| panic!("LocalQueue {name}: {e}"));
    }

    /// When the readmission gate's Lease was last renewed, if it exists.
    pub(crate) async fn gate_lease_renewed(&self) -> Option<jiff::Timestamp> {
        let gvk = kube::api::GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease");
        let leases = ApiResource::from_gvk_with_plural(&gvk, "leases");
        let (namespace, name) = GATE_LEASE;
        let api = Api::<DynamicObject>::namespaced_with(self.kube.clone(), namespace, &leases);
        let lease = api.get_opt(name).await.expect("read the gate's Lease")?;
        lease.data["spec"]["renewTime"].as_str()?.parse().ok()
    }

    /// A Backend made by Factory on the same target in Kueue mode, on the LocalQueue
    /// `queue`.
    pub(crate) async fn backend_on(&self, queue: &str) -> KubeflowBackend {
        Self::factory(&self.target, Mode::Kueue, queue).await
    }

    /// The admission count (`d/admission`) each pod of `job`'s TrainJob `name` carries,
    /// by pod name; `None` for a pod without one.
    pub(crate) async fn pod_admissions(&self, job: &JobId, name: &str) -> Vec<Option<String>> {
        let mut pods: Vec<(String, Option<String>)> = self
            .pods_of_train_job(job, name)
            .await
            .into_iter()
            .map(|p| {
                let annotations = p.metadata.annotations.unwrap_or_default();
                (p.metadata.name.unwrap_or_default(), annotations.get(keys::ANN_ADMISSION).cloned())
            })
            .collect();
        pods.sort();
        pods.into_iter().map(|(_, admission)| admission).collect()
    }

    /// The pods of `job` that belong to its TrainJob `name` (its JobSet's).
    async fn pods_of_train_job(&self, job: &JobId, name: &str) -> Vec<DynamicObject> {
        let mut pods = self.labelled(Kind::Pod, job).await;
        pods.retain(|p| {
            let labels = p.metadata.labels.as_ref();
            labels.and_then(|l| l.get(keys::JOBSET_NAME)).map(String::as_str) == Some(name)
        });
        pods
    }

    /// Deletes the pod `name` at once (no grace period), as an administrator's
    /// `kubectl delete --now` or a node's eviction would.
    pub(crate) async fn delete_pod(&self, name: &str) {
        let now = kube::api::DeleteParams::default().grace_period(0);
        Self::api(&self.kube, Kind::Pod).delete(name, &now).await.expect("delete the pod");
    }

    /// The pods of `job`'s TrainJob `name`, by rank: (pod, node).
    pub(crate) async fn ranks(&self, job: &JobId, name: &str) -> Vec<(String, String)> {
        let mut ranks: Vec<(String, String, String)> = self
            .pods_of_train_job(job, name)
            .await
            .into_iter()
            .map(|p| {
                let labels = p.metadata.labels.clone().unwrap_or_default();
                let index = labels.get(keys::JOB_COMPLETION_INDEX).cloned().unwrap_or_default();
                let node = p.data["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
                (index, p.metadata.name.unwrap_or_default(), node)
            })
            .collect();
        ranks.sort();
        ranks.into_iter().map(|(_, pod, node)| (pod, node)).collect()
    }
}

/// A call context with a deadline five minutes away, as the hold family needs: long
/// enough for a real apiserver's retries. (The testkit's `cx()` has no deadline.)
pub(crate) fn patient_cx() -> CallContext {
    CallContext::with_deadline(std::time::Instant::now() + Duration::from_secs(300))
}
