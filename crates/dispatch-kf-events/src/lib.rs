//! `dispatch-kf-events`: the cause controller (`docs/events.md`). For every TrainJob of
//! the namespaces it watches, made by dispatch or not, it tells each end or eviction
//! of an execution as one Event regarding the TrainJob, and counts TrainJobs by state
//! and cause for Prometheus. It writes nothing else.
//!
//! - `feeds`: one watch per kind (and watched namespace);
//! - `store`: their objects, filed by TrainJob, and deleted pods' evidence;
//! - [`run`]: the loop every replica runs: it classifies each TrainJob a change
//!   concerns (`dispatch_kf_model::classify_train_jobs`, as `explain` does), records
//!   its moments in a `dispatch_kf_model::signal::Ledger`, and, while its replica leads,
//!   creates the Events due;
//! - [`telemetry`]: the metrics;
//! - [`spawn`]: the loop and the replica's Lease campaign (`dispatch_kf_replica`), whose
//!   work is only to say that this replica leads.
//!
//! A standby runs the same loop, so that it has seen the same moments when it takes
//! over; the Events' names make a second create of one refused.

mod feeds;
mod store;
pub mod telemetry;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use dispatch_core::{CallContext, Error, ObjectObs};
use dispatch_kf_client::Cluster;
use dispatch_kf_client::resources::{EVENT, WORKLOAD};
use dispatch_kf_model::signal::{self, Ledger, Moment, Reckoning};
use dispatch_kf_model::{ClassifyOptions, Detail, Mode, Snapshot, classify_train_jobs};
use dispatch_kf_replica::{Clock, Work};
use futures::FutureExt;
use jiff::SignedDuration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use feeds::{Fed, Feed};
use store::{Key, Kind, Store};
use telemetry::Telemetry;

/// How the controller runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The namespaces watched; empty: every namespace.
    pub namespaces: Vec<String>,
    /// How long a moment waits before its Event is created (evidence that comes just
    /// after the condition is folded in).
    pub settle: SignedDuration,
    /// How long after this replica first saw a moment its Event may still be created.
    pub catch_up: SignedDuration,
    /// This replica's identity (the Events' `reportingInstance`).
    pub identity: String,
}

impl Options {
    /// Every namespace, 1 s to settle, 5 minutes to catch up (`docs/events.md`).
    pub fn new(identity: &str) -> Options {
        Options {
            namespaces: Vec::new(),
            settle: SignedDuration::from_secs(1),
            catch_up: SignedDuration::from_mins(5),
            identity: identity.to_owned(),
        }
    }
}

/// How often the loop looks again with nothing changed (a create to retry).
const TICK: Duration = Duration::from_secs(1);
/// How long the loop waits between two tries to learn whether Kueue is served.
const DISCOVERY_RETRY: Duration = Duration::from_secs(5);

/// Whether this replica leads: raised while the replica's work runs, lowered when it
/// stops or is dropped.
struct Raised(Arc<watch::Sender<bool>>);

impl Raised {
    fn raise(flag: Arc<watch::Sender<bool>>) -> Raised {
        flag.send_replace(true);
        Raised(flag)
    }
}

impl Drop for Raised {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

/// The replica's work: to say that it leads, until told to stop.
pub fn work(leading: watch::Sender<bool>) -> Work {
    let leading = Arc::new(leading);
    Arc::new(move |stop: CancellationToken| {
        let raised = Raised::raise(leading.clone());
        async move {
            stop.cancelled().await;
            drop(raised);
        }
        .boxed()
    })
}

/// The loop and the replica, on tasks of their own.
pub struct Running {
    replica: Option<dispatch_kf_replica::Running>,
    stop: CancellationToken,
    follow: JoinHandle<()>,
}

/// Starts the loop of `options` on `cluster` and the replica of `replica` (its Lease,
/// clock and telemetry).
pub fn spawn(
    cluster: Cluster,
    client: kube::Client,
    options: Options,
    replica: dispatch_kf_replica::Options<Telemetry>,
) -> Running {
    let (leading, follows) = watch::channel(false);
    let stop = CancellationToken::new();
    let looped = run(
        cluster,
        options,
        replica.clock.clone(),
        replica.telemetry.clone(),
        follows,
        stop.clone(),
    );
    let follow = tokio::spawn(looped);
    let replica = dispatch_kf_replica::spawn(client, replica, work(leading));
    Running { replica: Some(replica), stop, follow }
}

impl Running {
    /// A clean shutdown: the loop stops, and the Lease is given up.
    pub async fn shut_down(mut self) {
        self.stop.cancel();
        let _ = (&mut self.follow).await;
        if let Some(replica) = self.replica.take() {
            replica.shut_down().await;
        }
    }

    /// A crash: nothing more is written, and the Lease stays until it expires.
    pub async fn abort(mut self) {
        self.follow.abort();
        let _ = (&mut self.follow).await;
        if let Some(replica) = self.replica.take() {
            replica.abort().await;
        }
    }
}

impl Drop for Running {
    /// Dropped without [`Running::shut_down`]: the loop stops at its next step.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Whether the cluster serves Kueue's API, asked until it answers.
async fn kueue_served(cluster: &Cluster, stop: &CancellationToken) -> Option<bool> {
    loop {
        match cluster.serves(&CallContext::background(), &WORKLOAD.api_version()).await {
            Ok(served) => return Some(served),
            Err(error) => tracing::warn!(%error, "cannot learn whether Kueue is served"),
        }
        tokio::select! {
            () = tokio::time::sleep(DISCOVERY_RETRY) => {}
            () = stop.cancelled() => return None,
        }
    }
}

/// What the loop knows.
struct Follower {
    cluster: Cluster,
    options: Options,
    clock: Clock,
    telemetry: Telemetry,
    store: Store,
    ledger: Ledger,
    classify: ClassifyOptions,
    kueue: bool,
    /// TrainJobs to read again.
    dirty: HashSet<Key>,
    /// The watches whose first list has not come yet.
    unlisted: HashSet<Feed>,
    /// Whether the first lists are in and every TrainJob was read once.
    synced: bool,
}

/// The loop every replica runs, until `stop`: watches, classification, the ledger, and
/// the Events due while `leading` says this replica leads.
pub async fn run(
    cluster: Cluster,
    options: Options,
    clock: Clock,
    telemetry: Telemetry,
    mut leading: watch::Receiver<bool>,
    stop: CancellationToken,
) {
    let Some(kueue) = kueue_served(&cluster, &stop).await else { return };
    let feeds = feeds::feeds(&options.namespaces, kueue);
    let (to, mut from) = mpsc::channel(1024);
    for feed in &feeds {
        let watch =
            feeds::run(cluster.clone(), feed.clone(), to.clone(), telemetry.clone(), stop.clone());
        tokio::spawn(watch);
    }
    drop(to);
    let mut f = Follower {
        ledger: Ledger::new(options.settle, options.catch_up),
        classify: ClassifyOptions {
            mode: Mode::Plain,
            nodes_readable: true,
            backend: "kubeflow".into(),
            // An Event tells why the execution stopped; explain's notes on provenance
            // and stalls would be noise in it.
            detail: Detail::CauseOnly,
        },
        cluster,
        options,
        clock,
        telemetry,
        store: Store::default(),
        kueue,
        dirty: HashSet::new(),
        unlisted: feeds.into_iter().collect(),
        synced: false,
    };
    loop {
        tokio::select! {
            fed = from.recv() => match fed {
                Some(fed) => f.take_in(fed),
                None => return,
            },
            changed = leading.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = tokio::time::sleep(TICK) => {}
            () = stop.cancelled() => return,
        }
        while let Ok(fed) = from.try_recv() {
            f.take_in(fed);
        }
        f.read_dirty();
        let leads = *leading.borrow_and_update();
        f.reckon(leads).await;
    }
}

impl Follower {
    fn take_in(&mut self, fed: Fed) {
        let (feed, change) = match fed {
            Fed::Change(feed, change) => (feed, *change),
            Fed::Forbidden(feed) => {
                if feed.kind == Kind::Node {
                    self.classify.nodes_readable = false;
                }
                self.unlisted.remove(&feed);
                return;
            }
        };
        if matches!(change, dispatch_kf_client::Change::Listed(_)) {
            self.unlisted.remove(&feed);
        }
        let touched = self.store.apply(feed.kind, feed.scope.as_deref(), change);
        for uid in &touched.gone {
            self.ledger.forget(uid);
            self.telemetry.observed(uid, None);
        }
        self.dirty.extend(touched.dirty);
    }

    /// Classifies every TrainJob a change concerned and records its moments. The first
    /// time, once every watch has listed, it reads every TrainJob as first seen.
    fn read_dirty(&mut self) {
        if !self.unlisted.is_empty() {
            return;
        }
        let first_sight = !self.synced;
        if first_sight {
            self.synced = true;
            self.dirty.extend(self.store.train_jobs().cloned());
            tracing::info!(train_jobs = self.dirty.len(), "every watch has listed");
        }
        let now = (self.clock)();
        for key in std::mem::take(&mut self.dirty) {
            let Some(snapshot) = self.store.snapshot(&key) else { continue };
            let Some(obs) = self.observe(&snapshot, now) else { continue };
            let moments = signal::moments(&snapshot);
            self.ledger.saw(&moments, &obs, first_sight, now);
            self.telemetry.observed(&obs.object.uid, Some(&obs));
        }
        if first_sight {
            self.telemetry.set_synced();
        }
        self.telemetry.holding(&self.store.counts());
    }

    /// The observation of a snapshot's one TrainJob, in its own mode.
    fn observe(&self, snapshot: &Snapshot, now: jiff::Timestamp) -> Option<ObjectObs> {
        let mode_of = |tj: &_| Mode::of_train_job(tj, self.kueue);
        classify_train_jobs(snapshot, &self.classify, mode_of, now).pop()
    }

    /// Lets lapse what is too old and, while this replica leads, creates the Events
    /// due.
    async fn reckon(&mut self, leads: bool) {
        let now = (self.clock)();
        for reckoning in self.ledger.take(now) {
            match reckoning {
                Reckoning::Lapsed(moment) => {
                    tracing::warn!(event = %moment.event_name(), "not reported within the catch-up window");
                    self.telemetry.lapsed();
                }
                Reckoning::Due(moment, obs) if leads => self.tell(&moment, &obs).await,
                Reckoning::Due(..) => {}
            }
        }
        self.telemetry.pending(self.ledger.pending());
    }

    /// Creates the Event of `moment`; on failure it stays due, to be tried again.
    async fn tell(&mut self, moment: &Moment, obs: &ObjectObs) {
        let name = moment.event_name();
        let Some(report) = signal::report(moment, obs) else {
            self.ledger.reported(&name);
            return;
        };
        let event = report.event(moment, &self.options.identity, (self.clock)());
        // Bounded by the client's request timeout.
        let cx = CallContext::background();
        let made =
            self.cluster.objects(EVENT, &moment.namespace).create_unless_exists(&cx, &event).await;
        match made {
            Ok(created) => {
                self.ledger.reported(&name);
                if created {
                    let key = (moment.namespace.clone(), moment.name.clone());
                    let runtime = match self.store.snapshot(&key) {
                        Some(s) => {
                            s.train_jobs.first().map(|tj| signal::runtime_label(tj, &s.runtimes))
                        }
                        None => None,
                    };
                    self.telemetry.told(&moment.namespace, &runtime.unwrap_or_default(), &report);
                    tracing::info!(event = %name, reason = report.reason, "told");
                } else {
                    tracing::debug!(event = %name, "told already");
                }
            }
            Err(error) if error.is(dispatch_core::Kind::NotFound) => {
                tracing::info!(event = %name, %error, "its namespace is gone");
                self.ledger.reported(&name);
            }
            Err(error) => self.create_failed(&name, &error),
        }
    }

    fn create_failed(&self, name: &str, error: &Error) {
        tracing::warn!(event = %name, %error, "could not create the Event; it is tried again");
        self.telemetry.failed("event");
    }
}
