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
//!
//! A Watch's inbox holds at most one "look again" and one failure: changes that arrive
//! while the Watch is busy (or its reader is slow) fold into what already waits, so
//! nothing queues without end. A deleted pod's last state, which must not be folded
//! away, goes straight into the Backend's evidence. A re-list builds its index before
//! it takes the hub's lock, so no lock is held while a large list is read in.

use std::collections::{BTreeSet, HashMap};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dispatch_core::{CallContext, Error, JobId, Result};
use dispatch_kf_client::resources::{
    JOB_SET, POD, Resource, TRAIN_JOB, TRAINING_RUNTIME, WORKLOAD,
};
use dispatch_kf_client::{Change, Changes, Cluster, KnownNames};
use dispatch_kf_model::view::{Pod, View};
use dispatch_kf_model::{Mode, keys, names};
use futures::StreamExt;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio::task::AbortHandle;

use crate::edge;
use crate::evidence::Evidence;

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
    /// An object of the job changed (a deleted pod's last state is in the evidence by
    /// then), or a watch listed anew (changes may have been missed): look again.
    Touched,
    /// A watch the Watch relies on ended with this error.
    Failed(Error),
}

/// A Watch's inbox: at most one [`Routed::Touched`] and one [`Routed::Failed`] wait in
/// it, however many are put in before the Watch takes them.
#[derive(Default)]
struct Inbox {
    pending: Mutex<Pending>,
    arrived: Notify,
}

#[derive(Default)]
struct Pending {
    touched: bool,
    failed: Option<Error>,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `routed` in, folded into what waits: a second touch is the first, and the
    /// first failure is the one kept.
    fn put(&self, routed: Routed) {
        {
            let mut pending = self.lock();
            match routed {
                Routed::Touched => pending.touched = true,
                Routed::Failed(e) => {
                    pending.failed.get_or_insert(e);
                }
            }
        }
        self.arrived.notify_one();
    }

    /// Takes what waits, a failure first; waits for something when nothing does.
    async fn take(&self) -> Routed {
        loop {
            {
                let mut pending = self.lock();
                if let Some(e) = pending.failed.take() {
                    return Routed::Failed(e);
                }
                if std::mem::take(&mut pending.touched) {
                    return Routed::Touched;
                }
            }
            self.arrived.notified().await;
        }
    }
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
    /// Woken whenever the pods watch has taken in a change.
    pods_changed: Notify,
    /// Where a deleted pod of a job with a Watch open leaves its last state.
    evidence: Arc<Evidence>,
}

#[derive(Default)]
struct State {
    kinds: HashMap<&'static str, KindWatch>,
    /// The Watches open, by job.
    subscribers: HashMap<JobId, Vec<Subscriber>>,
    next_id: u64,
}

/// One kind's watch.
struct KindWatch {
    phase: Phase,
    /// It replaced a watch of the kind that failed: its first list is a re-list too,
    /// after a time in which changes went unseen.
    replaced: bool,
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
    inbox: Arc<Inbox>,
}

/// One Watch's share of the hub: routed events wait in its inbox until it is dropped.
pub(crate) struct Subscription {
    inbox: Arc<Inbox>,
    shared: Arc<Shared>,
    job: JobId,
    id: u64,
}

impl Subscription {
    /// The next routed event: a failure first, then a look again; waits for one.
    pub(crate) async fn next(&self) -> Routed {
        self.inbox.take().await
    }
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
    pub(crate) fn new(
        cluster: Cluster,
        namespace: &str,
        mode: Mode,
        evidence: Arc<Evidence>,
    ) -> Hub {
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            phase_changed: Notify::new(),
            pods_changed: Notify::new(),
            evidence,
        });
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

    /// The pods of `job` that `listed` (a fresh list of its pods) no longer shows, but
    /// that the live pods watch has not seen go: their DELETED events, and with them
    /// their last states, are still on their way. Empty when the pods watch is not live
    /// (no Watch keeps evidence, so nothing is on its way).
    pub(crate) fn deletions_unseen(&self, job: &JobId, listed: &[Pod]) -> Vec<String> {
        let state = self.shared.lock();
        let Some(pods) = state.kinds.get(POD.kind).filter(|k| matches!(k.phase, Phase::Live))
        else {
            return Vec::new();
        };
        let known = pods.index.names_by_job.get(job).into_iter().flatten();
        known
            .filter(|name| !listed.iter().any(|p| p.meta.name() == name.as_str()))
            .cloned()
            .collect()
    }

    /// Completes once the pods watch has taken in another change (enable it before
    /// looking, so that a change in between is not missed).
    pub(crate) fn pods_changed(&self) -> Notified<'_> {
        self.shared.pods_changed.notified()
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
        let inbox = Arc::new(Inbox::default());
        let id = {
            let mut state = self.shared.lock();
            state.next_id += 1;
            let id = state.next_id;
            let subscriber = Subscriber { id, inbox: inbox.clone() };
            state.subscribers.entry(job.clone()).or_default().push(subscriber);
            id
        };
        let subscription =
            Subscription { inbox, shared: self.shared.clone(), job: job.clone(), id };
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
                            return Err(copy_of(e));
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
        let replaced = state.kinds.contains_key(feed.resource.kind);
        let kind = KindWatch { phase: Phase::Listing, replaced, task, index: Index::default() };
        if let Some(old) = state.kinds.insert(feed.resource.kind, kind) {
            old.task.abort();
        }
    }
}

/// An error again, for each of those it ends.
fn copy_of(e: &Error) -> Error {
    Error::new(e.kind(), e.message())
}

/// One kind's watch: takes in each change until the watch ends with an error. A list
/// is made into an index before the lock is taken.
async fn run(shared: Arc<Shared>, resource: Resource, mut changes: Changes) {
    while let Some(change) = changes.next().await {
        let change = match change {
            Ok(Change::Listed(views)) => Ok(IndexedChange::Listed(Index::of(&views))),
            Ok(Change::Applied(view)) => Ok(IndexedChange::Applied(view)),
            Ok(Change::Deleted(view)) => Ok(IndexedChange::Deleted(view)),
            Err(e) => Err(e),
        };
        let mut state = shared.lock();
        match change {
            Ok(change) => {
                if state.take_in(resource, change, &shared.evidence) {
                    shared.phase_changed.notify_waiters();
                }
                if resource.kind == POD.kind {
                    shared.pods_changed.notify_waiters();
                }
            }
            Err(e) => {
                let e = e.context("a shared watch ended");
                for sub in state.subscribers.values().flatten() {
                    sub.inbox.put(Routed::Failed(copy_of(&e)));
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

/// A change of a kind as the hub takes it in: a list already made into its index.
enum IndexedChange {
    Listed(Index),
    Applied(View),
    Deleted(View),
}

impl State {
    /// Takes in one change of `resource`: updates the index and tells the jobs it
    /// concerns; a deleted pod of a job with a Watch open leaves its last state in
    /// `evidence` first. Whether the kind just became live.
    fn take_in(&mut self, resource: Resource, change: IndexedChange, evidence: &Evidence) -> bool {
        let Some(kind) = self.kinds.get_mut(resource.kind) else { return false };
        match change {
            IndexedChange::Listed(index) => {
                // A list after the watch lost its place, or the first of a watch that
                // replaced a failed one: either way changes went unseen before it.
                let relisted = matches!(kind.phase, Phase::Live) || kind.replaced;
                let was_live = matches!(kind.phase, Phase::Live);
                kind.replaced = false;
                kind.index = index;
                kind.phase = Phase::Live;
                if relisted {
                    // Changes were missed: every Watch looks again, and pods deleted
                    // meanwhile left no last state.
                    let at = edge::now();
                    for (job, subs) in &self.subscribers {
                        if resource.kind == POD.kind {
                            evidence.mark_gap(job, at);
                        }
                        for sub in subs {
                            sub.inbox.put(Routed::Touched);
                        }
                    }
                }
                !was_live
            }
            IndexedChange::Applied(view) => {
                let mut jobs = kind.index.remove(view.meta().name());
                jobs.extend(kind.index.apply(&view));
                let jobs = self.concerned(jobs, &view);
                self.touch(&jobs);
                false
            }
            IndexedChange::Deleted(view) => {
                let jobs = kind.index.remove(view.meta().name());
                let jobs = self.concerned(jobs, &view);
                if let View::Pod(pod) = view {
                    for job in jobs.iter().filter(|j| self.subscribers.contains_key(*j)) {
                        evidence.capture(job, pod.clone());
                    }
                }
                self.touch(&jobs);
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

    /// Tells every Watch of `jobs` to look again.
    fn touch(&self, jobs: &[JobId]) {
        for job in jobs {
            for sub in self.subscribers.get(job).into_iter().flatten() {
                sub.inbox.put(Routed::Touched);
            }
        }
    }
}

impl Index {
    /// The index of a list.
    fn of(views: &[View]) -> Index {
        let mut index = Index::default();
        for view in views {
            index.apply(view);
        }
        index
    }

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

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    /// However many changes arrive while a Watch is busy, its inbox holds one look
    /// again and one failure: memory does not grow with a reader that does not read.
    #[test]
    fn an_inbox_folds_what_arrives_before_it_is_read() {
        let inbox = Inbox::default();
        for _ in 0..10_000 {
            inbox.put(Routed::Touched);
        }
        inbox.put(Routed::Failed(Error::unreachable("first")));
        inbox.put(Routed::Failed(Error::unreachable("second")));
        let failed = inbox.take().now_or_never().expect("a failure waits");
        assert!(matches!(failed, Routed::Failed(e) if e.message() == "first"), "the first is kept");
        let touched = inbox.take().now_or_never().expect("a look again waits");
        assert!(matches!(touched, Routed::Touched));
        assert!(inbox.take().now_or_never().is_none(), "ten thousand touches were one");
    }

    /// A put after the reader began waiting wakes it.
    #[tokio::test]
    async fn a_put_wakes_a_waiting_reader() {
        let inbox = Arc::new(Inbox::default());
        let reader = tokio::spawn({
            let inbox = inbox.clone();
            async move { inbox.take().await }
        });
        tokio::task::yield_now().await;
        inbox.put(Routed::Touched);
        assert!(matches!(reader.await.unwrap(), Routed::Touched));
    }
}
