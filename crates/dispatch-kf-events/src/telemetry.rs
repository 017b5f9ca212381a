//! What the cause controller tells Prometheus (`docs/events.md#metrics`), and where its
//! replica stands.
//!
//! Two registries: the replica's own series, always served, and the cluster's (TrainJobs
//! by state and cause, and per TrainJob behind a flag), served only while this replica
//! leads, so that summing over replicas counts each TrainJob once.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use dispatch_core::ObjectObs;
use dispatch_kf_model::signal::Report;
use dispatch_kf_replica::{Role, RoleCell};
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::store::Kind;

type Step = [(&'static str, &'static str); 1];
type Ended = [(&'static str, String); 4];
type ByState = [(&'static str, String); 3];
type OfTrainJob = [(&'static str, String); 4];

/// What the gauges last counted of one TrainJob, by UID.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Counted {
    namespace: String,
    name: String,
    state: &'static str,
    cause: &'static str,
}

struct Inner {
    role: RoleCell,
    synced: Gauge,
    replica: Registry,
    cluster: Registry,
    leading: Gauge,
    errors: Family<Step, Counter>,
    lapsed: Counter,
    pending: Gauge,
    objects: Family<Step, Gauge>,
    ended: Family<Ended, Counter>,
    train_jobs: Family<ByState, Gauge>,
    per_train_job: Option<Family<OfTrainJob, Gauge>>,
    counted: Mutex<HashMap<String, Counted>>,
}

/// The controller's state and counters, shared by its loops and its probe server.
/// Cloning gives another handle on the same values.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry::new(false)
    }
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry").field("role", &self.inner.role.get()).finish_non_exhaustive()
    }
}

fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::TrainJob => "trainjob",
        Kind::JobSet => "jobset",
        Kind::Workload => "workload",
        Kind::Pod => "pod",
        Kind::Node => "node",
        Kind::Runtime => "trainingruntime",
    }
}

impl Telemetry {
    /// A replica that has not started; `per_train_job`: a series per TrainJob too
    /// (`dispatch_trainjob_status`), which grows with the cluster.
    pub fn new(per_train_job: bool) -> Telemetry {
        let mut replica = Registry::with_prefix("dispatch");
        let mut cluster = Registry::with_prefix("dispatch");
        let leading = Gauge::default();
        let synced = Gauge::default();
        let errors = Family::<Step, Counter>::default();
        let lapsed = Counter::default();
        let pending = Gauge::default();
        let objects = Family::<Step, Gauge>::default();
        let ended = Family::<Ended, Counter>::default();
        let train_jobs = Family::<ByState, Gauge>::default();
        replica.register(
            "events_leading",
            "1 while this replica holds the Lease, 0 otherwise",
            leading.clone(),
        );
        replica.register(
            "events_synced",
            "1 once every watch has listed and every TrainJob was read once",
            synced.clone(),
        );
        replica.register(
            "events_errors",
            "Failed steps, by step: an Event's create, a watch, or a Lease campaign",
            errors.clone(),
        );
        replica.register(
            "events_lapsed",
            "Moments not reported within the catch-up window of when this replica saw them",
            lapsed.clone(),
        );
        replica.register(
            "events_pending",
            "Moments seen and not yet told (settling, or their create failing)",
            pending.clone(),
        );
        replica.register("events_objects", "Objects this replica holds, by kind", objects.clone());
        replica.register(
            "trainjob_executions_ended",
            "Executions of TrainJobs ended or evicted whose Event this replica created, by \
             namespace, runtime, cause and provenance",
            ended.clone(),
        );
        cluster.register(
            "trainjobs",
            "TrainJobs by namespace, state and cause (served by the leading replica only)",
            train_jobs.clone(),
        );
        let per_train_job = per_train_job.then(|| {
            let family = Family::<OfTrainJob, Gauge>::default();
            cluster.register(
                "trainjob_status",
                "1 for each TrainJob, labelled with its state and cause (served by the leading \
                 replica only)",
                family.clone(),
            );
            family
        });
        let inner = Inner {
            role: RoleCell::default(),
            synced,
            replica,
            cluster,
            leading,
            errors,
            lapsed,
            pending,
            objects,
            ended,
            train_jobs,
            per_train_job,
            counted: Mutex::new(HashMap::new()),
        };
        Telemetry { inner: Arc::new(inner) }
    }

    /// Whether every watch has listed once and every TrainJob was read: from then on,
    /// a moment this replica sees is one it may tell.
    pub fn synced(&self) -> bool {
        self.inner.synced.get() == 1
    }

    /// Records that every watch has listed once.
    pub(crate) fn set_synced(&self) {
        self.inner.synced.set(1);
    }

    /// Counts one failed step.
    pub(crate) fn failed(&self, step: &'static str) {
        self.inner.errors.get_or_create(&[("step", step)]).inc();
    }

    /// Counts one moment that lapsed.
    pub(crate) fn lapsed(&self) {
        self.inner.lapsed.inc();
    }

    /// Records how many moments are pending.
    pub(crate) fn pending(&self, n: usize) {
        self.inner.pending.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Records how many objects of each kind the store holds.
    pub(crate) fn holding(&self, counts: &[(Kind, usize)]) {
        for (kind, n) in counts {
            let n = i64::try_from(*n).unwrap_or(i64::MAX);
            self.inner.objects.get_or_create(&[("kind", kind_label(*kind))]).set(n);
        }
    }

    /// Counts one Event this replica created, of a TrainJob of `runtime`.
    pub(crate) fn told(&self, namespace: &str, runtime: &str, report: &Report) {
        let provenance = report.provenance.map_or("none", |p| p.name());
        self.inner
            .ended
            .get_or_create(&[
                ("namespace", namespace.to_owned()),
                ("runtime", runtime.to_owned()),
                ("cause", report.cause.name().to_owned()),
                ("provenance", provenance.to_owned()),
            ])
            .inc();
    }

    /// The TrainJob of `uid` is now observed as `obs`, or is gone (`None`): the gauges
    /// move from what they counted of it before.
    pub(crate) fn observed(&self, uid: &str, obs: Option<&ObjectObs>) {
        let now = obs.map(|o| Counted {
            namespace: o.object.namespace.clone(),
            name: o.object.name.clone(),
            state: o.state.name(),
            cause: o.cause.kind.name(),
        });
        let mut counted = self.inner.counted.lock().unwrap_or_else(PoisonError::into_inner);
        let before = match &now {
            Some(c) => counted.insert(uid.to_owned(), c.clone()),
            None => counted.remove(uid),
        };
        if before == now {
            return;
        }
        if let Some(b) = &before {
            self.inner.train_jobs.get_or_create(&by_state(b)).dec();
            if let Some(family) = &self.inner.per_train_job {
                family.remove(&of_train_job(b));
            }
        }
        if let Some(n) = &now {
            self.inner.train_jobs.get_or_create(&by_state(n)).inc();
            if let Some(family) = &self.inner.per_train_job {
                family.get_or_create(&of_train_job(n)).set(1);
            }
        }
    }
}

fn by_state(c: &Counted) -> ByState {
    [
        ("namespace", c.namespace.clone()),
        ("state", c.state.to_owned()),
        ("cause", c.cause.to_owned()),
    ]
}

fn of_train_job(c: &Counted) -> OfTrainJob {
    [
        ("namespace", c.namespace.clone()),
        ("trainjob", c.name.clone()),
        ("state", c.state.to_owned()),
        ("cause", c.cause.to_owned()),
    ]
}

impl dispatch_kf_replica::Telemetry for Telemetry {
    fn role(&self) -> Role {
        self.inner.role.get()
    }

    fn set_role(&self, role: Role) {
        self.inner.role.set(role);
        self.inner.leading.set(i64::from(role == Role::Leading));
    }

    fn campaign_failed(&self) {
        self.failed("lease");
    }

    fn metrics_text(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode_registry(&mut text, &self.inner.replica);
        if self.inner.role.get() == Role::Leading {
            let _ = encode_registry(&mut text, &self.inner.cluster);
        }
        let _ = encode_eof(&mut text);
        text
    }
}

#[cfg(test)]
mod tests;
