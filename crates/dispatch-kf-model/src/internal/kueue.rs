//! Kueue mode's pure checks: what proves the readmission gate at preflight
//! (`docs/backend.md#factory-and-preflight`, step 4), what Start waits for on a new
//! TrainJob's Workload, and whether Kueue will check that Workload at all
//! (`docs/backend.md#start`, step 9).
//!
//! Each check returns `Err` with the failing part in words, which becomes the reason of
//! the ReadmissionGate capability or of Start's refusal.

use jiff::Timestamp;
use serde_json::Value;

use crate::internal::json::{annotation, has_true_condition};
use crate::keys;

fn text<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer)?.as_str()
}

/// The objects the readmission gate's proof reads; `None` for one that does not exist.
#[derive(Clone, Copy, Debug)]
pub struct GateObjects<'a> {
    /// The LocalQueue the settings name.
    pub local_queue: Option<&'a Value>,
    /// Its ClusterQueue.
    pub cluster_queue: Option<&'a Value>,
    /// The AdmissionCheck the settings name.
    pub admission_check: Option<&'a Value>,
    /// The gate controller's Lease.
    pub lease: Option<&'a Value>,
}

/// The ClusterQueue a LocalQueue points at.
pub fn cluster_queue_of(local_queue: &Value) -> Option<&str> {
    text(local_queue, "/spec/clusterQueue").filter(|s| !s.is_empty())
}

/// Whether the readmission gate is proven at `now`: the LocalQueue exists and its
/// ClusterQueue lists `check` for all flavors, the AdmissionCheck is dispatch's and
/// Active, and the gate controller's Lease is held and fresh. `Err` names every part
/// that fails.
pub fn prove_gate(
    objects: &GateObjects<'_>,
    queue: &str,
    check: &str,
    now: Timestamp,
) -> Result<(), String> {
    let mut problems = Vec::new();
    match objects.local_queue {
        None => problems.push(format!("LocalQueue {queue} does not exist")),
        Some(lq) => match (cluster_queue_of(lq), objects.cluster_queue) {
            (None, _) => problems.push(format!("LocalQueue {queue} names no ClusterQueue")),
            (Some(cq), None) => problems.push(format!("ClusterQueue {cq} does not exist")),
            (Some(cq), Some(cluster_queue)) if !lists_check(cluster_queue, check) => problems.push(
                format!("ClusterQueue {cq} does not list admission check {check} for all flavors"),
            ),
            _ => {}
        },
    }
    match objects.admission_check {
        None => problems.push(format!("AdmissionCheck {check} does not exist")),
        Some(ac) => {
            let controller = text(ac, "/spec/controllerName").unwrap_or("");
            if controller != keys::GATE_CONTROLLER_NAME {
                problems.push(format!(
                    "AdmissionCheck {check} has controllerName {controller:?}, not {}",
                    keys::GATE_CONTROLLER_NAME
                ));
            }
            if !has_true_condition(ac, "Active") {
                problems.push(format!("AdmissionCheck {check} is not Active"));
            }
        }
    }
    match objects.lease {
        None => problems.push("the gate controller's Lease does not exist".to_owned()),
        Some(lease) => {
            if let Err(why) = lease_is_fresh(lease, now) {
                problems.push(why);
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

/// `spec.admissionChecksStrategy.admissionChecks` names `check` with no `onFlavors`
/// restriction (or the older `spec.admissionChecks` list names it).
fn lists_check(cluster_queue: &Value, check: &str) -> bool {
    let strategy = cluster_queue.pointer("/spec/admissionChecksStrategy/admissionChecks");
    let by_strategy = strategy.and_then(Value::as_array).into_iter().flatten().any(|entry| {
        entry.get("name").and_then(Value::as_str) == Some(check)
            && entry.get("onFlavors").and_then(Value::as_array).is_none_or(Vec::is_empty)
    });
    let plain = cluster_queue.pointer("/spec/admissionChecks").and_then(Value::as_array);
    by_strategy || plain.into_iter().flatten().any(|c| c.as_str() == Some(check))
}

/// The Lease's `leaseDurationSeconds`: how long a holder's renewal holds, and so how
/// long a proof that it was fresh says anything. `None` when absent or not positive.
pub fn lease_duration(lease: &Value) -> Option<jiff::SignedDuration> {
    let seconds = lease.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64)?;
    (seconds > 0).then(|| jiff::SignedDuration::from_secs(seconds))
}

/// When the Lease's last renewal runs out, `renewTime + leaseDurationSeconds`: past
/// it, a proof that the Lease was fresh says nothing (the holder may be gone). `None`
/// when either is absent or not valid.
pub fn lease_expires(lease: &Value) -> Option<Timestamp> {
    let renewed = text(lease, "/spec/renewTime").and_then(|t| t.parse::<Timestamp>().ok())?;
    Some(renewed.checked_add(lease_duration(lease)?).unwrap_or(renewed))
}

/// The Lease has a holder, and `renewTime + leaseDurationSeconds` is not before `now`.
pub(crate) fn lease_is_fresh(lease: &Value, now: Timestamp) -> Result<(), String> {
    let holder = text(lease, "/spec/holderIdentity").unwrap_or("");
    if holder.is_empty() {
        return Err("the gate controller's Lease has no holder".to_owned());
    }
    let Some(expires) = lease_expires(lease) else {
        return Err(format!(
            "the gate controller's Lease (held by {holder}) has no renewTime or leaseDurationSeconds"
        ));
    };
    if expires < now {
        return Err(format!("the gate controller's Lease (held by {holder}) expired at {expires}"));
    }
    Ok(())
}

/// How the refusal of a Kueue that does not gate admission begins
/// ([`NotReady::KueueDoesNotGate`]).
pub const KUEUE_DOES_NOT_GATE: &str = "Kueue does not gate admission";

/// Why a new TrainJob's Workload is not ready for Start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotReady {
    /// Kueue made the Workload without dispatch's start gate, though the TrainJob
    /// carried it: this Kueue does not honour `kueue.x-k8s.io/admission-gated-by`
    /// (v0.17 and v0.18 without the `AdmissionGatedBy` feature gate copy no gate into
    /// the Workloads they make). Final: waiting longer cannot help, and the adapter
    /// refuses the cluster in Kueue mode.
    KueueDoesNotGate(String),
    /// Not yet: the Workload does not list the admission check.
    Waiting(String),
}

/// Whether a new TrainJob's Workload is ready for Start: it carries dispatch's start
/// gate in `kueue.x-k8s.io/admission-gated-by` and lists `check` among its admission
/// checks. A Workload without the gate is [`NotReady::KueueDoesNotGate`], whatever
/// else it lacks.
pub fn workload_ready(workload: &Value, check: &str) -> Result<(), NotReady> {
    let name = text(workload, "/metadata/name").unwrap_or("");
    let gated_by = annotation(workload, keys::KUEUE_ADMISSION_GATED_BY).unwrap_or("");
    if !gated_by.split(',').any(|g| g.trim() == keys::START_GATE) {
        return Err(NotReady::KueueDoesNotGate(format!(
            "{KUEUE_DOES_NOT_GATE}: it made Workload {name} without the start gate {} in {} \
             (Kueue v0.17 and v0.18 need the AdmissionGatedBy feature gate; it is on by \
             default from v0.19; docs/compatibility.md)",
            keys::START_GATE,
            keys::KUEUE_ADMISSION_GATED_BY
        )));
    }
    let checks = workload.pointer("/status/admissionChecks").and_then(Value::as_array);
    if !checks.into_iter().flatten().any(|c| c.get("name").and_then(Value::as_str) == Some(check)) {
        return Err(NotReady::Waiting(format!(
            "Workload {name} does not list admission check {check}"
        )));
    }
    Ok(())
}

/// Whether Kueue will run the ClusterQueue's admission checks when it admits this
/// Workload. Kueue runs a check only for the flavors an admission assigned, and it
/// assigns a pod set a flavor for each resource the pod set requests that the
/// ClusterQueue covers, and for `pods` when the ClusterQueue covers `pods` (one per
/// pod). So a ClusterQueue that covers `pods` checks every Workload, and otherwise a
/// Workload none of whose pod sets requests a covered resource (a job without GPUs on
/// a GPU queue) is admitted with no flavor and no check at all: no readmission gate,
/// no admission count in its pods. `Err` says so, and what would change it.
///
/// A pod set's requests are the resource names its template's containers, init
/// containers and overhead request or limit (Kueue counts a limit without a request as
/// the request).
pub fn checks_apply(workload: &Value, cluster_queue: &Value, check: &str) -> Result<(), String> {
    let covered = covered_resources(cluster_queue);
    if covered.contains(&keys::KUEUE_PODS_RESOURCE) {
        return Ok(());
    }
    let pod_sets = workload.pointer("/spec/podSets").and_then(Value::as_array);
    if pod_sets.into_iter().flatten().any(|ps| requested(ps).any(|r| covered.contains(&r))) {
        return Ok(());
    }
    let name = text(workload, "/metadata/name").unwrap_or("");
    let cq = text(cluster_queue, "/metadata/name").unwrap_or("");
    let listed = if covered.is_empty() { "none".to_owned() } else { covered.join(", ") };
    Err(format!(
        "Workload {name} requests none of the resources ClusterQueue {cq} covers ({listed}), so \
         Kueue would admit it with no flavor and without admission check {check}, and its pods \
         would carry no admission count: request GPUs, or add `{}` to the ClusterQueue's \
         coveredResources so that every Workload is checked",
        keys::KUEUE_PODS_RESOURCE
    ))
}

/// Every resource name a ClusterQueue's resource groups cover.
fn covered_resources(cluster_queue: &Value) -> Vec<&str> {
    let groups = cluster_queue.pointer("/spec/resourceGroups").and_then(Value::as_array);
    groups
        .into_iter()
        .flatten()
        .filter_map(|g| g.get("coveredResources").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The resource names a Workload's pod set requests or limits.
fn requested(pod_set: &Value) -> impl Iterator<Item = &str> {
    let spec = pod_set.pointer("/template/spec");
    let containers = ["containers", "initContainers"]
        .into_iter()
        .filter_map(move |list| spec?.get(list)?.as_array())
        .flatten()
        .flat_map(|c| ["requests", "limits"].map(|k| c.pointer(&format!("/resources/{k}"))))
        .chain([spec.and_then(|s| s.get("overhead"))]);
    containers.flatten().filter_map(Value::as_object).flat_map(|m| m.keys().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CHECK: &str = "dispatch-readmission";

    fn now() -> Timestamp {
        "2026-11-29T12:00:00Z".parse().unwrap()
    }

    fn good() -> [Value; 4] {
        [
            json!({"spec": {"clusterQueue": "gpu"}}),
            json!({"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}}}),
            json!({"spec": {"controllerName": keys::GATE_CONTROLLER_NAME},
                   "status": {"conditions": [{"type": "Active", "status": "True"}]}}),
            json!({"spec": {"holderIdentity": "gate-0", "renewTime": "2026-11-29T11:59:50.000000Z",
                            "leaseDurationSeconds": 15}}),
        ]
    }

    fn prove(objects: &[Option<&Value>; 4]) -> Result<(), String> {
        let objects = GateObjects {
            local_queue: objects[0],
            cluster_queue: objects[1],
            admission_check: objects[2],
            lease: objects[3],
        };
        prove_gate(&objects, "team-a", CHECK, now())
    }

    #[test]
    fn a_complete_gate_is_proven() {
        let g = good();
        assert_eq!(prove(&[Some(&g[0]), Some(&g[1]), Some(&g[2]), Some(&g[3])]), Ok(()));
    }

    #[test]
    fn every_missing_part_is_named() {
        let err = prove(&[None, None, None, None]).unwrap_err();
        assert_eq!(
            err,
            "LocalQueue team-a does not exist; AdmissionCheck dispatch-readmission does not exist; \
             the gate controller's Lease does not exist"
        );
    }

    #[test]
    fn a_check_limited_to_some_flavors_does_not_count() {
        let g = good();
        let cq = json!({"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": CHECK, "onFlavors": ["a100"]}]}}});
        let err = prove(&[Some(&g[0]), Some(&cq), Some(&g[2]), Some(&g[3])]).unwrap_err();
        assert!(err.contains("for all flavors"), "{err}");
    }

    #[test]
    fn an_inactive_or_foreign_admission_check_fails() {
        let g = good();
        let ac = json!({"spec": {"controllerName": "example.com/other"}, "status": {}});
        let err = prove(&[Some(&g[0]), Some(&g[1]), Some(&ac), Some(&g[3])]).unwrap_err();
        assert!(err.contains("controllerName") && err.contains("not Active"), "{err}");
    }

    #[test]
    fn a_stale_or_unheld_lease_fails() {
        let g = good();
        let stale = json!({"spec": {"holderIdentity": "gate-0", "renewTime": "2026-11-29T11:00:00Z", "leaseDurationSeconds": 15}});
        let err = prove(&[Some(&g[0]), Some(&g[1]), Some(&g[2]), Some(&stale)]).unwrap_err();
        assert!(err.contains("expired at 2026-11-29T11:00:15Z"), "{err}");
        assert_eq!(lease_duration(&stale), Some(jiff::SignedDuration::from_secs(15)));
        assert_eq!(lease_expires(&stale), Some("2026-11-29T11:00:15Z".parse().unwrap()));
        assert_eq!(lease_expires(&json!({"spec": {"leaseDurationSeconds": 15}})), None);
        assert_eq!(lease_duration(&json!({"spec": {"leaseDurationSeconds": 0}})), None);
        let unheld = json!({"spec": {"leaseDurationSeconds": 15}});
        assert!(lease_is_fresh(&unheld, now()).unwrap_err().contains("no holder"));
    }

    fn gpu_queue(covered: &[&str]) -> Value {
        json!({"metadata": {"name": "gpu"}, "spec": {"resourceGroups": [{"coveredResources": covered}]}})
    }

    fn workload_asking(resources: Value) -> Value {
        json!({"metadata": {"name": "w"}, "spec": {"podSets": [{"name": "node", "count": 2,
            "template": {"spec": {"containers": [{"name": "node", "resources": resources}]}}}]}})
    }

    #[test]
    fn checks_apply_to_a_workload_that_requests_a_covered_resource() {
        let cq = gpu_queue(&["cpu", "nvidia.com/gpu"]);
        for resources in
            [json!({"limits": {"nvidia.com/gpu": "8"}}), json!({"requests": {"cpu": "1"}})]
        {
            assert_eq!(checks_apply(&workload_asking(resources), &cq, CHECK), Ok(()));
        }
        let init = json!({"metadata": {"name": "w"}, "spec": {"podSets": [{"name": "node",
            "template": {"spec": {"containers": [{"name": "node"}],
                                  "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]}}}]}});
        assert_eq!(checks_apply(&init, &cq, CHECK), Ok(()));
        let overhead =
            json!({"spec": {"podSets": [{"template": {"spec": {"overhead": {"cpu": "100m"}}}}]}});
        assert_eq!(checks_apply(&overhead, &cq, CHECK), Ok(()));
    }

    #[test]
    fn a_queue_that_covers_pods_checks_every_workload() {
        let cq = gpu_queue(&["nvidia.com/gpu", keys::KUEUE_PODS_RESOURCE]);
        assert_eq!(checks_apply(&workload_asking(json!({})), &cq, CHECK), Ok(()));
        assert_eq!(checks_apply(&json!({}), &cq, CHECK), Ok(()));
    }

    #[test]
    fn a_workload_that_requests_nothing_covered_escapes_the_check_and_is_told_what_to_change() {
        let cq = gpu_queue(&["nvidia.com/gpu"]);
        for resources in [json!({}), json!({"limits": {"memory": "1Gi"}})] {
            let err = checks_apply(&workload_asking(resources), &cq, CHECK).unwrap_err();
            assert_eq!(
                err,
                "Workload w requests none of the resources ClusterQueue gpu covers (nvidia.com/gpu), \
                 so Kueue would admit it with no flavor and without admission check \
                 dispatch-readmission, and its pods would carry no admission count: request GPUs, \
                 or add `pods` to the ClusterQueue's coveredResources so that every Workload is checked"
            );
        }
        let err = checks_apply(&json!({"spec": {"podSets": "x"}}), &json!({}), CHECK).unwrap_err();
        assert!(err.contains("covers (none)"), "{err}");
    }

    #[test]
    fn a_workload_is_ready_with_the_gate_and_the_check() {
        let gate = json!({keys::KUEUE_ADMISSION_GATED_BY: keys::START_GATE});
        let ready = json!({"metadata": {"name": "w", "annotations": gate},
                           "status": {"admissionChecks": [{"name": CHECK, "state": "Pending"}]}});
        assert_eq!(workload_ready(&ready, CHECK), Ok(()));
        let unchecked = json!({"metadata": {"name": "w", "annotations": gate}});
        assert_eq!(
            workload_ready(&unchecked, CHECK),
            Err(NotReady::Waiting(format!("Workload w does not list admission check {CHECK}")))
        );
    }

    /// Kueue v0.17 and v0.18 without AdmissionGatedBy copy no gate into the Workload
    /// they make: final, whatever else the Workload lacks, and the refusal names the
    /// feature gate.
    #[test]
    fn a_workload_made_without_the_start_gate_means_kueue_does_not_gate() {
        let refusal = "Kueue does not gate admission: it made Workload w without the start gate \
             dispatch.phpboyscout.uk/start in kueue.x-k8s.io/admission-gated-by (Kueue v0.17 and \
             v0.18 need the AdmissionGatedBy feature gate; it is on by default from v0.19; \
             docs/compatibility.md)";
        let checked = json!({"metadata": {"name": "w"},
                             "status": {"admissionChecks": [{"name": CHECK, "state": "Pending"}]}});
        let other_gate = json!({"metadata": {"name": "w", "annotations": {keys::KUEUE_ADMISSION_GATED_BY: "example.com/other"}}});
        for workload in [checked, json!({"metadata": {"name": "w"}}), other_gate] {
            let err = workload_ready(&workload, CHECK).unwrap_err();
            assert_eq!(err, NotReady::KueueDoesNotGate(refusal.to_owned()), "{workload}");
        }
    }
}
