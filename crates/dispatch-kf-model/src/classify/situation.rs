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

/// The situation notes of one TrainJob.
pub(crate) fn notes<S: Str>(f: &Facts<'_, S>, outcome: &Outcome, gated: bool) -> Vec<String> {
    let mut out = Vec::new();
    let alive = outcome.state != ObjectState::Ended;
    let running = outcome.state == ObjectState::Running;
    let kueue = f.options.mode == Mode::Kueue;
    if gated {
        out.push("waiting for Open".to_owned());
    }
    if kueue && alive {
        match f.workload {
            None => out.push("no Workload yet".to_owned()),
            Some(w) => {
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
            }
        }
    }
    if let Some(note) = admitted_without_the_gate(f) {
        out.push(note);
    }
    if alive && f.admitted() && !f.suspended() && f.job_set.is_none() {
        out.push("no JobSet yet".to_owned());
    }
    if running && f.job_set.is_some() && f.current_live_pods().next().is_none() {
        out.push("no pods yet".to_owned());
    }
    let waiting = f
        .current_live_pods()
        .filter_map(|p| {
            let c = p.pod.node_container()?;
            let w = c.state.get()?.waiting.get()?;
            let reason = w.reason.get().map(trimmed).filter(|r| !STARTING_REASONS.contains(r))?;
            let words = words_of(reason, w.message.or_empty());
            Some((p.name(), format!("pod {} waiting: {words}", p.name())))
        })
        .collect();
    per_pod_notes(waiting, &mut out);
    let terminating = f
        .pods
        .iter()
        .filter(|p| !p.captured)
        .filter_map(|p| Some((p.name(), terminating(p.pod)?)))
        .collect();
    per_pod_notes(terminating, &mut out);
    if let Some(current) = f.execution {
        let mut earlier: BTreeMap<(u64, u64), Vec<&str>> = BTreeMap::new();
        for p in f.pods.iter().filter(|p| !p.captured) {
            if let Some(e) = p.exec.filter(|e| order_key(e) < order_key(&current)) {
                earlier.entry(order_key(&e)).or_default().push(p.name());
            }
        }
        for ((r, _), names) in earlier {
            out.push(format!("pods of execution {r} remain: {}", name_list(names)));
        }
    }
    if f.options.mode == Mode::Plain && f.hold_instance.is_some() && !f.tj.suspend.is_true() {
        out.push("hold in force but the TrainJob is not suspended".to_owned());
    }
    if running && !outcome.reported.unschedulable {
        let unschedulable = f
            .current_live_pods()
            .filter_map(|p| {
                let c = unschedulable_condition(p.pod)?;
                Some((p.name(), unschedulable_detail(p.name(), c)))
            })
            .collect();
        per_pod_notes(unschedulable, &mut out);
    }
    if let Some(at) = f.evidence_gap.filter(|_| evidence_matters(outcome)) {
        out.push(format!(
            "pods deleted before {at} may be missing from the evidence: the watch of pods \
             lost its place then and listed anew"
        ));
    }
    out
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
