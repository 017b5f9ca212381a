//! The stage a scenario plays on: a simulated cluster started in this process, a real
//! Backend made by Factory on it, and a Watch on the job kept open for the whole
//! scenario (it is also how the Backend keeps the evidence of deleted pods).
//!
//! Each supervisor step is a real Backend call; each cluster step is something the
//! simulated cluster's scheduler, kubelet or administrator does. After every step the
//! stage narrates what changed in the cluster; [`Stage::expect`] then narrates what
//! Watch reports until the story's next state arrives.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use dispatch_core::{
    Backend, CallContext, Cessation, CessationSignal, Error, JobId, ObjectKind, ObjectObs,
    ObjectRef, OutputStream, Result, StartRequest, Watcher,
};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_model::internal::capabilities::Writability;
use dispatch_kf_model::{Settings, keys};
use dispatch_kf_sim::{Sim, SimOptions};
use futures::StreamExt;
use jiff::Timestamp;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::cluster::{Followed, NS};
use super::narrate::{Narration, since};

/// The demo's job.
const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";
/// The cluster: this many nodes of [`GPUS`] GPUs.
const NODES: u32 = 4;
const GPUS: u32 = 8;
/// The GPUs the demo's job asks for: 2 nodes of 8.
const JOB_GPUS: u32 = 16;
/// How long a step waits, in real time, for Watch to report what the story expects.
const PATIENCE: Duration = Duration::from_secs(15);
/// What the Watch task forwards.
type Reports = mpsc::UnboundedReceiver<Result<ObjectObs>>;

/// One rank of a running TrainJob: its pod and the node it is bound to.
pub(crate) struct Rank {
    pub(crate) pod: String,
    pub(crate) node: String,
}

/// A scenario's cluster, Backend and Watch.
pub(crate) struct Stage<'n> {
    n: &'n mut Narration,
    pub(crate) sim: Sim,
    backend: KubeflowBackend,
    job: JobId,
    start: Timestamp,
    reports: Reports,
    watching: tokio::task::JoinHandle<()>,
    /// The cluster's objects as the narration last described them.
    objects: Followed,
    /// Set by Start until Watch reports the new TrainJob: see [`Stage::expect_count`].
    starting: bool,
    /// The last observation narrated per object UID (a renewed Watch sends them again).
    last: BTreeMap<String, ObjectObs>,
    /// The readmission gate controller of a Kueue stage; it stops with the stage.
    _gate: Option<dispatch_kf_gate::Running>,
}

/// Whether the readmission gate controller holds its Lease and has marked its
/// AdmissionCheck Active.
fn gate_serves(sim: &Sim) -> bool {
    let held = sim
        .get("leases", "dispatch-system", "dispatch-readmission-gate")
        .is_some_and(|l| l["spec"]["holderIdentity"].is_string());
    let active = sim
        .get("admissionchecks", "", "dispatch-readmission")
        .is_some_and(|c| dispatch_kf_model::internal::json::has_true_condition(&c, "Active"));
    held && active
}

impl Drop for Stage<'_> {
    fn drop(&mut self) {
        self.watching.abort();
    }
}

fn sim_failed(e: impl std::fmt::Display) -> Error {
    Error::unreachable(format!("demo: the simulated cluster failed: {e}"))
}

/// Factory on the simulated cluster, as its administrator.
async fn backend(sim: &Sim, settings: Settings) -> Result<KubeflowBackend> {
    let config = crate::sim::admin_config(sim).await?;
    let cluster = dispatch_kf_client::Cluster::from_kube_config(config, Duration::from_secs(10))?;
    KubeflowBackend::with_cluster(settings, cluster, &deadline()).await
}

/// A call context with a deadline, as the hold family needs.
fn deadline() -> CallContext {
    CallContext::with_deadline(Instant::now() + Duration::from_secs(30))
}

/// Forwards every observation of `job`'s Watch, subscribing again when a stream ends.
fn watch(backend: KubeflowBackend, job: JobId) -> (Reports, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let forever = CallContext::background();
        loop {
            let mut stream = match backend.watch(&forever, &job).await {
                Ok(stream) => stream,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            while let Some(obs) = stream.next().await {
                let failed = obs.is_err();
                if tx.send(obs).is_err() || failed {
                    return;
                }
            }
        }
    });
    (rx, task)
}

impl<'n> Stage<'n> {
    /// A cluster without Kueue and a plain-mode Backend on it, watching the demo's job.
    pub(crate) async fn plain(n: &'n mut Narration) -> Result<Stage<'n>> {
        let options = SimOptions {
            unserved: vec![keys::KUEUE_API_VERSION.to_owned()],
            ..SimOptions::default()
        };
        let sim = Sim::start_demo(options, NODES, GPUS).await.map_err(sim_failed)?;
        Stage::on(n, sim, None, json!({}), "no Kueue").await
    }

    /// A cluster with Kueue and dispatch's readmission gate controller running in this
    /// process, and a Backend in Kueue mode on the LocalQueue `team-a`. The gate renews
    /// its Lease on the virtual clock and the adapter checks it against the wall
    /// clock, so this cluster's clock starts at the wall clock's now.
    pub(crate) async fn kueue(n: &'n mut Narration) -> Result<Stage<'n>> {
        let options = SimOptions { start: Timestamp::now(), ..SimOptions::default() };
        let sim = Sim::start_demo(options, NODES, GPUS).await.map_err(sim_failed)?;
        // Quota for one job: a preemptor takes it all, so the victim waits for it.
        sim.install_kueue(JOB_GPUS).map_err(sim_failed)?;
        let gate = crate::sim::start_gate(&sim).await?;
        let waited = Instant::now();
        while !gate_serves(&sim) {
            if waited.elapsed() > PATIENCE {
                return Err(Error::unreachable("demo: the readmission gate did not start"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let kueue = json!({"mode": "kueue", "kueue": {"queue": "team-a"}});
        Stage::on(
            n,
            sim,
            Some(gate),
            kueue,
            "Kueue (a ClusterQueue of 16 GPUs, LocalQueue team-a) and dispatch's readmission \
             gate controller",
        )
        .await
    }

    /// The stage on `sim`, with a Backend made with the demo's settings and `extra`.
    async fn on(
        n: &'n mut Narration,
        sim: Sim,
        gate: Option<dispatch_kf_gate::Running>,
        extra: Value,
        queueing: &str,
    ) -> Result<Stage<'n>> {
        let mut settings = json!({
            "name": "demo", "namespace": NS,
            "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}],
        });
        for (key, value) in extra.as_object().into_iter().flatten() {
            settings[key] = value.clone();
        }
        let mode = if gate.is_some() { "Kueue" } else { "plain" };
        let settings = Settings::from_value(&settings)?;
        let backend = backend(&sim, settings).await?;
        let job = JobId::parse(JOB)?;
        let start = sim.now();
        let (reports, watching) = watch(backend.clone(), job.clone());
        let mut stage = Stage {
            n,
            sim,
            backend,
            job,
            start,
            reports,
            watching,
            objects: Followed::default(),
            last: BTreeMap::new(),
            starting: false,
            _gate: gate,
        };
        let access = match &stage.backend.preflight().access {
            Writability::Writable => "writable".to_owned(),
            Writability::ReadOnly => "read-only".to_owned(),
            Writability::ObserveOnly { missing } => format!("observe-only ({missing})"),
        };
        stage.event(
            "cluster",
            &format!(
                "a simulated cluster in this process: {NODES} nodes of {GPUS} GPUs (gpu-0 to gpu-{}), \
                 Kubeflow Trainer's torch-distributed runtime, {queueing}",
                NODES - 1
            ),
        );
        stage.n.under(&format!(
            "the adapter: {mode} mode, namespace {NS}; Factory ran its preflight probe: {access}"
        ));
        stage.n.under(&format!("the supervisor watches job {JOB}"));
        stage.objects.update(&stage.sim);
        Ok(stage)
    }

    /// The narration, for notes between steps.
    pub(crate) fn note(&mut self, text: &str) {
        self.n.note(text);
    }

    fn event(&mut self, who: &str, what: &str) {
        let elapsed = since(self.start, self.sim.now());
        self.n.event(elapsed, who, what);
    }

    /// Moves the virtual clock.
    pub(crate) fn advance(&mut self, by: Duration) {
        self.sim.advance(by);
    }

    /// Narrates what appeared, changed and went in the cluster since the last step.
    fn changes(&mut self) {
        for line in self.objects.update(&self.sim) {
            self.n.under(&line);
        }
    }

    /// Something the cluster does; `act` says whether it found what it acts on.
    pub(crate) fn cluster(&mut self, what: &str, act: impl FnOnce(&Sim) -> bool) -> Result<()> {
        self.event("cluster", what);
        if !act(&self.sim) {
            return Err(Error::unreachable(format!(
                "demo: the simulated cluster could not: {what}"
            )));
        }
        self.changes();
        Ok(())
    }

    /// Like [`Stage::cluster`], with every change made before the controllers react, so
    /// that they happen at one instant.
    pub(crate) fn cluster_at_once(
        &mut self,
        what: &str,
        act: impl FnOnce(&Sim) -> bool,
    ) -> Result<()> {
        self.cluster(what, |sim| {
            sim.set_auto_settle(false);
            let done = act(sim);
            sim.set_auto_settle(true);
            sim.settle();
            done
        })
    }

    /// A supervisor step: a Backend call, its answer, and what changed.
    async fn call<T>(&mut self, what: &str, call: impl Future<Output = Result<T>>) -> Result<T> {
        self.event("supervisor", what);
        let answer = call.await;
        if let Err(e) = &answer {
            self.n.under(&format!("-> refused: {}: {}", e.kind(), e.message()));
        }
        self.changes();
        answer
    }

    /// Start: submission `submission` of the demo's job, two nodes of eight GPUs.
    pub(crate) async fn start(&mut self, submission: u32) -> Result<ObjectRef> {
        let request: StartRequest = serde_json::from_value(json!({
            "job": JOB, "generation": 0, "submission": submission, "attempt": 1,
            "spec": {
                "command": ["python", "train.py"], "nodes": 2, "gpusPerNode": 8,
                "extensions": {
                    "dispatch/Image": {"ref": "ghcr.io/acme/train:1.4"},
                    "kubeflow/RuntimeRef": {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}
                }
            }
        }))
        .map_err(|e| Error::invalid(format!("demo: the start request: {e}")))?;
        let b = self.backend.clone();
        let what = format!(
            "Start submission {submission}: python train.py on 2 nodes x 8 GPUs, runtime torch-distributed"
        );
        let object = self.call(&what, async move { b.start(&deadline(), &request).await }).await?;
        self.starting = true;
        self.n.under(&format!("-> {}", crate::connect::format_ref(&object)));
        Ok(object)
    }

    /// Open: lifts the start gate.
    pub(crate) async fn open(&mut self, object: &ObjectRef) -> Result<()> {
        let (b, o) = (self.backend.clone(), object.clone());
        self.call("Open: lift the start gate", async move { b.open(&deadline(), &o).await }).await
    }

    /// Hold instance `k`; the answer is returned, a refusal narrated.
    pub(crate) async fn hold(&mut self, object: &ObjectRef, k: u64) -> Result<()> {
        let (b, o) = (self.backend.clone(), object.clone());
        let what = format!("Hold instance {k} of {}", object.name);
        self.call(&what, async move { b.hold(&deadline(), &o, k).await }).await
    }

    /// Release instance `k`.
    pub(crate) async fn release(&mut self, object: &ObjectRef, k: u64) -> Result<()> {
        let (b, o) = (self.backend.clone(), object.clone());
        let what = format!("Release instance {k} of {}", object.name);
        self.call(&what, async move { b.release(&deadline(), &o, k).await }).await
    }

    /// Stop one object.
    pub(crate) async fn stop(&mut self, object: &ObjectRef) -> Result<()> {
        let (b, o) = (self.backend.clone(), object.clone());
        let what = format!("Stop {} (background deletion)", object.name);
        self.call(&what, async move { b.stop(&deadline(), &o).await }).await
    }

    /// StopJob: everything of the job, waiting until nothing remains.
    pub(crate) async fn stop_job(&mut self) -> Result<()> {
        let (b, job) = (self.backend.clone(), self.job.clone());
        let what = format!("StopJob {JOB}: stop everything of the job and wait until it is gone");
        self.call(&what, async move { b.stop_job(&deadline(), &job).await }).await?;
        self.n.under("-> done: nothing of the job remains");
        Ok(())
    }

    /// CessationSignal: whether every node of the object's last execution has ceased.
    pub(crate) async fn ceased(&mut self, object: &ObjectRef) -> Result<Cessation> {
        let (b, o) = (self.backend.clone(), object.clone());
        let what = format!("Ceased {}: can its last execution still run anywhere?", object.name);
        let cessation = self.call(&what, async move { b.ceased(&deadline(), &o).await }).await?;
        let nodes: Vec<String> =
            cessation.nodes.iter().map(|n| format!("{} {}", n.node, n.state)).collect();
        let answer = if cessation.ceased { "yes" } else { "no" };
        self.n.under(&format!("-> ceased: {answer} ({})", nodes.join("; ")));
        Ok(cessation)
    }

    /// Find: every object of the job, narrated for `step`.
    pub(crate) async fn find(&mut self, step: &'static str) -> Result<Vec<ObjectObs>> {
        let (b, job) = (self.backend.clone(), self.job.clone());
        let found = self
            .call("Find: every object of the job", async move { b.find(&deadline(), &job).await });
        let found = found.await?;
        if found.objects.is_empty() {
            self.n.under("-> nothing of the job remains");
        }
        for obs in &found.objects {
            self.n.report(step, "Find", obs);
        }
        Ok(found.objects)
    }

    /// Output: rank 0's log of the submission's current execution, narrated.
    pub(crate) async fn output(&mut self, submission: u32) -> Result<String> {
        let (b, job) = (self.backend.clone(), self.job.clone());
        let what = format!("Output: rank 0's log of submission {submission}");
        let read = async move {
            let mut log =
                b.output(&deadline(), &job, submission, OutputStream::Stdout, false).await?;
            let mut bytes = Vec::new();
            while let Some(chunk) = log.next().await {
                bytes.extend_from_slice(&chunk?);
            }
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        let text = self.call(&what, read).await?;
        for line in text.lines() {
            self.n.under(&format!("| {line}"));
        }
        Ok(text)
    }

    /// Narrates what Watch reports until one observation satisfies `done`; fails when
    /// none does within [`PATIENCE`].
    pub(crate) async fn expect(
        &mut self,
        step: &'static str,
        want: &str,
        done: impl Fn(&ObjectObs) -> bool,
    ) -> Result<ObjectObs> {
        let mut matched = self.expect_count(step, want, 1, done).await?;
        Ok(matched.remove(0))
    }

    /// Narrates what Watch reports until `count` observations satisfy `done`.
    pub(crate) async fn expect_count(
        &mut self,
        step: &'static str,
        want: &str,
        count: usize,
        done: impl Fn(&ObjectObs) -> bool,
    ) -> Result<Vec<ObjectObs>> {
        let mut matched = Vec::new();
        while matched.len() < count {
            let next = tokio::time::timeout(PATIENCE, self.reports.recv()).await;
            let obs = match next {
                Err(_) => {
                    return Err(Error::unreachable(format!(
                        "demo: Watch did not report {want} within {}s",
                        PATIENCE.as_secs()
                    )));
                }
                Ok(None) => return Err(Error::unreachable("demo: the Watch task ended")),
                Ok(Some(Err(e))) => return Err(e.context("demo: Watch")),
                Ok(Some(Ok(obs))) => obs,
            };
            let repeat = self.last.get(&obs.object.uid).is_some_and(|l| same(l, &obs));
            self.last.insert(obs.object.uid.clone(), obs.clone());
            // While Start runs, Watch may report a part of the new TrainJob as an
            // orphan for a moment: the runtime copy is created before the TrainJob, and
            // a Find whose list of TrainJobs came just before the TrainJob was created
            // sees its JobSet without it. Whether Watch catches that moment is a race;
            // the narration leaves such orphans out until the TrainJob is reported, so
            // that every run tells the same story (docs/demo.md).
            let mid_start = self.starting && obs.object.kind != ObjectKind::TrainJob && obs.foreign;
            if obs.object.kind == ObjectKind::TrainJob {
                self.starting = false;
            }
            if repeat || mid_start {
                continue;
            }
            self.n.report(step, "Watch", &obs);
            if done(&obs) {
                matched.push(obs);
            }
        }
        Ok(matched)
    }

    /// The ranks of a running TrainJob, rank 0 first.
    pub(crate) fn ranks(&self, object: &ObjectRef) -> Vec<Rank> {
        let mut pods: Vec<(String, Rank)> = self
            .sim
            .list("pods", NS)
            .iter()
            .filter(|p| p["metadata"]["labels"][keys::JOBSET_NAME] == object.name.as_str())
            .map(|p| {
                let text = |ptr: &str| p.pointer(ptr).and_then(Value::as_str).unwrap_or("");
                let index = text(&format!(
                    "/metadata/labels/{}",
                    keys::JOB_COMPLETION_INDEX.replace('/', "~1")
                ));
                let rank = Rank {
                    pod: text("/metadata/name").to_owned(),
                    node: text("/spec/nodeName").to_owned(),
                };
                (index.to_owned(), rank)
            })
            .collect();
        pods.sort_by(|a, b| a.0.cmp(&b.0));
        pods.into_iter().map(|(_, r)| r).collect()
    }
}

/// Two observations alike but for the time they were seen.
fn same(a: &ObjectObs, b: &ObjectObs) -> bool {
    ObjectObs { seen_at: b.seen_at, ..a.clone() } == *b
}

/// Fails the scenario, naming what the adapter reported instead, unless `ok`.
pub(crate) fn require(ok: bool, want: &str, obs: &ObjectObs) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::unreachable(format!(
            "demo: expected {want}, but the adapter reported {} with cause {}: {}",
            obs.state, obs.cause.kind, obs.cause.detail
        )))
    }
}
