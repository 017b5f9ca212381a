//! Rule 6, Pending or running: everything else (the causes are
//! `docs/classification.md#rule-6-causes-first-that-applies`). Running when admitted and
//! not suspended, pending otherwise.

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind, ObjectState, Provenance};
use jiff::Timestamp;

use super::{Outcome, Reported};
use crate::classify::facts::Facts;
use crate::classify::findings::{self, time};
use crate::classify::node_loss::NodeLoss;
use crate::classify::text::{trimmed, with_words, words, workload_words};

use crate::mode::Mode;
use crate::view::{condition, true_condition};

/// What a Workload's latest eviction reason gives, Kueue mode, admitted or not (R4).
/// A reason not listed is [`EVICTED_ANYTHING_ELSE`] (`PodsReadyTimeout`,
/// `AdmissionCheck`, `ClusterQueueStopped`, `LocalQueueStopped`, ...).
pub(crate) const EVICTED_ROWS: &[(&str, CauseKind)] =
    &[("Preempted", CauseKind::Preempted), ("NodeFailures", CauseKind::NodeLost)];

/// The kind of an eviction reason the table does not list.
pub(crate) const EVICTED_ANYTHING_ELSE: CauseKind = CauseKind::Requeued;

/// Rule 6.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Outcome {
    let admitted = f.admitted();
    let state =
        if admitted && !f.suspended() { ObjectState::Running } else { ObjectState::Pending };
    let mut reported = Reported::default();
    let cause = node_lost(f)
        .or_else(|| evicted(f))
        .or_else(|| {
            let c = no_quota(f, admitted);
            reported.quota = c.is_some();
            c
        })
        .or_else(|| {
            let c = unschedulable(f);
            reported.unschedulable = c.is_some();
            c
        })
        .unwrap_or_else(Cause::none);
    Outcome { state, admin_held: false, cause, reported }
}

fn scheduler(kind: CauseKind, detail: String, at: Option<Timestamp>) -> Cause {
    Cause {
        kind,
        provenance: Some(Provenance::Scheduler),
        actor: None,
        detail,
        exit_code: None,
        at,
    }
}

/// A node-lost finding among the current pods, else (Nodes readable) a live pod bound
/// to a Node that is gone, not Ready, or out of service.
fn node_lost<S: Str>(f: &Facts<'_, S>) -> Option<Cause> {
    let lost: Vec<_> = f
        .current_pods()
        .flat_map(|p| findings::of_pod(p.pod))
        .filter(|x| x.kind == CauseKind::NodeLost)
        .collect();
    if !lost.is_empty() {
        let mut lost = lost;
        findings::sort(&mut lost);
        let x = &lost[0];
        return Some(scheduler(CauseKind::NodeLost, format!("pod {}: {}", x.pod, x.detail), x.at));
    }
    if !f.options.nodes_readable {
        return None;
    }
    f.current_live_pods().filter(|p| !p.pod.is_terminal()).find_map(|p| {
        let node_name = p.pod.node_name.get().filter(|n| !n.is_empty())?;
        let pod = p.name();
        let Some(loss) = f.nodes.get(node_name) else {
            return Some(scheduler(
                CauseKind::NodeLost,
                format!("pod {pod}: node {node_name} is gone"),
                None,
            ));
        };
        Some(match (*loss)? {
            NodeLoss::NotReady(ready) => {
                let status = ready.status.get().unwrap_or("Unknown");
                let detail = with_words(
                    &format!("pod {pod}: node {node_name} Ready={status}"),
                    &words(ready),
                );
                scheduler(CauseKind::NodeLost, detail, time(ready.last_transition_time.get()))
            }
            NodeLoss::OutOfService(taint) => scheduler(
                CauseKind::NodeLost,
                format!("pod {pod}: node {node_name} is out of service"),
                time(taint.time_added.get()),
            ),
        })
    })
}

/// Kueue: the Workload's `Evicted=True`, by its reason. Refinement R4
/// (`docs/classification.md#refinements-from-real-clusters`): Kueue evicts in stages,
/// and `Evicted=True` comes while `Admitted` and `QuotaReserved` are still True until
/// the job's pods are gone, so this row applies whether or not the Workload is still
/// admitted.
fn evicted<S: Str>(f: &Facts<'_, S>) -> Option<Cause> {
    if f.options.mode != Mode::Kueue {
        return None;
    }
    let w = f.workload?;
    let c = true_condition(&w.conditions, "Evicted")?;
    let reason = c.reason.or_empty();
    let kind =
        EVICTED_ROWS.iter().find(|(r, _)| *r == reason).map_or(EVICTED_ANYTHING_ELSE, |r| r.1);
    let mut detail = workload_words(w.meta.name(), "Evicted", c);
    if kind == CauseKind::Preempted
        && let Some(p) = true_condition(&w.conditions, "Preempted")
    {
        detail.push_str(&format!(" (Preempted: {})", words(p)));
    }
    Some(scheduler(kind, detail, time(c.last_transition_time.get())))
}

/// Kueue, not admitted, and the Workload has `QuotaReserved=False`.
fn no_quota<S: Str>(f: &Facts<'_, S>, admitted: bool) -> Option<Cause> {
    if f.options.mode != Mode::Kueue || admitted {
        return None;
    }
    let w = f.workload?;
    let c =
        condition(&w.conditions, "QuotaReserved").filter(|c| c.status.get() == Some("False"))?;
    let detail = workload_words(w.meta.name(), "QuotaReserved=False", c);
    Some(scheduler(CauseKind::NoCapacity, detail, time(c.last_transition_time.get())))
}

/// A pod of the current execution with `PodScheduled=False`, reason `Unschedulable`:
/// the first by name.
pub(crate) fn unschedulable<S: Str>(f: &Facts<'_, S>) -> Option<Cause> {
    f.current_live_pods().find_map(|p| {
        let c = unschedulable_condition(p.pod)?;
        let detail = unschedulable_detail(p.name(), c);
        Some(scheduler(CauseKind::NoCapacity, detail, time(c.last_transition_time.get())))
    })
}

/// `pod <p> unschedulable: <message>`, for the cause and for the situation note.
pub(crate) fn unschedulable_detail<S: Str>(pod: &str, c: &crate::object::Condition<S>) -> String {
    format!("pod {pod} unschedulable: {}", trimmed(c.message.or_empty()))
}

/// A pod's `PodScheduled=False` condition with reason `Unschedulable`.
pub(crate) fn unschedulable_condition<S: Str>(
    pod: &crate::view::Pod<S>,
) -> Option<&crate::object::Condition<S>> {
    condition(&pod.conditions, "PodScheduled")
        .filter(|c| c.status.get() == Some("False") && c.reason.get() == Some("Unschedulable"))
}
