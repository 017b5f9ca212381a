//! The Jobs the JobSet controller makes and how it resumes them (kubernetes-sigs/jobset
//! `pkg/controllers/jobset_controller.go`): `constructJob` names a Job
//! `<jobset>-<replicatedJob>-<index>` (`placement.GenJobName`), copies the replicated
//! job's template, and `labelAndAnnotateObject` puts JobSet's keys on the Job and on its
//! pod template, as labels and as annotations; with DNS hostnames (on by default) the pod
//! template's subdomain is the JobSet's; the Job is suspended when the JobSet is.
//! `resumeJob` merges the JobSet's current pod template labels, annotations, node
//! selector, tolerations and scheduling gates into a suspended Job and unsuspends it.

use serde_json::{Value, json};

use super::sha1;
use crate::plain::object::keys::{REPLICATED_JOB_NAME, RESTART_ATTEMPT};
use crate::plain::object::meta::{controller_ref, label, str_at, suspended, uid};
use crate::plain::patch::merge;

fn replicas(rj: &Value) -> i64 {
    rj["replicas"].as_i64().unwrap_or(1)
}

/// JobSet's keys for one Job (`labelAndAnnotateObject`, without the group and
/// coordinator keys, which need `spec.replicatedJobs[].groupName` / `spec.coordinator`).
fn keys(js: &Value, rj: &Value, j: i64, global: i64, job: &str) -> Value {
    let ns = str_at(js, "/metadata/namespace");
    let total: i64 = js
        .pointer("/spec/replicatedJobs")
        .and_then(Value::as_array)
        .map(|r| r.iter().map(replicas).sum())
        .unwrap_or(0);
    json!({
        "jobset.sigs.k8s.io/jobset-name": str_at(js, "/metadata/name"),
        "jobset.sigs.k8s.io/jobset-uid": uid(js),
        REPLICATED_JOB_NAME: str_at(rj, "/name"),
        RESTART_ATTEMPT: js.pointer("/status/restarts").and_then(Value::as_i64).unwrap_or(0).to_string(),
        "jobset.sigs.k8s.io/replicatedjob-replicas": replicas(rj).to_string(),
        "jobset.sigs.k8s.io/global-replicas": total.to_string(),
        "jobset.sigs.k8s.io/job-index": j.to_string(),
        "jobset.sigs.k8s.io/job-key": sha1::hex_digest(format!("{ns}/{job}").as_bytes()),
        "jobset.sigs.k8s.io/job-global-index": global.to_string(),
    })
}

/// Merges the map `add` into the map at `obj[field]`, making the map when missing
/// (`collections.MergeMaps`: a missing or null `add` changes nothing).
fn merge_map(obj: &mut Value, field: &str, add: &Value) {
    if !add.is_object() {
        return;
    }
    if !obj[field].is_object() {
        obj[field] = json!({});
    }
    merge(&mut obj[field], add);
}

/// The Job for replica `j` (global index `global`) of replicated job `rj`.
pub(crate) fn construct_job(js: &Value, rj: &Value, j: i64, global: i64) -> Value {
    let name = format!("{}-{}-{j}", str_at(js, "/metadata/name"), str_at(rj, "/name"));
    let keys = keys(js, rj, j, global, &name);
    let tmpl = &rj["template"];
    let mut meta = json!({
        "name": name, "namespace": js["metadata"]["namespace"],
        "ownerReferences": [controller_ref(js)],
    });
    for f in ["labels", "annotations"] {
        meta[f] = tmpl.pointer(&format!("/metadata/{f}")).cloned().unwrap_or(json!({}));
        merge_map(&mut meta, f, &keys);
    }
    let mut spec = if tmpl["spec"].is_object() { tmpl["spec"].clone() } else { json!({}) };
    if !spec["template"].is_object() {
        spec["template"] = json!({});
    }
    for f in ["metadata", "spec"] {
        if !spec["template"][f].is_object() {
            spec["template"][f] = json!({});
        }
    }
    for f in ["labels", "annotations"] {
        merge_map(&mut spec["template"]["metadata"], f, &keys);
    }
    let network = &js["spec"]["network"];
    if network["enableDNSHostnames"].as_bool().unwrap_or(true) {
        let subdomain = network["subdomain"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| str_at(js, "/metadata/name"));
        spec["template"]["spec"]["subdomain"] = json!(subdomain);
    }
    spec["suspend"] = json!(suspended(js));
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec})
}

/// Appends the items of `add` that `list` does not hold yet (`collections.MergeSlices`).
fn merge_list(obj: &mut Value, field: &str, add: Option<&Value>) {
    let Some(add) = add.and_then(Value::as_array) else { return };
    let mut list = obj[field].as_array().cloned().unwrap_or_default();
    for item in add {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
    obj[field] = json!(list);
}

/// The suspended `job` resumed: the JobSet's pod template for its replicated job merged
/// in (`resumeJob`), `status.startTime` cleared, `spec.suspend` false.
pub(crate) fn resume_job(js: &Value, job: &Value) -> Value {
    let mut next = job.clone();
    let rjobs = js.pointer("/spec/replicatedJobs").and_then(Value::as_array);
    let rj = rjobs.into_iter().flatten().find(|r| r["name"] == label(job, REPLICATED_JOB_NAME));
    if let Some(pod) = rj.and_then(|r| r.pointer("/template/spec/template")) {
        let t = &mut next["spec"]["template"];
        for f in ["labels", "annotations"] {
            if let Some(m) = pod.pointer(&format!("/metadata/{f}")) {
                merge_map(&mut t["metadata"], f, m);
            }
        }
        if let Some(m) = pod.pointer("/spec/nodeSelector") {
            merge_map(&mut t["spec"], "nodeSelector", m);
        }
        for f in ["tolerations", "schedulingGates"] {
            merge_list(&mut t["spec"], f, pod.pointer(&format!("/spec/{f}")));
        }
    }
    if let Some(status) = next["status"].as_object_mut() {
        status.remove("startTime");
    }
    next["spec"]["suspend"] = json!(false);
    next
}
