//! The faults, one after another with a pause of one to four seconds, each drawn from
//! the seed and logged: a process of the control plane killed and started again, or
//! frozen and thawed (through `xtask cluster`); the adapter's connections stalled, cut
//! or slowed (the proxy); a rank out of memory or exiting 3 (its status written as its
//! kubelet would); a pod or a JobSet deleted by hand; a node lost (kwok lets go of it),
//! then taken out of service, deleted and added again under a new name; a rank
//! preempted by the scheduler for a pod of higher priority; a TrainJob applied by hand,
//! as another user of the namespace makes one, and deleted later; in Kueue mode also
//! Kueue preempting for a Workload of higher priority, and the ClusterQueue's GPU
//! quota halved for a while.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dispatch_kf_testkit::Proxy;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::observer::{Observer, Pod};
use crate::report::Log;
use crate::{Args, NS, resource};

/// The kube call `$call` (a future, made anew each time) again while the apiserver is
/// away (a process fault), for up to two minutes; its error as text after that.
macro_rules! retried {
    ($call:expr) => {{
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match $call.await {
                Ok(value) => break Ok::<_, String>(value),
                Err(e) if Instant::now() > deadline => break Err(e.to_string()),
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    }};
}

/// The processes of every run, and those of Kueue mode.
const PROCESSES: [&str; 6] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "jobset",
    "trainer-controller-manager",
];
const KUEUE_PROCESSES: [&str; 3] = ["kueue", "dispatch-kf-gate", "dispatch-kf-gate-2"];
/// kwok's label on the nodes it plays.
const KWOK_MANAGED: (&str, &str) = ("kwok.x-k8s.io/node", "fake");
/// The PriorityClass of the pods that make the scheduler preempt (`main.rs` makes it).
pub(crate) const HIGH_PRIORITY: &str = "dispatch-chaos-high";
/// The label of what the harness makes by hand: preemptors and TrainJobs of another user.
pub(crate) const BY_HAND: (&str, &str) = ("dispatch-chaos/by-hand", "true");
/// The extended resource of a GPU, and how many each node of the run has.
const GPU: &str = "nvidia.com/gpu";
const NODE_GPUS: u32 = 8;
/// How long a preemptor pod or a TrainJob made by hand lives.
const BY_HAND_LIFE: Duration = Duration::from_secs(20);

pub(crate) struct Faults {
    xtask: String,
    kueue: bool,
    processes: Vec<&'static str>,
    kube: kube::Client,
    proxy: Arc<Proxy>,
    log: Arc<Log>,
    rng: fastrand::Rng,
    /// A node loss is being played out.
    losing: Arc<AtomicBool>,
    /// How many objects made by hand are still to be deleted.
    by_hand: Arc<AtomicUsize>,
    /// How many objects were made by hand so far (their names' numbers).
    made: u32,
    /// The ClusterQueue's quota is halved, and not yet set back.
    editing: Arc<AtomicBool>,
}

impl Faults {
    pub(crate) fn new(args: &Args, kube: kube::Client, proxy: Arc<Proxy>, log: Arc<Log>) -> Faults {
        let mut processes = PROCESSES.to_vec();
        if args.kueue {
            processes.extend(KUEUE_PROCESSES);
        }
        Faults {
            xtask: args.xtask.clone(),
            kueue: args.kueue,
            processes,
            kube,
            proxy,
            log,
            rng: fastrand::Rng::with_seed(args.seed),
            losing: Arc::default(),
            by_hand: Arc::default(),
            made: 0,
            editing: Arc::default(),
        }
    }

    /// Injects faults until `until`; returns with every one mended.
    pub(crate) async fn run(mut self, until: Instant, observer: &Observer) {
        // The load first gets going.
        tokio::time::sleep(Duration::from_secs(10)).await;
        while Instant::now() < until {
            let running = observer.running();
            match self.rng.u32(0..100) {
                0..33 => self.process().await,
                33..37 => self.stall_connections().await,
                37..40 => self.cut_connections(),
                40..43 => self.slow_connections().await,
                43..54 => self.end_rank(&running, 137, "OOMKilled", "out-of-memory").await,
                54..65 => self.end_rank(&running, 3, "Error", "exit-3").await,
                65..73 => self.delete_pod(&running).await,
                73..82 => self.delete_job_set().await,
                82..90 => self.lose_node(&running),
                90..95 if self.kueue && self.rng.bool() => self.kueue_preempt().await,
                90..95 => self.preempt(&running).await,
                _ if self.kueue && self.rng.bool() => self.halve_quota().await,
                _ => self.train_job_by_hand().await,
            }
            tokio::time::sleep(Duration::from_millis(self.rng.u64(1000..4000))).await;
        }
        while self.losing.load(Ordering::SeqCst) || self.by_hand.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// A process killed and started again, or frozen and thawed, after one to eight
    /// seconds.
    async fn process(&mut self) {
        let name = self.processes[self.rng.usize(0..self.processes.len())];
        let down = Duration::from_millis(self.rng.u64(1000..8000));
        let (first, then) = if self.rng.bool() { ("kill", "restart") } else { ("freeze", "thaw") };
        self.log.fault(&format!("{first} {name}"), &format!("{first} for {down:.1?}, then {then}"));
        if let Err(e) = self.xtask(&["cluster", first, name]).await {
            self.log.note(e);
        }
        tokio::time::sleep(down).await;
        if let Err(e) = self.xtask(&["cluster", then, name]).await {
            self.log.violation(format!("{then} {name}: {e}"));
        }
    }

    async fn xtask(&self, args: &[&str]) -> Result<(), String> {
        dispatch_kf_testkit::commands::xtask(&self.xtask, args).await
    }

    /// Every connection of the adapter passes nothing for one to ten seconds.
    async fn stall_connections(&mut self) {
        let stall = Duration::from_millis(self.rng.u64(1000..10_000));
        self.log.fault("stall the adapter's connections", &format!("{stall:.1?}"));
        self.proxy.freeze();
        tokio::time::sleep(stall).await;
        self.proxy.thaw();
    }

    /// Every connection of the adapter cut, both ways, whatever it carried.
    fn cut_connections(&mut self) {
        self.log.fault("cut the adapter's connections", "every open one");
        self.proxy.cut();
    }

    /// Every piece the adapter's connections carry waits 100 ms to 2 s, for one to ten
    /// seconds.
    async fn slow_connections(&mut self) {
        let delay = Duration::from_millis(self.rng.u64(100..2000));
        let lasting = Duration::from_millis(self.rng.u64(1000..10_000));
        self.log.fault(
            "slow the adapter's connections",
            &format!("{delay:.1?} a piece for {lasting:.1?}"),
        );
        self.proxy.slow(delay);
        tokio::time::sleep(lasting).await;
        self.proxy.slow(Duration::ZERO);
    }

    fn pick<'a>(&mut self, running: &'a [Pod]) -> Option<&'a Pod> {
        (!running.is_empty()).then(|| &running[self.rng.usize(0..running.len())])
    }

    /// A running rank's container ends `code` (`reason`), as its kubelet would write it.
    async fn end_rank(&mut self, running: &[Pod], code: i32, reason: &str, cause: &'static str) {
        let Some(pod) = self.pick(running) else { return };
        self.log.fault(
            cause,
            &format!("pod {} of job {} submission {}", pod.name, pod.job, pod.submission),
        );
        self.log.injected(&pod.job, pod.submission.parse().unwrap_or(0), cause);
        let pods = self.api("", "v1", "Pod", "pods");
        let Ok(found) = pods.get(&pod.name).await else { return };
        let patch = dispatch_kf_testkit::containers_ended(&found.data, code, reason);
        if let Err(e) =
            pods.patch_status(&pod.name, &PatchParams::default(), &Patch::Merge(&patch)).await
        {
            self.log.note(format!("{cause} of {}: {e}", pod.name));
        }
    }

    /// A running rank's pod deleted by hand.
    async fn delete_pod(&mut self, running: &[Pod]) {
        let Some(pod) = self.pick(running) else { return };
        self.log.fault("pod deleted", &format!("pod {} of job {}", pod.name, pod.job));
        self.log.injected(&pod.job, pod.submission.parse().unwrap_or(0), "pod-deleted");
        let _ = self.api("", "v1", "Pod", "pods").delete(&pod.name, &DeleteParams::default()).await;
    }

    /// One of the namespace's JobSets, running or ended, deleted by hand.
    async fn delete_job_set(&mut self) {
        let job_sets = self.api("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets");
        let Ok(list) = job_sets.list(&ListParams::default()).await else { return };
        if list.items.is_empty() {
            return;
        }
        let job_set = &list.items[self.rng.usize(0..list.items.len())];
        let name = job_set.metadata.name.clone().unwrap_or_default();
        let labels = job_set.metadata.labels.clone().unwrap_or_default();
        let job = labels.get(dispatch_kf_model::keys::LABEL_JOB_ID).cloned().unwrap_or_default();
        let submission =
            labels.get(dispatch_kf_model::keys::LABEL_SUBMISSION).and_then(|s| s.parse().ok());
        self.log.fault("JobSet deleted", &format!("JobSet {name} of job {job}"));
        self.log.injected(&job, submission.unwrap_or(0), "jobset-deleted");
        self.log.job_set_deleted(&job);
        let _ = job_sets.delete(&name, &DeleteParams::background()).await;
    }

    /// A node with a running rank lost; twenty seconds later taken out of service, and
    /// once its pods are gone deleted and added again. One at a time.
    fn lose_node(&mut self, running: &[Pod]) {
        let Some(pod) = self.pick(running) else { return };
        if pod.node.is_empty() || self.losing.swap(true, Ordering::SeqCst) {
            return;
        }
        let node = pod.node.clone();
        self.log.fault("node lost", &format!("node {node}"));
        for pod in running.iter().filter(|p| p.node == node) {
            self.log.injected(&pod.job, pod.submission.parse().unwrap_or(0), "node-lost");
        }
        let (kube, log, losing) = (self.kube.clone(), self.log.clone(), self.losing.clone());
        tokio::spawn(async move {
            if let Err(e) = lose_and_replace(&kube, &node).await {
                log.violation(format!("node {node} could not be lost and added again: {e}"));
            }
            losing.store(false, Ordering::SeqCst);
        });
    }

    /// A pod of higher priority that needs every GPU of a running rank's node: the
    /// scheduler preempts the ranks there. It goes [`BY_HAND_LIFE`] later.
    async fn preempt(&mut self, running: &[Pod]) {
        let Some(pod) = self.pick(running) else { return };
        if pod.node.is_empty() {
            return;
        }
        let node = pod.node.clone();
        self.made += 1;
        let name = format!("chaos-preemptor-{}", self.made);
        self.log.fault("scheduler preemption", &format!("pod {name} on node {node}"));
        for pod in running.iter().filter(|p| p.node == node) {
            self.log.injected(&pod.job, pod.submission.parse().unwrap_or(0), "preempted");
        }
        let gpus = NODE_GPUS.to_string();
        let preemptor = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {BY_HAND.0: BY_HAND.1}},
            "spec": {
                "priorityClassName": HIGH_PRIORITY, "restartPolicy": "Never",
                "nodeSelector": {"kubernetes.io/hostname": node},
                "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "600"],
                                "resources": {"requests": {GPU: &gpus}, "limits": {GPU: &gpus}}}]
            }
        });
        let pods = self.api("", "v1", "Pod", "pods");
        self.made_by_hand(pods, &name, preemptor).await;
    }

    /// A TrainJob another user of the namespace applies: one rank, no GPU, on the
    /// cluster's `torch-distributed`, deleted [`BY_HAND_LIFE`] later. The adapter must
    /// tell it from its own and leave it be.
    async fn train_job_by_hand(&mut self) {
        self.made += 1;
        let name = format!("chaos-by-hand-{}", self.made);
        self.log.fault("TrainJob applied by hand", &format!("TrainJob {name}"));
        let train_job = json!({
            "apiVersion": dispatch_kf_model::keys::TRAINER_API_VERSION, "kind": "TrainJob",
            "metadata": {"name": name, "namespace": NS, "labels": {BY_HAND.0: BY_HAND.1}},
            "spec": {"runtimeRef": {"apiGroup": dispatch_kf_model::keys::TRAINER_GROUP,
                                    "kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
                     "trainer": {"numNodes": 1, "command": ["sleep", "600"]}},
        });
        let train_jobs =
            self.api(dispatch_kf_model::keys::TRAINER_GROUP, "v1alpha1", "TrainJob", "trainjobs");
        self.made_by_hand(train_jobs, &name, train_job).await;
    }

    /// A Workload of higher priority in the run's LocalQueue, needing 32 GPUs of the
    /// ClusterQueue's 64 (the load holds up to 40): Kueue preempts admitted Workloads
    /// of the run for it. Those it preempts are found by their `Preempted` condition in
    /// the next ten seconds, and each one's submission (its TrainJob's name) noted. The
    /// Workload has no pods; it goes [`BY_HAND_LIFE`] later.
    async fn kueue_preempt(&mut self) {
        self.made += 1;
        let name = format!("chaos-kueue-preemptor-{}", self.made);
        self.log.fault("Kueue preemption", &format!("Workload {name}"));
        let workloads = self.api("kueue.x-k8s.io", "v1beta2", "Workload", "workloads");
        let before = preempted(&workloads).await;
        let preemptor = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": NS, "labels": {BY_HAND.0: BY_HAND.1}},
            "spec": {"queueName": NS, "priority": 1_000_000, "podSets": [{
                "name": "main", "count": 4,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox:1.36",
                    "resources": {"requests": {GPU: NODE_GPUS.to_string()}}
                }]}}
            }]}
        });
        self.made_by_hand(workloads.clone(), &name, preemptor).await;
        let until = Instant::now() + Duration::from_secs(10);
        let mut noted = before.clone();
        while Instant::now() < until {
            for (job, submission) in preempted(&workloads).await {
                if noted.insert((job.clone(), submission)) {
                    self.log.injected(&job, submission, "preempted");
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let victims: Vec<String> =
            noted.difference(&before).map(|(job, n)| format!("{job} submission {n}")).collect();
        self.log.note(format!("{name} preempted {}: {victims:?}", victims.len()));
    }

    /// The ClusterQueue's GPU quota halved for [`BY_HAND_LIFE`], then set back: Kueue
    /// admits nothing more meanwhile, and evicts nothing it admitted. One at a time.
    async fn halve_quota(&mut self) {
        if self.editing.swap(true, Ordering::SeqCst) {
            return;
        }
        let queues = Api::<DynamicObject>::all_with(
            self.kube.clone(),
            &resource("kueue.x-k8s.io", "v1beta2", "ClusterQueue", "clusterqueues"),
        );
        let Ok(queue) = queues.get(CLUSTER_QUEUE).await else {
            self.editing.store(false, Ordering::SeqCst);
            return;
        };
        let groups = queue.data["spec"]["resourceGroups"].clone();
        let mut halved = groups.clone();
        for quota in gpu_quotas(&mut halved) {
            let gpus = quota.as_str().and_then(|q| q.parse::<u32>().ok()).unwrap_or(0);
            *quota = json!((gpus / 2).to_string());
        }
        self.log.fault(
            "ClusterQueue edited",
            &format!("{CLUSTER_QUEUE}'s GPU quota halved for {BY_HAND_LIFE:?}"),
        );
        let edit = |groups: &serde_json::Value| json!({"spec": {"resourceGroups": groups}});
        if let Err(e) = queues
            .patch(CLUSTER_QUEUE, &PatchParams::default(), &Patch::Merge(&edit(&halved)))
            .await
        {
            self.log.note(format!("the ClusterQueue could not be edited: {e}"));
            self.editing.store(false, Ordering::SeqCst);
            return;
        }
        self.by_hand.fetch_add(1, Ordering::SeqCst);
        let (by_hand, log, editing) =
            (self.by_hand.clone(), self.log.clone(), self.editing.clone());
        tokio::spawn(async move {
            tokio::time::sleep(BY_HAND_LIFE).await;
            let back = retried!(queues.patch(
                CLUSTER_QUEUE,
                &PatchParams::default(),
                &Patch::Merge(&edit(&groups))
            ));
            if let Err(e) = back {
                log.violation(format!("the ClusterQueue's quota could not be set back: {e}"));
            }
            editing.store(false, Ordering::SeqCst);
            by_hand.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Creates `object` as `name` through `api`, deletes it [`BY_HAND_LIFE`] later (in
    /// the foreground: what it owns goes first), and counts it until it is gone.
    async fn made_by_hand(&self, api: Api<DynamicObject>, name: &str, object: serde_json::Value) {
        let object: DynamicObject = serde_json::from_value(object).expect("an object");
        if let Err(e) = api.create(&Default::default(), &object).await {
            self.log.note(format!("{name} could not be made: {e}"));
            return;
        }
        self.by_hand.fetch_add(1, Ordering::SeqCst);
        let (by_hand, log, name) = (self.by_hand.clone(), self.log.clone(), name.to_owned());
        tokio::spawn(async move {
            tokio::time::sleep(BY_HAND_LIFE).await;
            let gone = retried!(async {
                match api.delete(&name, &DeleteParams::foreground().grace_period(0)).await {
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    other => other.map(drop),
                }
            });
            let gone = match gone {
                Ok(()) => retried!(async {
                    match api.get_opt(&name).await {
                        Ok(Some(_)) => Err("still there".to_owned()),
                        Ok(None) => Ok(()),
                        Err(e) => Err(e.to_string()),
                    }
                }),
                Err(e) => Err(e),
            };
            if let Err(e) = gone {
                log.violation(format!("{name}, made by hand, could not be deleted: {e}"));
            }
            by_hand.fetch_sub(1, Ordering::SeqCst);
        });
    }

    fn api(&self, group: &str, version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.kube.clone(), NS, &resource(group, version, kind, plural))
    }
}

/// The ClusterQueue the run's LocalQueue admits through (`kueue-setup.json`).
const CLUSTER_QUEUE: &str = "gpu";

/// The GPU `nominalQuota` fields of a ClusterQueue's `spec.resourceGroups`.
fn gpu_quotas(groups: &mut serde_json::Value) -> Vec<&mut serde_json::Value> {
    let mut quotas = Vec::new();
    for group in groups.as_array_mut().into_iter().flatten() {
        for flavor in group["flavors"].as_array_mut().into_iter().flatten() {
            for resource in flavor["resources"].as_array_mut().into_iter().flatten() {
                if resource["name"] == GPU {
                    quotas.push(&mut resource["nominalQuota"]);
                }
            }
        }
    }
    quotas
}

/// The submissions (job, submission) whose Workload Kueue has preempted: a `Preempted`
/// condition that is true, the submission read from its TrainJob owner's name.
async fn preempted(workloads: &Api<DynamicObject>) -> std::collections::BTreeSet<(String, u32)> {
    let Ok(list) = workloads.list(&ListParams::default()).await else { return Default::default() };
    list.items
        .iter()
        .filter(|w| {
            let conditions = w.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
            conditions.iter().any(|c| c["type"] == "Preempted" && c["status"] == "True")
        })
        .filter_map(|w| {
            let owners = w.metadata.owner_references.as_ref()?;
            let owner = owners.iter().find(|o| o.kind == "TrainJob")?;
            let (job, submission) = dispatch_kf_model::names::parse(&owner.name)?;
            Some((job.to_string(), submission))
        })
        .collect()
}

/// The node stops reporting (kwok's label taken off), is tainted out of service after
/// twenty seconds, and once its pods are gone is deleted and added again as it was,
/// named `<name>-again`.
async fn lose_and_replace(kube: &kube::Client, name: &str) -> Result<(), String> {
    let nodes = Api::<DynamicObject>::all_with(kube.clone(), &resource("", "v1", "Node", "nodes"));
    let pods = Api::<DynamicObject>::all_with(kube.clone(), &resource("", "v1", "Pod", "pods"));
    let before = retried!(nodes.get(name))?;
    let unlabel = json!({"metadata": {"labels": {KWOK_MANAGED.0: null}}});
    retried!(nodes.patch(name, &PatchParams::default(), &Patch::Merge(&unlabel)))?;
    tokio::time::sleep(Duration::from_secs(20)).await;
    retried!(async {
        let node = nodes.get(name).await?;
        let mut taints = node.data["spec"]["taints"].as_array().cloned().unwrap_or_default();
        taints.push(json!({"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}));
        let patch = json!({"metadata": {"resourceVersion": node.metadata.resource_version}, "spec": {"taints": taints}});
        nodes.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await
    })?;
    let on_node = ListParams::default().fields(&format!("spec.nodeName={name}"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while retried!(pods.list(&on_node))?
        .items
        .iter()
        .any(|p| p.metadata.namespace.as_deref() == Some(NS))
    {
        if Instant::now() > deadline {
            return Err(
                "its pods are still there two minutes after the out-of-service taint".into()
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    retried!(nodes.delete(name, &DeleteParams::default()))?;
    while retried!(nodes.get_opt(name))?.is_some() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Added again under a name of its own: the lost one stays deleted, so Ceased of an
    // execution that ran there keeps saying so.
    let again = format!("{name}-again");
    let mut labels = before.metadata.labels.unwrap_or_default();
    labels.insert("kubernetes.io/hostname".to_owned(), again.clone());
    labels.insert(KWOK_MANAGED.0.to_owned(), KWOK_MANAGED.1.to_owned());
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": again, "labels": labels},
        "status": {"allocatable": before.data["status"]["allocatable"], "capacity": before.data["status"]["capacity"]}
    });
    let node: DynamicObject = serde_json::from_value(node).map_err(|e| e.to_string())?;
    retried!(nodes.create(&Default::default(), &node))?;
    Ok(())
}
