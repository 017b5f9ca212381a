//! What the gate tells its Deployment: whether its loops run (liveness), whether it
//! leads or stands by properly (readiness), and its counters in Prometheus text.
//!
//! [`run`](crate::run) moves the [`Role`] and the reconcilers count into the
//! [`Telemetry`] it is given; `probes.rs` serves them over HTTP.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use dispatch_kf_model::readmission::Decision;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Where a replica stands. Only [`Role::StandingBy`] and [`Role::Leading`] are ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Role {
    /// The campaign loop has not decided yet, or cannot read the Lease and does not lead.
    Starting = 0,
    /// Another replica holds the Lease; this one is ready to take over.
    StandingBy = 1,
    /// This replica holds the Lease and its reconcilers run.
    Leading = 2,
    /// The campaign loop is not running: not started yet, or it returned (shut down,
    /// aborted or panicked).
    NotRunning = 3,
}

impl Role {
    fn from_u8(value: u8) -> Role {
        match value {
            1 => Role::StandingBy,
            2 => Role::Leading,
            3 => Role::NotRunning,
            _ => Role::Starting,
        }
    }

    /// `/healthz`: the campaign loop runs.
    pub fn live(self) -> bool {
        self != Role::NotRunning
    }

    /// `/readyz`: leading, or a healthy standby.
    pub fn ready(self) -> bool {
        matches!(self, Role::StandingBy | Role::Leading)
    }
}

/// What a reconciler looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    /// A Kueue Workload.
    Workload,
    /// A Kueue AdmissionCheck.
    AdmissionCheck,
}

impl Object {
    fn label(self) -> &'static str {
        match self {
            Object::Workload => "workload",
            Object::AdmissionCheck => "admission_check",
        }
    }
}

/// The `outcome` label of a decision: the variant of
/// [`dispatch_kf_model::readmission::Decision`], in snake case.
pub fn outcome(decision: &Decision) -> &'static str {
    match decision {
        Decision::Idle => "idle",
        Decision::UseUpReleases { .. } => "use_up_releases",
        Decision::Approve { .. } => "approve",
        Decision::Wait { .. } => "wait",
    }
}

type Labels = [(&'static str, &'static str); 1];

struct Inner {
    role: AtomicU8,
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    decisions: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    leading: Gauge,
}

/// The gate's state and counters, shared by its loops and its probe server. Cloning
/// gives another handle on the same values.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry::new()
    }
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry").field("role", &self.role()).finish_non_exhaustive()
    }
}

impl Telemetry {
    /// A replica that has not started: not live, not ready, every counter at zero.
    ///
    /// The metrics, all prefixed `dispatch_gate_`, are listed in `docs/gate.md#probes-and-metrics`.
    pub fn new() -> Telemetry {
        let mut registry = Registry::with_prefix("dispatch_gate");
        let reconciles = Family::<Labels, Counter>::default();
        let decisions = Family::<Labels, Counter>::default();
        let errors = Family::<Labels, Counter>::default();
        let leading = Gauge::default();
        registry.register(
            "reconciles",
            "Reconciles run, by the kind of object reconciled",
            reconciles.clone(),
        );
        registry.register(
            "decisions",
            "Readmission decisions made, by outcome (the variant of readmission::Decision)",
            decisions.clone(),
        );
        registry.register(
            "errors",
            "Failed steps, by step: a Workload or AdmissionCheck reconcile (lost write races \
             included), or a Lease campaign",
            errors.clone(),
        );
        registry.register(
            "leading",
            "1 while this replica holds the Lease and reconciles, 0 otherwise",
            leading.clone(),
        );
        let inner = Inner {
            role: AtomicU8::new(Role::NotRunning as u8),
            registry,
            reconciles,
            decisions,
            errors,
            leading,
        };
        Telemetry { inner: Arc::new(inner) }
    }

    /// Where the replica stands now.
    pub fn role(&self) -> Role {
        Role::from_u8(self.inner.role.load(Ordering::SeqCst))
    }

    /// Records where the replica stands; the `leading` gauge follows.
    pub fn set_role(&self, role: Role) {
        self.inner.role.store(role as u8, Ordering::SeqCst);
        self.inner.leading.set(i64::from(role == Role::Leading));
    }

    /// Counts one reconcile of `object`.
    pub fn reconciled(&self, object: Object) {
        self.inner.reconciles.get_or_create(&[("object", object.label())]).inc();
    }

    /// Counts one decision.
    pub fn decided(&self, decision: &Decision) {
        self.inner.decisions.get_or_create(&[("outcome", outcome(decision))]).inc();
    }

    /// Counts one failed reconcile of `object`.
    pub fn reconcile_failed(&self, object: Object) {
        self.inner.errors.get_or_create(&[("step", object.label())]).inc();
    }

    /// Counts one Lease campaign that could not read or write the Lease.
    pub fn campaign_failed(&self) {
        self.inner.errors.get_or_create(&[("step", "lease")]).inc();
    }

    /// The metrics in the OpenMetrics text format, which Prometheus reads.
    pub fn metrics_text(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry);
        text
    }
}

/// Marks the replica live while held; dropping it (the loop returned, was aborted or
/// panicked) marks it not running.
pub(crate) struct Alive(pub(crate) Telemetry);

impl Alive {
    pub(crate) fn start(telemetry: Telemetry) -> Alive {
        telemetry.set_role(Role::Starting);
        Alive(telemetry)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.set_role(Role::NotRunning);
    }
}
