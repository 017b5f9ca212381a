//! The Backend's shared watches (`docs/backend.md#shared-watches-and-the-name-index`):
//! one watch per kind in the namespace, whatever the number of Watch calls and Finds,
//! each event routed to the jobs it concerns, and an index of the names of every
//! TrainJob, JobSet and runtime copy by job, from which Find learns the names of
//! objects whose label was stripped without listing the namespace.
//!
//! A kind's watch starts the first time a Watch or a StopJob needs it (never for a
//! Find: a Backend made for one call must not read the whole namespace) and runs as
//! long as the Backend lives. When it ends with an error (its apiserver stayed unreachable), the
//! error ends every Watch open on it, the next call that needs the kind starts it anew,
//! and its index is not read meanwhile.

use std::collections::{BTreeSet, HashMap};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dispatch_core::{CallContext, Error, JobId, Result};
use dispatch_kf_client::resources::{JOB_SET, POD, TRAIN_JOB, TRAINING_RUNTIME, WORKLOAD};
use dispatch_kf_client::{Change, Changes, Cluster, KnownNames, Resource};
use dispatch_kf_model::view::{Pod, View};
use dispatch_kf_model::{Mode, keys, names};
use futures::StreamExt;
use tokio::sync::{Notify, mpsc};
use tokio::task::AbortHandle;

use crate::edge;

/// What a kind's watch asks for.
#[derive(Clone, Copy, Debug)]
struct Feed {
    resource: Resource,
    /// Whole objects (a deleted pod's last state is evidence), or metadata only.
    whole: bool,
    /// The label selector.
    selector: &'static str,
}

/// The kinds whose names Find learns from the index.
const INDEXED: [Feed; 3] = [
    Feed { resource: TRAIN_JOB, whole: false, selector: "" },
    Feed { resource: JOB_SET, whole: false, selector: "" },
    Feed { resource: TRAINING_RUNTIME, whole: false, selector: "" },
];
/// The job's pods, whole: only pods that carry a job-id label.
const PODS: Feed = Feed { resource: POD, whole: true, selector: keys::LABEL_JOB_ID };
/// Kueue's Workloads, by the UID of the TrainJob they admit.
const WORKLOADS: Feed = Feed { resource: WORKLOAD, whole: false, selector: "" };

/// What a Watch of a job is told.
#[derive(Debug)]
pub(crate) enum Routed {
    /// An object of the job changed, or a watch listed anew (changes may have been
    /// missed): look again.
    Touched,
    /// A pod of the job was deleted: its last state.
    PodDeleted(Box<Pod>),
    /// A watch the Watch relies on ended with this error.
    Failed(Error),
}

/// The shared watches of one Backend.
pub(crate) struct Hub {
    cluster: Cluster,
    namespace: String,
    mode: Mode,
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Woken whenever a kind's watch becomes live or fails.
    phase_changed: Notify,
}

#[derive(Default)]
struct State {
    kinds: HashMap<&'static str, Kind>,
    /// The Watches open, by job.
    subscribers: HashMap<JobId, Vec<Subscriber>>,
    next_id: u64,
}

/// One kind's watch.
struct Kind {
    phase: Phase,
    /// Stops the watch's task when the hub goes.
    task: AbortHandle,
    index: Index,
}

enum Phase {
    /// Listing for the first time.
    Listing,
    /// Listed; changes arrive.
    Live,
    /// Ended with this error.
    Failed(Error),
}

/// The objects of one kind that belong to a job, by name: the jobs each belongs to
/// (Find's rule, [`names::jobs_of`]), which its changes concern.
#[derive(Default)]
struct Index {
    by_name: HashMap<String, Entry>,
    /// For each job, the names of its objects by Find's rule.
    names_by_job: HashMap<JobId, BTreeSet<String>>,
    /// For each UID, the jobs of its object (TrainJobs: a Workload names its TrainJob's
    /// UID).
    jobs_by_uid: HashMap<String, Vec<JobId>>,
}

struct Entry {
    uid: String,
    /// The jobs whose objects it is, by name or job-id label.
    jobs: Vec<JobId>,
}

struct Subscriber {
    id: u64,
    tx: mpsc::UnboundedSender<Routed>,
}

/// One Watch's share of the hub: routed events arrive on `rx` until it is dropped.
pub(crate) struct Subscription {
    pub(crate) rx: mpsc::UnboundedReceiver<Routed>,
    shared: Arc<Shared>,
    job: JobId,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if let Some(subs) = state.subscribers.get_mut(&self.job) {
            subs.retain(|s| s.id != self.id);
            if subs.is_empty() {
                state.subscribers.remove(&self.job);
            }
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        for kind in self.shared.lock().kinds.values() {
            kind.task.abort();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Hub {
    pub(crate) fn new(cluster: Cluster, namespace: &str, mode: Mode) -> Hub {
        let shared = Arc::new(Shared { state: Mutex::default(), phase_changed: Notify::new() });
        Hub { cluster, namespace: namespace.to_owned(), mode, shared }
    }

    /// Makes the index live: starts the watches of its kinds that are not running (or
    /// failed) and waits for their first list. StopJob, which must leave nothing of its
    /// job whatever its labels, calls it before it looks.
    pub(crate) async fn index(&self, cx: &CallContext) -> Result<()> {
        self.live(cx, &self.cluster, &INDEXED).await
    }

    /// The names the index holds for `job` if every indexed kind's watch is live (a
    /// Watch or a StopJob started them); `None` otherwise, starting nothing: a Find
    /// on a Backend that keeps no index reads the names its job's objects imply.
    pub(crate) fn known_if_live(&self, job: &JobId) -> Option<KnownNames> {
        let state = self.shared.lock();
        let live = INDEXED.iter().all(|feed| {
            matches!(state.kinds.get(feed.resource.kind).map(|k| &k.phase), Some(Phase::Live))
        });
        live.then(|| self.names_of(&state, job))
    }

    fn names_of(&self, state: &State, job: &JobId) -> KnownNames {
        let names = |feed: &Feed| -> Vec<String> {
            let index = state.kinds.get(feed.resource.kind).map(|k| &k.index);
            let names = index.and_then(|i| i.names_by_job.get(job));
            names.map(|n| n.iter().cloned().collect()).unwrap_or_default()
        };
        KnownNames {
            train_jobs: names(&INDEXED[0]),
            job_sets: names(&INDEXED[1]),
            runtimes: names(&INDEXED[2]),
        }
    }

    /// Routes the changes of every kind a Watch of `job` needs to the subscription,
    /// once their watches are live. Changes from then on are routed: a Find made after
    /// this returns misses none.
    pub(crate) async fn subscribe(&self, cx: &CallContext, job: &JobId) -> Result<Subscription> {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = {
            let mut state = self.shared.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.subscribers.entry(job.clone()).or_default().push(Subscriber { id, tx });
            id
        };
        let subscription = Subscription { rx, shared: self.shared.clone(), job: job.clone(), id };
        self.live(cx, &self.cluster, &self.watched()).await?;
        Ok(subscription)
    }

    /// The kinds a Watch needs.
    fn watched(&self) -> Vec<Feed> {
        let mut feeds = INDEXED.to_vec();
        feeds.push(PODS);
        if self.mode == Mode::Kueue {
            feeds.push(WORKLOADS);
        }
        feeds
    }

    /// Waits until every one of `feeds` is live, starting those not running (or
    /// failed); the error of one this call started that failed in turn. A call that
    /// ends meanwhile gets the error its next read would (`call` is the call's view of
    /// the cluster: the hold family's deadline is its own).
    async fn live(&self, cx: &CallContext, call: &Cluster, feeds: &[Feed]) -> Result<()> {
        let mut started = BTreeSet::new();
        loop {
            let mut changed = pin!(self.shared.phase_changed.notified());
            changed.as_mut().enable();
            {
                let mut state = self.shared.lock();
                let mut all_live = true;
                for feed in feeds {
                    let phase = state.kinds.get(feed.resource.kind).map(|k| &k.phase);
                    match phase {
                        Some(Phase::Live) => {}
                        Some(Phase::Listing) => all_live = false,
                        // A watch this call started failed: so does the call.
                        Some(Phase::Failed(e)) if started.contains(feed.resource.kind) => {
                            return Err(same(e));
                        }
                        // One that failed before is started anew.
                        Some(Phase::Failed(_)) | None => {
                            self.start(&mut state, *feed);
                            started.insert(feed.resource.kind);
                            all_live = false;
                        }
                    }
                }
                if all_live {
                    return Ok(());
                }
            }
            tokio::select! {
                () = changed => continue,
                () = cx.cancelled() => {}
                () = edge::deadline(cx) => {}
            }
            call.may_send_read(cx)?;
            return Err(Error::unreachable("the call ended while the shared watches listed"));
        }
    }

    /// Starts `feed`'s watch, replacing one that failed.
    fn start(&self, state: &mut State, feed: Feed) {
        let objects = self.cluster.objects(feed.resource, &self.namespace);
        let changes = if feed.whole {
            objects.watch(feed.selector)
        } else {
            objects.watch_metadata(feed.selector)
        };
        let task = tokio::spawn(run(self.shared.clone(), feed.resource, changes)).abort_handle();
        let kind = Kind { phase: Phase::Listing, task, index: Index::default() };
        if let Some(old) = state.kinds.insert(feed.resource.kind, kind) {
            old.task.abort();
        }
    }
}

/// An error again, for each of those it ends.
fn same(e: &Error) -> Error {
    Error::new(e.kind(), e.message())
}

/// One kind's watch: takes in each change until the watch ends with an error.
async fn run(shared: Arc<Shared>, resource: Resource, mut changes: Changes) {
    while let Some(change) = changes.next().await {
        let mut state = shared.lock();
        match change {
            Ok(change) => {
                if state.take_in(resource, change) {
                    shared.phase_changed.notify_waiters();
                }
            }
            Err(e) => {
                let e = e.context("a shared watch ended");
                for sub in state.subscribers.values().flatten() {
                    let _ = sub.tx.send(Routed::Failed(same(&e)));
                }
                if let Some(kind) = state.kinds.get_mut(resource.kind) {
                    kind.phase = Phase::Failed(e);
                    kind.index = Index::default();
                }
                shared.phase_changed.notify_waiters();
                return;
            }
        }
    }
}

impl State {
    /// Takes in one change of `resource`: updates the index and tells the jobs it
    /// concerns. Whether the kind just became live.
    fn take_in(&mut self, resource: Resource, change: Change) -> bool {
        let Some(kind) = self.kinds.get_mut(resource.kind) else { return false };
        match change {
            Change::Listed(views) => {
                let relisted = matches!(kind.phase, Phase::Live);
                kind.index = Index::default();
                for view in &views {
                    kind.index.apply(view);
                }
                kind.phase = Phase::Live;
                if relisted {
                    // Changes were missed: every Watch looks again.
                    for sub in self.subscribers.values().flatten() {
                        let _ = sub.tx.send(Routed::Touched);
                    }
                }
                !relisted
            }
            Change::Applied(view) => {
                let mut jobs = kind.index.remove(view.meta().name());
                jobs.extend(kind.index.apply(&view));
                let jobs = self.concerned(jobs, &view);
                self.route(&jobs, || Routed::Touched);
                false
            }
            Change::Deleted(view) => {
                let jobs = kind.index.remove(view.meta().name());
                let jobs = self.concerned(jobs, &view);
                match view {
                    View::Pod(pod) => {
                        let pod = Box::new(pod);
                        self.route(&jobs, || Routed::PodDeleted(pod.clone()));
                    }
                    _ => self.route(&jobs, || Routed::Touched),
                }
                false
            }
        }
    }

    /// The jobs a change of `view` concerns: those of its index entries, and for a
    /// Workload, those of the TrainJob whose UID its label names.
    fn concerned(&self, mut jobs: Vec<JobId>, view: &View) -> Vec<JobId> {
        if let Some(uid) = view.meta().label(keys::KUEUE_JOB_UID)
            && let Some(train_jobs) = self.kinds.get(TRAIN_JOB.kind)
            && let Some(of) = train_jobs.index.jobs_by_uid.get(uid)
        {
            jobs.extend(of.iter().cloned());
        }
        jobs.sort();
        jobs.dedup();
        jobs
    }

    fn route(&self, jobs: &[JobId], routed: impl Fn() -> Routed) {
        for job in jobs {
            for sub in self.subscribers.get(job).into_iter().flatten() {
                let _ = sub.tx.send(routed());
            }
        }
    }
}

impl Index {
    /// Adds `view`; the jobs it belongs to.
    fn apply(&mut self, view: &View) -> Vec<JobId> {
        let meta = view.meta();
        let name = meta.name().to_owned();
        let jobs = names::jobs_of(&name, meta.label(keys::LABEL_JOB_ID));
        for job in &jobs {
            self.names_by_job.entry(job.clone()).or_default().insert(name.clone());
        }
        // An object of no job (another tenant's, a Workload) concerns no Watch and no
        // Find: nothing is kept of it.
        if !jobs.is_empty() {
            self.jobs_by_uid.insert(meta.uid().to_owned(), jobs.clone());
            self.by_name.insert(name, Entry { uid: meta.uid().to_owned(), jobs: jobs.clone() });
        }
        jobs
    }

    /// Removes the object named `name`; the jobs it belonged to.
    fn remove(&mut self, name: &str) -> Vec<JobId> {
        let Some(entry) = self.by_name.remove(name) else { return Vec::new() };
        for job in &entry.jobs {
            if let Some(names) = self.names_by_job.get_mut(job) {
                names.remove(name);
                if names.is_empty() {
                    self.names_by_job.remove(job);
                }
            }
        }
        self.jobs_by_uid.remove(&entry.uid);
        entry.jobs
    }
}
