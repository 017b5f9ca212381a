//! What the gate tells its Deployment: whether its loops run (liveness), whether it
//! leads or stands by properly (readiness), and its counters in Prometheus text.
//!
//! [`run`](crate::run) moves the [`Role`] and the reconcilers count into the
//! [`Telemetry`] it is given; `probes.rs` serves them over HTTP.

use std::fmt;
use std::sync::Arc;

use dispatch_kf_model::internal::readmission::Decision;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

pub use dispatch_kf_replica::Role;
use dispatch_kf_replica::RoleCell;

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
/// [`dispatch_kf_model::internal::readmission::Decision`], in snake case.
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
    role: RoleCell,
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
        let inner =
            Inner { role: RoleCell::default(), registry, reconciles, decisions, errors, leading };
        Telemetry { inner: Arc::new(inner) }
    }

    /// Where the replica stands now.
    pub fn role(&self) -> Role {
        self.inner.role.get()
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
}

impl dispatch_kf_replica::Telemetry for Telemetry {
    fn role(&self) -> Role {
        Telemetry::role(self)
    }

    /// The `leading` gauge follows.
    fn set_role(&self, role: Role) {
        self.inner.role.set(role);
        self.inner.leading.set(i64::from(role == Role::Leading));
    }

    fn campaign_failed(&self) {
        self.inner.errors.get_or_create(&[("step", "lease")]).inc();
    }

    fn metrics_text(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use dispatch_kf_model::internal::readmission::Decision;
    use dispatch_kf_replica::Telemetry as _;
    use dispatch_kf_testkit::series_value;

    use super::*;

    #[test]
    fn metrics_count_reconciles_decisions_errors_and_leadership() {
        let telemetry = Telemetry::new();
        telemetry.set_role(Role::StandingBy);
        let metrics = telemetry.metrics_text();
        assert_eq!(series_value(&metrics, "dispatch_gate_leading"), Some(0.0), "{metrics}");
        assert!(metrics.ends_with("# EOF\n"), "{metrics}");

        telemetry.set_role(Role::Leading);
        for _ in 0..3 {
            telemetry.reconciled(Object::Workload);
        }
        telemetry.reconciled(Object::AdmissionCheck);
        let approve = Decision::Approve { admission: 1, releases: 0, pod_set: "node".into() };
        telemetry.decided(&approve);
        telemetry.decided(&Decision::Wait { message: "waiting for Release".into() });
        telemetry.decided(&Decision::Wait { message: "waiting for Open".into() });
        telemetry.decided(&Decision::Idle);
        telemetry.reconcile_failed(Object::Workload);
        telemetry.campaign_failed();

        let metrics = telemetry.metrics_text();
        let expected = [
            ("dispatch_gate_leading", 1.0),
            ("dispatch_gate_reconciles_total{object=\"workload\"}", 3.0),
            ("dispatch_gate_reconciles_total{object=\"admission_check\"}", 1.0),
            ("dispatch_gate_decisions_total{outcome=\"approve\"}", 1.0),
            ("dispatch_gate_decisions_total{outcome=\"wait\"}", 2.0),
            ("dispatch_gate_decisions_total{outcome=\"idle\"}", 1.0),
            ("dispatch_gate_errors_total{step=\"workload\"}", 1.0),
            ("dispatch_gate_errors_total{step=\"lease\"}", 1.0),
        ];
        for (series, want) in expected {
            assert_eq!(series_value(&metrics, series), Some(want), "{series} in\n{metrics}");
        }
        assert_eq!(
            series_value(&metrics, "dispatch_gate_decisions_total{outcome=\"use_up_releases\"}"),
            None
        );
        for name in ["reconciles", "decisions", "errors"] {
            assert!(metrics.contains(&format!("# TYPE dispatch_gate_{name} counter")), "{metrics}");
        }
        assert!(metrics.contains("# TYPE dispatch_gate_leading gauge"), "{metrics}");
    }
}
