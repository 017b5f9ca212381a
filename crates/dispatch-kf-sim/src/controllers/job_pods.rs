//! The pods the Job controller makes (kubernetes/kubernetes
//! `pkg/controller/job/job_controller.go` `manageJob`, `indexed_job_utils.go`): from the
//! Job's pod template, controlled by the Job, with the `batch.kubernetes.io/job-tracking`
//! finalizer; an Indexed Job's pod is generated as `<job>-<index>-<5 chars>`, carries
//! its completion index as annotation and label, the hostname `<job>-<index>` and the
//! `JOB_COMPLETION_INDEX` variable. Also the `completedIndexes` text form (`1,3-5`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::KUBE_CONTROLLER_MANAGER;
use crate::plain::object::meta::{controller_ref, str_at};
use crate::plain::resources::id;
use crate::store::State;

/// The Job controller's pod finalizer.
pub(crate) const TRACKING: &str = "batch.kubernetes.io/job-tracking";
/// The completion index annotation and label of an Indexed Job's pod.
pub(crate) const INDEX: &str = "batch.kubernetes.io/job-completion-index";
const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// A pod's completion index, from its annotation.
pub(crate) fn index_of(pod: &Value) -> Option<i64> {
    pod.pointer("/metadata/annotations")?.get(INDEX)?.as_str()?.parse().ok()
}

/// Parses `completedIndexes` (`1,3-5,7`); what does not parse is skipped.
pub(crate) fn parse_indexes(text: &str) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
            out.extend(a..=b.min(a.saturating_add(100_000)));
        }
    }
    out
}

/// The text form of a set of indexes: ascending, runs as `first-last`.
pub(crate) fn format_indexes(set: &BTreeSet<i64>) -> String {
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for &i in set {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == i => *last = i,
            _ => runs.push((i, i)),
        }
    }
    let text: Vec<String> =
        runs.iter().map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    text.join(",")
}

fn add_index_env(containers: &mut Value) {
    for c in containers.as_array_mut().into_iter().flatten().filter(|c| c.is_object()) {
        let has = c["env"].as_array().is_some_and(|e| e.iter().any(|v| v["name"] == INDEX_ENV));
        if has {
            continue;
        }
        let var = json!({"name": INDEX_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": format!("metadata.annotations['{INDEX}']")}}});
        match c["env"].as_array_mut() {
            Some(env) => env.push(var),
            None => c["env"] = json!([var]),
        }
    }
}

fn make_pod(state: &mut State, job: &Value, index: Option<i64>) {
    let name = str_at(job, "/metadata/name");
    let tmpl = &job["spec"]["template"];
    let object_at = |p: &str| tmpl.pointer(p).filter(|v| v.is_object()).cloned();
    let mut labels = object_at("/metadata/labels").unwrap_or(json!({}));
    let mut annotations = object_at("/metadata/annotations").unwrap_or(json!({}));
    let mut spec = object_at("/spec").unwrap_or(json!({}));
    let prefix = match index {
        Some(ix) => {
            annotations[INDEX] = json!(ix.to_string());
            labels[INDEX] = json!(ix.to_string());
            spec["hostname"] = json!(format!("{name}-{ix}"));
            add_index_env(&mut spec["containers"]);
            if spec["initContainers"].is_array() {
                add_index_env(&mut spec["initContainers"]);
            }
            format!("{name}-{ix}-")
        }
        None => format!("{name}-"),
    };
    if spec["restartPolicy"].is_null() {
        spec["restartPolicy"] = json!("OnFailure");
    }
    let pod = json!({
        "metadata": {
            "name": format!("{prefix}{}", state.suffix(5)), "generateName": prefix,
            "namespace": job["metadata"]["namespace"], "labels": labels,
            "annotations": annotations, "ownerReferences": [controller_ref(job)],
            "finalizers": [TRACKING],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    });
    state.insert(id("pods"), pod, KUBE_CONTROLLER_MANAGER);
}

/// Makes the pods a running Job lacks: for an Indexed Job, the lowest indexes neither
/// done nor held by a pod in `held` (`firstPendingIndexes`); otherwise as many pods as
/// `min(parallelism, completions - succeeded)` exceeds `held`. Returns how many.
pub(crate) fn create_missing(
    state: &mut State,
    job: &Value,
    held: &[&Value],
    done: &BTreeSet<i64>,
) -> usize {
    let int = |p: &str| job.pointer(p).and_then(Value::as_i64);
    let parallelism = int("/spec/parallelism").unwrap_or(1);
    let completions = int("/spec/completions").unwrap_or(parallelism);
    let succeeded = int("/status/succeeded").unwrap_or(0);
    let want = parallelism.min(completions - succeeded).max(0) as usize;
    let diff = want.saturating_sub(held.len());
    if job["spec"]["completionMode"] == "Indexed" {
        let taken: BTreeSet<i64> = held.iter().filter_map(|p| index_of(p)).collect();
        let pending: Vec<i64> = (0..completions)
            .filter(|i| !done.contains(i) && !taken.contains(i))
            .take(diff)
            .collect();
        for &ix in &pending {
            make_pod(state, job, Some(ix));
        }
        pending.len()
    } else {
        for _ in 0..diff {
            make_pod(state, job, None);
        }
        diff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_read_and_write_as_runs() {
        let set = parse_indexes("1,3-5,7");
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), [1, 3, 4, 5, 7]);
        assert_eq!(format_indexes(&set), "1,3-5,7");
        assert_eq!(format_indexes(&BTreeSet::new()), "");
        assert!(parse_indexes("x,-").is_empty());
    }
}
