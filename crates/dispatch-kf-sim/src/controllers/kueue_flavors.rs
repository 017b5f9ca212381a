//! Kueue's flavor assignment and which admission checks apply, as far as dispatch's
//! readmission gate depends on them (Kueue v0.19's `flavorassigner` and
//! `AdmissionChecksForWorkload`):
//!
//! - a pod set is assigned a flavor for each resource it requests (its containers'
//!   requests or limits) that the ClusterQueue covers, and for `pods` when the
//!   ClusterQueue covers `pods`; a requested resource no resource group covers makes
//!   the Workload inadmissible. The flavor is the first of the covering group that
//!   lists the resource (the sim does not try a second flavor when the first is full);
//! - a check applies to the flavors it names in `onFlavors`, or to all of the
//!   ClusterQueue's when it names none. Before admission, a Workload lists only the
//!   checks that apply to all of the ClusterQueue's flavors; once admitted, only those
//!   whose flavors meet the ones assigned, so a Workload assigned no flavor (it requests
//!   nothing the ClusterQueue covers) is admitted with no check at all.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// The resource Kueue counts once per pod when a ClusterQueue covers it.
const PODS: &str = "pods";

fn names<'v>(value: &'v Value, pointer: &str) -> impl Iterator<Item = &'v str> {
    value.pointer(pointer).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

fn groups(cq: &Value) -> impl Iterator<Item = &Value> {
    cq.pointer("/spec/resourceGroups").and_then(Value::as_array).into_iter().flatten()
}

/// Every flavor of the ClusterQueue's resource groups.
fn all_flavors(cq: &Value) -> BTreeSet<&str> {
    groups(cq)
        .flat_map(|g| g["flavors"].as_array().into_iter().flatten())
        .filter_map(|f| f["name"].as_str())
        .collect()
}

/// The flavor a resource is assigned: the first of the group covering it that lists it.
fn flavor_for<'c>(cq: &'c Value, resource: &str) -> Option<&'c str> {
    let group = groups(cq).find(|g| names(g, "/coveredResources").any(|r| r == resource))?;
    let flavors = group["flavors"].as_array()?;
    flavors
        .iter()
        .find(|f| f["resources"].as_array().into_iter().flatten().any(|r| r["name"] == resource))
        .or(flavors.first())
        .and_then(|f| f["name"].as_str())
}

/// The resource names a pod set's containers request or limit.
fn requested(pod_set: &Value) -> BTreeSet<&str> {
    let containers = pod_set.pointer("/template/spec/containers").and_then(Value::as_array);
    containers
        .into_iter()
        .flatten()
        .flat_map(|c| ["requests", "limits"].map(|k| c.pointer(&format!("/resources/{k}"))))
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|m| m.keys().map(String::as_str))
        .collect()
}

/// The Workload's `status.admission.podSetAssignments` in `cq`, or the message of
/// `QuotaReserved=False` when a pod set requests a resource the ClusterQueue lacks.
pub(crate) fn assign(cq: &Value, wl: &Value) -> Result<Vec<Value>, String> {
    let covers_pods = groups(cq).any(|g| names(g, "/coveredResources").any(|r| r == PODS));
    let pod_sets = wl.pointer("/spec/podSets").and_then(Value::as_array);
    let mut assignments = Vec::new();
    for ps in pod_sets.into_iter().flatten() {
        let name = ps["name"].as_str().unwrap_or_default();
        let mut resources = requested(ps);
        if covers_pods {
            resources.insert(PODS);
        }
        let mut flavors = Map::new();
        for r in resources {
            let flavor = flavor_for(cq, r).ok_or_else(|| {
                format!("couldn't assign flavors to pod set {name}: resource {r} unavailable in ClusterQueue")
            })?;
            flavors.insert(r.to_owned(), json!(flavor));
        }
        assignments.push(json!({"name": name, "count": ps["count"], "flavors": flavors}));
    }
    Ok(assignments)
}

/// The admission checks of `cq` a Workload lists: with `admission` (its
/// `status.admission`), those whose flavors meet the assigned ones; without, those
/// that apply to all of the ClusterQueue's flavors.
pub(crate) fn applicable_checks(cq: &Value, admission: Option<&Value>) -> Vec<String> {
    let all = all_flavors(cq);
    let assigned: Option<BTreeSet<&str>> = admission.map(|a| {
        let assignments = a["podSetAssignments"].as_array().into_iter().flatten();
        assignments
            .filter_map(|ps| ps["flavors"].as_object())
            .flat_map(|f| f.values().filter_map(Value::as_str))
            .collect()
    });
    let checks = cq.pointer("/spec/admissionChecksStrategy/admissionChecks");
    let checks = checks.and_then(Value::as_array).into_iter().flatten();
    checks
        .filter(|c| {
            let named: BTreeSet<&str> = names(c, "/onFlavors").collect();
            let flavors = if named.is_empty() { &all } else { &named };
            match &assigned {
                Some(assigned) => !assigned.is_disjoint(flavors),
                None => flavors.is_superset(&all),
            }
        })
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(covered: &[&str], checks: Value) -> Value {
        let resources: Vec<Value> =
            covered.iter().map(|r| json!({"name": r, "nominalQuota": "8"})).collect();
        json!({"spec": {
            "resourceGroups": [{"coveredResources": covered,
                                "flavors": [{"name": "default-flavor", "resources": resources}]}],
            "admissionChecksStrategy": {"admissionChecks": checks}}})
    }

    fn workload(resources: Value) -> Value {
        json!({"spec": {"podSets": [{"name": "node", "count": 2,
            "template": {"spec": {"containers": [{"name": "node", "resources": resources}]}}}]}})
    }

    fn admission(assignments: Vec<Value>) -> Value {
        json!({"clusterQueue": "gpu", "podSetAssignments": assignments})
    }

    #[test]
    fn a_pod_set_gets_a_flavor_for_each_covered_resource_it_requests_and_for_pods() {
        let gpus = workload(json!({"limits": {"nvidia.com/gpu": "8"}}));
        let gpu_only = queue(&["nvidia.com/gpu"], json!([]));
        assert_eq!(
            assign(&gpu_only, &gpus).unwrap(),
            [json!({"name": "node", "count": 2, "flavors": {"nvidia.com/gpu": "default-flavor"}})]
        );
        let bare = workload(json!({}));
        assert_eq!(
            assign(&gpu_only, &bare).unwrap(),
            [json!({"name": "node", "count": 2, "flavors": {}})]
        );
        let with_pods = queue(&["nvidia.com/gpu", "pods"], json!([]));
        assert_eq!(
            assign(&with_pods, &bare).unwrap(),
            [json!({"name": "node", "count": 2, "flavors": {"pods": "default-flavor"}})]
        );
        let memory = workload(json!({"requests": {"memory": "1Gi"}}));
        assert_eq!(
            assign(&gpu_only, &memory).unwrap_err(),
            "couldn't assign flavors to pod set node: resource memory unavailable in ClusterQueue"
        );
    }

    #[test]
    fn checks_apply_by_flavor_as_kueue_runs_them() {
        let cq = queue(
            &["nvidia.com/gpu"],
            json!([{"name": "all"}, {"name": "elsewhere", "onFlavors": ["a100"]}]),
        );
        assert_eq!(applicable_checks(&cq, None), ["all"]);
        let gpus =
            admission(assign(&cq, &workload(json!({"limits": {"nvidia.com/gpu": "8"}}))).unwrap());
        assert_eq!(applicable_checks(&cq, Some(&gpus)), ["all"]);
        let nothing = admission(assign(&cq, &workload(json!({}))).unwrap());
        assert!(applicable_checks(&cq, Some(&nothing)).is_empty());
    }
}
