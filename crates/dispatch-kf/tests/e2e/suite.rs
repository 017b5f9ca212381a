//! What the suite fixes, so that a kubeconfig is its only cluster-specific input: the
//! namespace, the runtime it brings, the image, the programs its pods run, the settings,
//! and the plain Kubernetes reads that check what the Backend says.

use dispatch_core::{Backend, CallContext, JobId, JobSpec, ObjectObs, StartRequest};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_client::Cluster;
use dispatch_kf_model::{Settings, keys};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::target::Target;

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
}

/// The working directory [`Program::MissingWorkdir`] asks for.
pub(crate) const MISSING_WORKDIR: &str = "/nonexistent/dispatch-e2e";

impl Program {
    /// Every program.
    pub(crate) const ALL: [Program; 5] = [
        Program::Sleep,
        Program::Succeed,
        Program::Fail,
        Program::ExhaustMemory,
        Program::MissingWorkdir,
    ];

    /// The job's command.
    pub(crate) fn command(self) -> &'static [&'static str] {
        match self {
            Program::Sleep | Program::MissingWorkdir => &["sleep", "600"],
            Program::Succeed => &["sh", "-c", "exit 0"],
            Program::Fail => &["sh", "-c", "exit 1"],
            Program::ExhaustMemory => &["sh", "-c", "tail /dev/zero"],
        }
    }

    /// The job's working directory.
    pub(crate) fn work_dir(self) -> Option<&'static str> {
        (self == Program::MissingWorkdir).then_some(MISSING_WORKDIR)
    }

    /// What it leaves in its termination log: the prologue's words when it finds no
    /// working directory (`dispatch_kf_model::prologue`), nothing otherwise.
    pub(crate) fn message(self) -> String {
        match self.work_dir() {
            Some(dir) => format!("dispatch-prologue: working directory {dir} does not exist\n"),
            None => String::new(),
        }
    }

    /// How a rank running it ends by itself: its exit code and the runtime's reason.
    pub(crate) fn ending(self) -> Option<(i64, &'static str)> {
        match self {
            Program::Sleep => None,
            Program::Succeed => Some((0, "Completed")),
            Program::Fail => Some((1, "Error")),
            Program::ExhaustMemory => Some((137, "OOMKilled")),
            Program::MissingWorkdir => Some((125, "Error")),
        }
    }
}

/// The suite's runtime: the Trainer's torch shape, stating what dispatch requires of a
/// runtime (`restartPolicy: Never`, `backoffLimit: 0`), which the Trainer's stock
/// `torch-distributed` does not.
fn runtime() -> Value {
    json!({
        "apiVersion": keys::TRAINER_API_VERSION, "kind": keys::KIND_TRAINING_RUNTIME,
        "metadata": {"name": RUNTIME, "namespace": NAMESPACE,
                     "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "template": {
                    "metadata": {"labels": {(keys::TRAINER_ANCESTOR_STEP): keys::TRAINER_STEP}},
                    "spec": {"backoffLimit": 0, "template": {"spec": {
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 5,
                        "containers": [{"name": keys::NODE_CONTAINER, "image": IMAGE,
                                        "command": ["sh", "-c", "echo runtime default"]}]
                    }}}
                }
            }]}}
        }
    })
}

/// The LocalQueue Kueue-mode scenarios submit to, in the suite's namespace, on the
/// ClusterQueue `gpu` of the Kueue setup (`fixtures/cluster/kueue-setup.json`).
pub(crate) const QUEUE: &str = "dispatch-e2e";

/// The adapter's mode a scenario runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Plain: the start gate is `spec.suspend`.
    Plain,
    /// Kueue: jobs queue in [`QUEUE`] and are admitted through the readmission gate.
    Kueue,
}

/// The settings every scenario's Backend is made with.
fn settings(mode: Mode) -> Settings {
    let runtime = json!({"kind": keys::KIND_TRAINING_RUNTIME, "name": RUNTIME});
    let mut settings = json!({
        "name": "kubeflow-e2e",
        "namespace": NAMESPACE,
        "runtimes": [runtime],
        "timeouts": {"request": "30s", "workload": "3s", "stopJob": "5m", "callBound": "90s"},
    });
    if mode == Mode::Kueue {
        settings["mode"] = json!("kueue");
        settings["kueue"] = json!({"queue": QUEUE});
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
    serde_json::from_value(json!({
        "job": job.as_str(), "generation": 3, "submission": 1, "attempt": 1,
        "spec": {
            "command": program.command(), "workDir": program.work_dir(),
            "nodes": 2, "gpusPerNode": 0, "timeLimit": "15m",
            "extensions": {
                "dispatch/Image": {"ref": IMAGE},
                (keys::EXT_RUNTIME_REF): {"kind": keys::KIND_TRAINING_RUNTIME, "name": RUNTIME}
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
    pub(crate) const ALL: [Kind; 4] =
        [Kind::TrainJob, Kind::TrainingRuntime, Kind::JobSet, Kind::Pod];

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

/// One scenario's world: the target, a Backend made by Factory on it, and a plain
/// Kubernetes client for checking what the Backend says.
pub(crate) struct World {
    /// Where it runs.
    pub(crate) target: Target,
    /// The Backend under test.
    pub(crate) backend: KubeflowBackend,
    kube: kube::Client,
}

impl World {
    /// Picks the target, makes the namespace and the runtime, and runs Factory.
    pub(crate) async fn new() -> World {
        World::in_mode(Mode::Plain).await.expect("plain mode runs anywhere")
    }

    /// [`World::new`] in `mode`; `None` in Kueue mode on a cluster that does not serve
    /// Kueue's API, where a Kueue scenario has nothing to prove.
    pub(crate) async fn in_mode(mode: Mode) -> Option<World> {
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
        Self::api(&kube, Kind::TrainingRuntime)
            .patch(RUNTIME, &apply, &Patch::Apply(&runtime()))
            .await
            .expect("the suite's runtime");
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
        let cluster = Cluster::from_kube_config(config, std::time::Duration::from_secs(30))
            .expect("a client for the adapter");
        let backend = KubeflowBackend::with_cluster(settings(mode), cluster, &cx())
            .await
            .unwrap_or_else(|e| panic!("Factory on {}: {e}", target.describe()));
        Some(World { target, backend, kube })
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

    /// A world where `job` has no object left from an earlier run of the suite.
    pub(crate) async fn for_job(job: &JobId) -> World {
        let world = World::new().await;
        world.backend.stop_job(&cx(), job).await.expect("StopJob of an earlier run's leftovers");
        world
    }

    /// [`World::for_job`] in Kueue mode; `None` where Kueue is not served.
    pub(crate) async fn for_kueue_job(job: &JobId) -> Option<World> {
        let world = World::in_mode(Mode::Kueue).await?;
        world.backend.stop_job(&cx(), job).await.expect("StopJob of an earlier run's leftovers");
        Some(world)
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
                let found = self.backend.find(&cx(), job).await.map_err(|e| e.to_string())?;
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

/// A call context with a deadline, as the hold family needs: long enough for a real
/// apiserver's retries.
pub(crate) fn cx() -> CallContext {
    CallContext::with_deadline(std::time::Instant::now() + std::time::Duration::from_secs(300))
}
