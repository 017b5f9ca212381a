//! The readmission gate's rule (`docs/gate.md#what-it-does`): given a Workload as read,
//! what `dispatch-kf-gate` does with its admission check. Pure: the controller reads,
//! calls [`decide`], and writes what the decision says.
//!
//! The gate acts only on a Workload whose quota Kueue has reserved and whose check is
//! Pending, as Kueue's own check controllers do: a check moved while quota is not
//! reserved can leave the Workload unschedulable (Kueue KEP-3258). Nor while the
//! Workload is being evicted (`Evicted=True`, its quota not yet released): Kueue evicts
//! in stages, and a Retry written then is never reset to Pending, because Kueue resets
//! checks only when it evicts and does not evict a Workload twice; on a real cluster
//! such a Workload waited forever. Kueue sets `Evicted` back to False when it reserves
//! quota again, and the gate decides then. It approves when
//! the start gate is gone, no dispatch hold is in force, and either no admission was
//! approved before or a Release (`d/releases`) has come that no admission used up
//! (`d/gate-releases-seen`). Otherwise it asks Kueue to retry later, saying why.
//!
//! The counters live on the Workload, so a restarted controller decides the same. It
//! records an approval, with the quota reservation it was for (`reservation`), before
//! it writes the check. When the check write does not land (a conflict, a crash between
//! the two), the check is still Pending under the same reservation, and the gate approves
//! the same admission again; under any later reservation it waits for a Release. So a
//! job never runs twice under one admission, and a lost write costs no Release.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::classify::execution::parse_counter;
use crate::internal::json::{annotation, has_true_condition};
use crate::keys;

/// How long Kueue keeps a Workload the gate turned away before it queues it again
/// (`requeueAfterSeconds` of the check).
pub(crate) const RETRY_AFTER_SECONDS: u32 = 60;

/// What the gate does with one Workload's check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing now: the check is not listed, not Pending, or quota is not reserved.
    Idle,
    /// The admission running now has used up the Releases so far: record
    /// `d/gate-releases-seen: releases`, so a later eviction waits for a new Release.
    UseUpReleases {
        /// The Workload's `d/releases`.
        releases: u64,
    },
    /// Approve admission `admission`: record it with the Releases it uses up, then
    /// set the check Ready with a podSetUpdate annotating `pod_set`.
    Approve {
        /// The admission count the pods will carry.
        admission: u64,
        /// The Workload's `d/releases`, used up by this admission.
        releases: u64,
        /// The trainer pod set.
        pod_set: String,
    },
    /// Set the check Retry with this message: Kueue evicts and queues it again later.
    Wait {
        /// What the gate waits for.
        message: String,
    },
}

/// A counter annotation: 0 when absent, `Err` naming it when malformed.
fn counter(workload: &Value, key: &str) -> Result<u64, String> {
    match annotation(workload, key) {
        None => Ok(0),
        Some(text) => parse_counter(text)
            .ok_or_else(|| format!("annotation {key}={text:?} is malformed; fix or remove it")),
    }
}

/// The state of admission check `check` on the Workload, when it lists it.
pub fn check_state<'v>(workload: &'v Value, check: &str) -> Option<&'v str> {
    let checks = workload.pointer("/status/admissionChecks").and_then(Value::as_array)?;
    let entry = checks.iter().find(|c| c["name"] == check)?;
    Some(entry.get("state").and_then(Value::as_str).unwrap_or(""))
}

/// The trainer pod set: the one named like the trainer's replicated job (`node`), or
/// the only one.
fn trainer_pod_set(workload: &Value) -> Option<String> {
    let sets = workload.pointer("/spec/podSets").and_then(Value::as_array)?;
    let name = |s: &Value| s.get("name").and_then(Value::as_str).map(str::to_owned);
    match sets.as_slice() {
        [only] => name(only),
        _ => sets.iter().find(|s| s["name"] == keys::NODE_CONTAINER).and_then(name),
    }
}

/// The words of the Workload's Evicted condition (` (Evicted: <reason>: <message>)`),
/// so the check's message still says why the admission ended once Kueue has
/// reserved quota again; empty when there is none.
fn last_eviction(workload: &Value) -> String {
    let conditions = workload.pointer("/status/conditions").and_then(Value::as_array);
    let evicted = conditions.into_iter().flatten().find(|c| c["type"] == "Evicted");
    let text = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    evicted.map_or_else(String::new, |c| {
        format!(" (Evicted: {}: {})", text(c, "reason"), text(c, "message"))
    })
}

/// The quota reservation in force, as the gate records it: how many times Kueue has
/// evicted the Workload (`status.schedulingStats.evictions`, every reason summed) and
/// when its quota was reserved (`QuotaReserved`'s `lastTransitionTime`). A reservation
/// ends only in an eviction, which Kueue counts there, so no two reservations of one
/// Workload share both, however close in time. `None` while quota is not reserved.
pub(crate) fn reservation(workload: &Value) -> Option<String> {
    let conditions = workload.pointer("/status/conditions").and_then(Value::as_array)?;
    let reserved =
        conditions.iter().find(|c| c["type"] == "QuotaReserved" && c["status"] == "True")?;
    let at = reserved.get("lastTransitionTime").and_then(Value::as_str).unwrap_or("");
    let evictions = workload.pointer("/status/schedulingStats/evictions").and_then(Value::as_array);
    let count: u64 = evictions
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("count").and_then(Value::as_u64))
        .sum();
    Some(format!("{count}@{at}"))
}

fn wait(message: impl Into<String>) -> Decision {
    Decision::Wait { message: message.into() }
}

/// The gate's decision for admission check `check` on `workload`.
pub fn decide(workload: &Value, check: &str) -> Decision {
    let Some(state) = check_state(workload, check) else { return Decision::Idle };
    let reserved = has_true_condition(workload, "QuotaReserved");
    let (releases, approved, seen) = match (
        counter(workload, keys::ANN_RELEASES),
        counter(workload, keys::ANN_GATE_ADMISSIONS),
        counter(workload, keys::ANN_GATE_RELEASES_SEEN),
    ) {
        (Ok(r), Ok(a), Ok(s)) => (r, a, s),
        (Err(why), _, _) | (_, Err(why), _) | (_, _, Err(why)) => {
            return if reserved && state == "Pending" { wait(why) } else { Decision::Idle };
        }
    };
    if state == "Ready" && has_true_condition(workload, "Admitted") && releases > seen {
        return Decision::UseUpReleases { releases };
    }
    if !reserved || state != "Pending" || has_true_condition(workload, "Evicted") {
        return Decision::Idle;
    }
    let gated_by = annotation(workload, keys::KUEUE_ADMISSION_GATED_BY).unwrap_or("");
    if gated_by.split(',').any(|g| g.trim() == keys::START_GATE) {
        return wait(format!("waiting for Open: the start gate {} is set", keys::START_GATE));
    }
    if let Some(instance) = annotation(workload, keys::ANN_HOLD_INSTANCE) {
        return wait(format!("waiting for Release: hold {instance} is in force"));
    }
    let Some(pod_set) = trainer_pod_set(workload) else {
        return wait("the Workload has no trainer pod set (named node, or the only one)");
    };
    let recorded = annotation(workload, keys::ANN_GATE_APPROVED_RESERVATION);
    if approved > 0 && recorded.is_some() && recorded == reservation(workload).as_deref() {
        // This very reservation was approved and its check write did not land.
        return Decision::Approve { admission: approved, releases: seen, pod_set };
    }
    if approved > 0 && releases <= seen {
        return wait(format!(
            "waiting for Release: admission {approved} ended in an eviction dispatch did not \
             order, and only a Release readmits it{}",
            last_eviction(workload)
        ));
    }
    Decision::Approve { admission: approved + 1, releases, pod_set }
}

/// The metadata merge patch that records a decision's counters (with the resource
/// version read, so a Workload changed since is re-read); `None` when there is nothing
/// to record.
pub fn record(workload: &Value, decision: &Decision) -> Option<Value> {
    let annotations = match decision {
        Decision::UseUpReleases { releases } => {
            json!({keys::ANN_GATE_RELEASES_SEEN: releases.to_string()})
        }
        Decision::Approve { admission, releases, .. } => json!({
            keys::ANN_GATE_ADMISSIONS: admission.to_string(),
            keys::ANN_GATE_RELEASES_SEEN: releases.to_string(),
            keys::ANN_GATE_APPROVED_RESERVATION: reservation(workload),
        }),
        Decision::Idle | Decision::Wait { .. } => return None,
    };
    let version = workload.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null);
    Some(json!({"metadata": {"resourceVersion": version, "annotations": annotations}}))
}

/// The server-side apply body that sets the check's state for a decision (only the
/// gate's own entry of `status.admissionChecks`); `None` when the check is not written.
/// It carries the resource version of `workload`, so it applies only to the Workload
/// the decision was made on (after [`record`], pass the Workload that write returned).
/// `now` is the transition time.
pub fn check_apply(
    workload: &Value,
    check: &str,
    decision: &Decision,
    now: Timestamp,
) -> Option<Value> {
    let now = transition_time(now);
    let entry = match decision {
        Decision::Approve { admission, pod_set, .. } => json!({
            "name": check, "state": "Ready", "lastTransitionTime": now,
            "message": format!("admission {admission} permitted by dispatch"),
            "podSetUpdates": [{"name": pod_set,
                               "annotations": {keys::ANN_ADMISSION: admission.to_string()}}],
        }),
        Decision::Wait { message } => json!({
            "name": check, "state": "Retry", "lastTransitionTime": now, "message": message,
            "requeueAfterSeconds": RETRY_AFTER_SECONDS,
        }),
        Decision::Idle | Decision::UseUpReleases { .. } => return None,
    };
    let meta = |k: &str| workload.pointer(&format!("/metadata/{k}")).cloned().unwrap_or_default();
    Some(json!({
        "apiVersion": keys::KUEUE_API_VERSION, "kind": "Workload",
        "metadata": {"name": meta("name"), "namespace": meta("namespace"),
                     "resourceVersion": meta("resourceVersion")},
        "status": {"admissionChecks": [entry]},
    }))
}

/// Whether an AdmissionCheck is dispatch's: its `spec.controllerName` is the gate's.
pub fn is_dispatch_check(admission_check: &Value) -> bool {
    admission_check.pointer("/spec/controllerName").and_then(Value::as_str)
        == Some(keys::GATE_CONTROLLER_NAME)
}

/// The server-side apply body that marks an AdmissionCheck served (`Active=True`);
/// `None` when it already is or is not dispatch's.
pub fn active_apply(admission_check: &Value, now: Timestamp) -> Option<Value> {
    if !is_dispatch_check(admission_check) || has_true_condition(admission_check, "Active") {
        return None;
    }
    let now = transition_time(now);
    let name = admission_check.pointer("/metadata/name").cloned().unwrap_or_default();
    Some(json!({
        "apiVersion": keys::KUEUE_API_VERSION, "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "status": {"conditions": [{
            "type": "Active", "status": "True", "reason": "Active", "lastTransitionTime": now,
            "message": "served by dispatch-kf-gate",
        }]},
    }))
}

/// A condition's `lastTransitionTime`: RFC 3339 in whole seconds, as the apiserver
/// keeps it.
fn transition_time(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests;
