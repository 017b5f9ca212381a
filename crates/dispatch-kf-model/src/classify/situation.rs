//! Situation notes: what status needs to explain a stall (the rows are
//! `docs/classification.md#situation-notes-classifysituationrs-in-this-order`), in the
//! table's order, each only when true.
//!
//! The notes about getting started (no Workload yet, QuotaReserved, admission checks, no
//! JobSet yet, no pods yet, unschedulable) are written only for an object that is
//! alive, and "no pods yet" only for a running one: an ended or held object is not
//! stalled. The notes about pods (waiting, terminating, earlier executions) apply
//! whatever the state.

use crate::lenient::Str;
use std::collections::BTreeMap;

use dispatch_core::{CauseKind, ObjectState};

use super::execution::order_key;
use super::facts::Facts;
use super::rules::Outcome;
use super::rules::pending_or_running::{unschedulable_condition, unschedulable_detail};
use super::text::{name_list, per_pod_notes, trimmed, with_words, words, words_of};
use crate::mode::Mode;
use crate::view::{Pod, condition};

/// Waiting reasons that are a normal start, not a stall.
pub(crate) const STARTING_REASONS: &[&str] = &["ContainerCreating", "PodInitializing"];

/// The situation notes of one TrainJob, in the table's order.
pub(crate) fn notes<S: Str>(f: &Facts<'_, S>, outcome: &Outcome, gated: bool) -> Vec<String> {
    let mut out = Vec::new();
    let alive = outcome.state != ObjectState::Ended;
    let running = outcome.state == ObjectState::Running;
    if gated {
        out.push("waiting for Open".to_owned());
    }
    if f.options.mode == Mode::Kueue && alive {
        out.extend(what_the_workload_waits_for(f, outcome));
    }
    out.extend(admitted_without_the_gate(f));
    if alive && f.admitted() && !f.suspended() && f.job_set.is_none() {
        out.push("no JobSet yet".to_owned());
    }
    if running && f.job_set.is_some() && f.current_live_pods().next().is_none() {
        out.push("no pods yet".to_owned());
    }
    per_pod_notes(waiting_pods(f), &mut out);
    per_pod_notes(terminating_pods(f), &mut out);
    out.extend(earlier_executions_remain(f));
    out.extend(hold_without_suspend(f));
    if running && !outcome.reported.unschedulable {
        per_pod_notes(unschedulable_pods(f), &mut out);
    }
    out.extend(evidence_gap(f, outcome));
    out
}

/// Kueue mode, an object alive: no Workload yet; else its QuotaReserved condition while
/// it is not admitted (unless the cause already says so), and each of its admission
/// checks that is not Ready.
fn what_the_workload_waits_for<S: Str>(f: &Facts<'_, S>, outcome: &Outcome) -> Vec<String> {
    let Some(w) = f.workload else { return vec!["no Workload yet".to_owned()] };
    let mut out = Vec::new();
    if !f.admitted() && !outcome.reported.quota {
        let q = condition(&w.conditions, "QuotaReserved");
        let status = q.and_then(|c| c.status.get()).unwrap_or("Unknown");
        let prefix = format!("Workload {} QuotaReserved={status}", w.meta.name());
        out.push(with_words(&prefix, &q.map(words).unwrap_or_default()));
    }
    for check in w.admission_checks.iter().filter(|c| c.state.get() != Some("Ready")) {
        let prefix = format!(
            "admission check {} {}",
            check.name.or_empty(),
            check.state.get().unwrap_or("Unknown")
        );
        out.push(with_words(&prefix, trimmed(check.message.or_empty())));
    }
    out
}

/// `pod <p> waiting: <reason>: <message>` for each live pod of the current execution
/// whose `node` container waits for a reason other than a normal start.
fn waiting_pods<'f, S: Str>(f: &'f Facts<'_, S>) -> Vec<(&'f str, String)> {
    f.current_live_pods()
        .filter_map(|p| {
            let c = p.pod.node_container()?;
            let w = c.state.get()?.waiting.get()?;
            let reason = w.reason.get().map(trimmed).filter(|r| !STARTING_REASONS.contains(r))?;
            let words = words_of(reason, w.message.or_empty());
            Some((p.name(), format!("pod {} waiting: {words}", p.name())))
        })
        .collect()
}

/// [`terminating`] for each live pod, of any execution.
fn terminating_pods<'f, S: Str>(f: &'f Facts<'_, S>) -> Vec<(&'f str, String)> {
    f.pods
        .iter()
        .filter(|p| !p.captured)
        .filter_map(|p| Some((p.name(), terminating(p.pod)?)))
        .collect()
}

/// `pods of execution <r> remain: <names>` for each execution before the current one
/// that still has live pods, oldest first.
fn earlier_executions_remain<S: Str>(f: &Facts<'_, S>) -> Vec<String> {
    let Some(current) = f.execution else { return Vec::new() };
    let mut earlier: BTreeMap<(u64, u64), Vec<&str>> = BTreeMap::new();
    for p in f.pods.iter().filter(|p| !p.captured) {
        if let Some(e) = p.exec.filter(|e| order_key(e) < order_key(&current)) {
            earlier.entry(order_key(&e)).or_default().push(p.name());
        }
    }
    earlier
        .into_iter()
        .map(|((r, _), names)| format!("pods of execution {r} remain: {}", name_list(names)))
        .collect()
}

/// Plain mode: a hold's instance annotation on a TrainJob that is not suspended.
fn hold_without_suspend<S: Str>(f: &Facts<'_, S>) -> Option<String> {
    let unsuspended_hold =
        f.options.mode == Mode::Plain && f.hold_instance.is_some() && !f.tj.suspend.is_true();
    unsuspended_hold.then(|| "hold in force but the TrainJob is not suspended".to_owned())
}

/// The unschedulable condition of each live pod of the current execution.
fn unschedulable_pods<'f, S: Str>(f: &'f Facts<'_, S>) -> Vec<(&'f str, String)> {
    f.current_live_pods()
        .filter_map(|p| {
            let c = unschedulable_condition(p.pod)?;
            Some((p.name(), unschedulable_detail(p.name(), c)))
        })
        .collect()
}

/// When the capture of deleted pods has a gap and those pods could change the answer
/// ([`evidence_matters`]): which pods may be missing, and why.
fn evidence_gap<S: Str>(f: &Facts<'_, S>, outcome: &Outcome) -> Option<String> {
    let at = f.evidence_gap.filter(|_| evidence_matters(outcome))?;
    Some(format!(
        "pods deleted before {at} may be missing from the evidence: the watch of pods \
         lost its place then and listed anew"
    ))
}

/// Whether what deleted pods left could change the answer: the object ended, or its
/// cause is unknown.
fn evidence_matters(outcome: &Outcome) -> bool {
    outcome.state == ObjectState::Ended || outcome.cause.kind == CauseKind::Unknown
}

/// Kueue mode: the Workload of a TrainJob dispatch made is admitted and lists no
/// admission check. Kueue runs a ClusterQueue's checks only for the flavors it assigned,
/// and assigns none to a job that requests none of the ClusterQueue's resources, so such
/// a job runs without dispatch's check: unguarded by the readmission gate, its pods
/// without an admission count from it. (A ClusterQueue the adapter accepts checks every
/// flavor, so a Workload assigned any flavor lists dispatch's check.)
fn admitted_without_the_gate<S: Str>(f: &Facts<'_, S>) -> Option<String> {
    let w = f.workload.filter(|_| f.options.mode == Mode::Kueue && f.named.is_some())?;
    if !f.admitted() || !w.admission_checks.is_empty() {
        return None;
    }
    Some(format!(
        "Workload {} admitted without dispatch's admission check: the readmission gate does not \
         guard it, and its pods get no admission count from it (Kueue runs a ClusterQueue's \
         admission checks only for the flavors it assigns, and assigns none to a job that \
         requests none of the ClusterQueue's resources)",
        w.meta.name()
    ))
}

/// `pod <p> terminating since <time>` (`on node <n>` when bound), for a pod with a
/// deletionTimestamp.
pub(crate) fn terminating<S: Str>(pod: &Pod<S>) -> Option<String> {
    let since = pod.meta.deletion_timestamp.get()?;
    let mut note = format!("pod {} terminating since {since}", pod.meta.name());
    if let Some(node) = pod.node_name.get().filter(|n| !n.is_empty()) {
        note.push_str(&format!(" on node {node}"));
    }
    Some(note)
}
