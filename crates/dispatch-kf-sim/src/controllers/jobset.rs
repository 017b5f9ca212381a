//! The JobSet controller (kubernetes-sigs/jobset `pkg/controllers/jobset_controller.go`),
//! with the Job controller folded in (the sim serves no batch/v1 Jobs): pods named
//! `<jobset>-<rjob>-<jobidx>-<podidx>-<5 chars>` with JobSet's and the Job controller's
//! labels and annotations, owned by the JobSet and held by the Job controller's tracking
//! finalizer until counted; failurePolicy.maxRestarts (restart-attempt raised, old pods
//! deleted before new ones are made); suspend; `Completed` and `Failed` with JobSet's
//! reasons and messages.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::util::{controlled_by, controller_ref, deleting, is_true, set_condition, str_at};
use crate::delete::{self, DeleteOptions};
use crate::patch::merge;
use crate::resources::id;
use crate::state::State;
use crate::store::Key;

/// The Job controller's pod finalizer.
pub(crate) const TRACKING: &str = "batch.kubernetes.io/job-tracking";
const RESTART: &str = "jobset.sigs.k8s.io/restart-attempt";
const INDEX: &str = "batch.kubernetes.io/job-completion-index";
const MANAGER: &str = "jobset";

fn phase(p: &Value) -> &str {
    str_at(p, "/status/phase")
}

fn terminal(p: &Value) -> bool {
    matches!(phase(p), "Succeeded" | "Failed")
}

fn label<'a>(p: &'a Value, k: &str) -> &'a str {
    p.pointer("/metadata/labels").and_then(|l| l.get(k)).and_then(Value::as_str).unwrap_or_default()
}

fn drop_finalizer(state: &mut State, k: &Key) {
    delete::remove_finalizer(state, k, TRACKING);
}

fn delete_pod(state: &mut State, k: &Key) {
    let pending = state.store.get(k).is_some_and(deleting);
    if !pending {
        let _ = delete::delete(state, k, &DeleteOptions::default());
    }
}

pub(crate) fn run(state: &mut State) {
    let sets: Vec<(Key, Value)> = state
        .store
        .list(id("jobsets"), "")
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let live: BTreeSet<String> = sets
        .iter()
        .filter(|(_, js)| !deleting(js))
        .map(|(_, js)| str_at(js, "/metadata/uid").to_string())
        .collect();
    for (key, js) in sets {
        if !deleting(&js) {
            reconcile(state, &key, js);
        }
    }
    // The Job controller lets go of pods whose Job (here: JobSet) is gone or going.
    let orphans: Vec<Key> = state
        .store
        .list(id("pods"), "")
        .into_iter()
        .filter(|(_, p)| {
            let tracked = p
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|x| x == TRACKING));
            tracked && !live.iter().any(|u| controlled_by(p, u))
        })
        .map(|(k, _)| k.clone())
        .collect();
    for k in orphans {
        drop_finalizer(state, &k);
    }
}

fn pods_of(state: &State, ns: &str, uid: &str) -> Vec<(Key, Value)> {
    state
        .store
        .list(id("pods"), ns)
        .into_iter()
        .filter(|(_, p)| controlled_by(p, uid))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn reconcile(state: &mut State, key: &Key, mut js: Value) {
    let now = state.now_str();
    let before = js.clone();
    let uid = str_at(&js, "/metadata/uid").to_string();
    let name = key.name.clone();
    let pods = pods_of(state, &key.ns, &uid);
    if is_true(&js, "Completed") || is_true(&js, "Failed") {
        for (k, p) in &pods {
            if !terminal(p) {
                delete_pod(state, k);
            }
            drop_finalizer(state, k);
        }
        return;
    }
    let attempt = js.pointer("/status/restarts").and_then(Value::as_i64).unwrap_or(0);
    if js.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false) {
        for (k, p) in &pods {
            if !terminal(p) {
                delete_pod(state, k);
            }
            drop_finalizer(state, k);
        }
        set_condition(&mut js, "Suspended", "True", "SuspendedJobs", "jobset is suspended", &now);
    } else {
        if is_true(&js, "Suspended") {
            set_condition(&mut js, "Suspended", "False", "ResumeJobs", "jobset is resumed", &now);
        }
        let old: Vec<&(Key, Value)> =
            pods.iter().filter(|(_, p)| label(p, RESTART) != attempt.to_string()).collect();
        for (k, _) in &old {
            drop_finalizer(state, k);
            delete_pod(state, k);
        }
        let old_remain = old.iter().any(|(k, _)| state.store.get(k).is_some());
        if !old_remain {
            run_jobs(state, &mut js, &name, &key.ns, attempt, &pods, &now);
        }
    }
    if js != before {
        state.store.put(key.clone(), js);
    }
}

fn run_jobs(
    state: &mut State,
    js: &mut Value,
    name: &str,
    ns: &str,
    attempt: i64,
    pods: &[(Key, Value)],
    now: &str,
) {
    let rjobs =
        js.pointer("/spec/replicatedJobs").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut first_failed: Option<String> = None;
    let (mut all_done, mut global) = (true, 0);
    let mut statuses = Vec::new();
    for rj in &rjobs {
        let rname = str_at(rj, "/name").to_string();
        let replicas = rj["replicas"].as_i64().unwrap_or(1);
        let tspec = &rj["template"]["spec"];
        let completions =
            tspec["completions"].as_i64().or(tspec["parallelism"].as_i64()).unwrap_or(1);
        let backoff = tspec["backoffLimit"].as_i64().unwrap_or(6);
        let (mut ready, mut succeeded, mut failed, mut active) = (0, 0, 0, 0);
        for j in 0..replicas {
            let job = format!("{name}-{rname}-{j}");
            let mine: Vec<&Value> = pods
                .iter()
                .map(|(_, p)| p)
                .filter(|p| {
                    label(p, "batch.kubernetes.io/job-name") == job
                        && label(p, RESTART) == attempt.to_string()
                })
                .collect();
            let failures = mine.iter().filter(|p| phase(p) == "Failed").count() as i64;
            let done: BTreeSet<&str> =
                mine.iter().filter(|p| phase(p) == "Succeeded").map(|p| label(p, INDEX)).collect();
            if failures > backoff {
                failed += 1;
                first_failed.get_or_insert(job.clone());
            } else if done.len() as i64 >= completions {
                succeeded += 1;
            } else {
                all_done = false;
                active += 1;
                if mine.iter().all(|p| phase(p) == "Running") && mine.len() as i64 >= completions {
                    ready += 1;
                }
                for idx in 0..completions {
                    let live = mine.iter().any(|p| {
                        label(p, INDEX) == idx.to_string() && !terminal(p) && !deleting(p)
                    });
                    if !live && !done.contains(idx.to_string().as_str()) {
                        make_pod(state, js, rj, &job, j, global, idx, attempt, ns);
                    }
                }
            }
            global += 1;
        }
        statuses.push(json!({"name": rname, "ready": ready, "succeeded": succeeded, "failed": failed, "active": active, "suspended": 0}));
    }
    js["status"]["replicatedJobsStatus"] = json!(statuses);
    js["status"]["restarts"] = json!(attempt);
    if let Some(job) = first_failed {
        let policy = js.pointer("/spec/failurePolicy").cloned();
        let max = policy.as_ref().and_then(|p| p["maxRestarts"].as_i64()).unwrap_or(0);
        let (reason, msg) = match policy {
            None => ("FailedJobs", "jobset failed due to one or more job failures"),
            Some(_) if attempt >= max => {
                ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
            }
            Some(_) => {
                js["status"]["restarts"] = json!(attempt + 1);
                let counted = js
                    .pointer("/status/restartsCountTowardsMax")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                js["status"]["restartsCountTowardsMax"] = json!(counted + 1);
                return;
            }
        };
        let message = format!("{msg} (first failed job: {job})");
        set_condition(js, "Failed", "True", reason, &message, now);
        js["status"]["terminalState"] = json!("Failed");
    } else if all_done && !rjobs.is_empty() {
        set_condition(
            js,
            "Completed",
            "True",
            "AllJobsCompleted",
            "jobset completed successfully",
            now,
        );
        js["status"]["terminalState"] = json!("Completed");
    }
}

#[allow(clippy::too_many_arguments)]
fn make_pod(
    state: &mut State,
    js: &Value,
    rj: &Value,
    job: &str,
    j: i64,
    global: i64,
    idx: i64,
    attempt: i64,
    ns: &str,
) {
    let name = str_at(js, "/metadata/name");
    let rname = str_at(rj, "/name");
    let tmpl = &rj["template"]["spec"]["template"];
    let mut labels = json!({});
    merge(&mut labels, tmpl.pointer("/metadata/labels").unwrap_or(&json!({})));
    // JobSet's keys go on pods as labels and annotations; the Job controller adds its own.
    let jobset_keys = json!({
        "jobset.sigs.k8s.io/jobset-name": name,
        "jobset.sigs.k8s.io/replicatedjob-name": rname,
        "jobset.sigs.k8s.io/replicatedjob-replicas": rj["replicas"].as_i64().unwrap_or(1).to_string(),
        "jobset.sigs.k8s.io/job-index": j.to_string(),
        "jobset.sigs.k8s.io/job-global-index": global.to_string(),
        "jobset.sigs.k8s.io/jobset-uid": str_at(js, "/metadata/uid"),
        RESTART: attempt.to_string(),
        INDEX: idx.to_string(),
    });
    merge(&mut labels, &jobset_keys);
    merge(&mut labels, &json!({"batch.kubernetes.io/job-name": job, "job-name": job}));
    let mut annotations = json!({});
    merge(&mut annotations, tmpl.pointer("/metadata/annotations").unwrap_or(&json!({})));
    merge(&mut annotations, &jobset_keys);
    let mut spec = tmpl["spec"].clone();
    spec["hostname"] = json!(format!("{job}-{idx}"));
    spec["subdomain"] = json!(name);
    if spec["restartPolicy"].is_null() {
        spec["restartPolicy"] = json!("OnFailure");
    }
    let pod_name = format!("{job}-{idx}-{}", state.suffix(5));
    let pod = json!({
        "metadata": {
            "name": pod_name, "namespace": ns, "labels": labels, "annotations": annotations,
            "ownerReferences": [controller_ref(js)], "finalizers": [super::jobset::TRACKING],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    });
    state.insert(id("pods"), pod, MANAGER);
}
