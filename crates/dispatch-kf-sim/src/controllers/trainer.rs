//! The Trainer's TrainJob controller (kubeflow/trainer `pkg/controller/trainjob_controller.go`
//! and the torch plugin), for TrainJobs managed by `trainer.kubeflow.org/trainjob-controller`:
//! a JobSet of the TrainJob's name, controlled by it, built from the runtime's JobSet
//! template merged with `spec.trainer` and `spec.runtimePatches`; suspend propagated;
//! `Suspended`/`Resumed` conditions; JobSet `Completed`/`Failed` copied as `Complete`/
//! `Failed`; `activeDeadlineSeconds` failing the TrainJob and deleting the JobSet; a
//! runtime kind it has no runtime for fails the TrainJob with
//! `TrainingRuntimeNotSupported` (`Reconcile`). The runtime comes from the TrainJob's
//! runtime snapshot (`snapshot.rs`).
//!
//! As in Trainer v2.2 and v2.3, `Failed` is cleared at the start of every reconcile
//! (`removeFailedCondition`, which keeps only `DeadlineExceeded`) and set again from the
//! JobSet: a failed TrainJob whose JobSet is gone gets a new JobSet, which runs unless
//! the TrainJob is suspended.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::snapshot;
use super::wake::{self, Ctl};
use crate::plain::object::conditions::{condition, is_true, set_condition};
use crate::plain::object::keys::{TRAINER_CONTROLLER, runtime_supported, unsupported_runtime};
use crate::plain::object::meta::{controlled_by, controller_ref, deleting, str_at, suspended, uid};
use crate::plain::patch::merge;
use crate::plain::resources::id;
use crate::registry::{self, DeleteOptions, Propagation};
use crate::store::Key;
use crate::store::State;

/// The label the Trainer puts on the replicated job that runs the trainer step.
const ANCESTOR: &str = "trainer.kubeflow.org/trainjob-ancestor-step";
const MANAGER: &str = "trainer";
const TORCH_PORT: &str = "29400";

fn is_trainer_job(rjob: &Value) -> bool {
    rjob.pointer(&format!("/template/metadata/labels/{}", ANCESTOR.replace('/', "~1")))
        .is_some_and(|v| v == "trainer")
        || rjob["name"] == "node"
}

/// Merges `spec.trainer` into the `node` container of the trainer job.
fn apply_trainer(rjob: &mut Value, tj: &Value, rt: &Value) {
    let trainer = &tj["spec"]["trainer"];
    let nodes = trainer["numNodes"]
        .as_i64()
        .or_else(|| rt.pointer("/spec/mlPolicy/numNodes").and_then(Value::as_i64))
        .unwrap_or(1);
    rjob["template"]["spec"]["parallelism"] = json!(nodes);
    rjob["template"]["spec"]["completions"] = json!(nodes);
    rjob["template"]["spec"]["completionMode"] = json!("Indexed");
    let name = str_at(tj, "/metadata/name");
    // Trainer v2.3 reads it from the TrainJob alone (its runtimes' torch policy has no
    // such field), `auto` when unset (`plugins/torch/torch.go`).
    let procs =
        trainer["numProcPerNode"].as_i64().map_or_else(|| "auto".to_owned(), |n| n.to_string());
    let Some(containers) =
        rjob.pointer_mut("/template/spec/template/spec/containers").and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in containers.iter_mut().filter(|c| c["name"] == "node") {
        for f in ["image", "command", "args"] {
            if !trainer[f].is_null() {
                c[f] = trainer[f].clone();
            }
        }
        if let Some(r) = trainer.get("resourcesPerNode") {
            c["resources"] = r.clone();
        }
        let mut env: Vec<Value> = c["env"].as_array().cloned().unwrap_or_default();
        let mut set = |k: &str, v: Value| {
            env.retain(|e| e["name"] != k);
            let mut e = json!({"name": k});
            merge(&mut e, &v);
            env.push(e);
        };
        if rt.pointer("/spec/mlPolicy/torch").is_some() {
            set("PET_NNODES", json!({"value": nodes.to_string()}));
            set("PET_NPROC_PER_NODE", json!({"value": procs}));
            set(
                "PET_NODE_RANK",
                json!({"valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}),
            );
            set("PET_MASTER_ADDR", json!({"value": format!("{name}-node-0-0.{name}")}));
            set("PET_MASTER_PORT", json!({"value": TORCH_PORT}));
        }
        for e in trainer["env"].as_array().into_iter().flatten() {
            let k = str_at(e, "/name").to_string();
            set(&k, e.clone());
        }
        c["env"] = json!(env);
    }
}

/// Applies the runtime patches' metadata (JobSet, Job template, pod template) and pod
/// node selectors.
fn apply_patches(js_meta: &mut Value, spec: &mut Value, tj: &Value) {
    for p in tj.pointer("/spec/runtimePatches").and_then(Value::as_array).into_iter().flatten() {
        let t = &p["trainingRuntimeSpec"]["template"];
        for f in ["labels", "annotations"] {
            if let Some(m) = t.pointer(&format!("/metadata/{f}")) {
                merge(&mut js_meta[f], m);
            }
        }
        for rp in t.pointer("/spec/replicatedJobs").and_then(Value::as_array).into_iter().flatten()
        {
            let Some(rjobs) = spec["replicatedJobs"].as_array_mut() else { continue };
            for rj in rjobs.iter_mut().filter(|r| r["name"] == rp["name"]) {
                for f in ["labels", "annotations"] {
                    if let Some(m) = rp.pointer(&format!("/template/metadata/{f}")) {
                        merge(&mut rj["template"]["metadata"][f], m);
                    }
                    if let Some(m) = rp.pointer(&format!("/template/spec/template/metadata/{f}")) {
                        merge(&mut rj["template"]["spec"]["template"]["metadata"][f], m);
                    }
                }
                if let Some(ns) = rp.pointer("/template/spec/template/spec/nodeSelector") {
                    merge(&mut rj["template"]["spec"]["template"]["spec"]["nodeSelector"], ns);
                }
            }
        }
    }
}

/// The JobSet the Trainer wants for a TrainJob.
fn desired(tj: &Value, rt: &Value) -> Value {
    let tmpl = &rt["spec"]["template"];
    let mut spec = tmpl["spec"].clone();
    if let Some(rjobs) = spec["replicatedJobs"].as_array_mut() {
        for rj in rjobs.iter_mut().filter(|r| is_trainer_job(r)) {
            apply_trainer(rj, tj, rt);
        }
    }
    let mut meta = json!({
        "labels": tmpl.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
        "annotations": tmpl.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
    });
    apply_patches(&mut meta, &mut spec, tj);
    spec["suspend"] = json!(suspended(tj));
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {
            "name": tj["metadata"]["name"], "namespace": tj["metadata"]["namespace"],
            "labels": meta["labels"], "annotations": meta["annotations"],
            "ownerReferences": [controller_ref(tj)],
        },
        "spec": spec,
    })
}

/// When the TrainJob's `activeDeadlineSeconds` runs out, counted from its last resume
/// or else its creation.
fn deadline(tj: &Value) -> Option<Timestamp> {
    let secs = tj.pointer("/spec/activeDeadlineSeconds").and_then(Value::as_i64)?;
    let start = condition(tj, "Suspended")
        .filter(|c| c["status"] == "False")
        .map(|c| str_at(c, "/lastTransitionTime"))
        .unwrap_or_else(|| str_at(tj, "/metadata/creationTimestamp"));
    start.parse::<Timestamp>().ok().map(|s| s + SignedDuration::from_secs(secs))
}

pub(crate) fn run(state: &mut State) {
    wake::each(state, Ctl::Trainer, |state, key, tj| {
        let managed = tj
            .pointer("/spec/managedBy")
            .and_then(Value::as_str)
            .is_none_or(|m| m == TRAINER_CONTROLLER);
        if managed && !deleting(&tj) {
            reconcile(state, key, tj);
        }
    });
}

/// `removeFailedCondition`: a `Failed` condition goes unless its reason is
/// `DeadlineExceeded`; the JobSet's own sets it again when the JobSet is there.
fn remove_failed(tj: &mut Value) {
    let deadline = condition(tj, "Failed").is_some_and(|c| c["reason"] == "DeadlineExceeded");
    let conditions = tj.pointer_mut("/status/conditions").and_then(Value::as_array_mut);
    if let (false, Some(conditions)) = (deadline, conditions) {
        conditions.retain(|c| c["type"] != "Failed");
    }
}

fn reconcile(state: &mut State, key: &Key, mut tj: Value) {
    let now = state.now_str();
    let failed_before = condition(&tj, "Failed").cloned();
    remove_failed(&mut tj);
    let js_key = Key::new(id("jobsets"), &key.ns, &key.name);
    let uid = uid(&tj).to_string();
    let (group, kind, _) = snapshot::runtime_ref(&tj);
    if !runtime_supported(group, kind) {
        let message = unsupported_runtime(group, kind);
        set_condition(&mut tj, "Failed", "True", "TrainingRuntimeNotSupported", &message, &now);
    }
    let finished = is_true(&tj, "Complete") || is_true(&tj, "Failed");
    let suspended = suspended(&tj);
    if !finished {
        if suspended {
            set_condition(&mut tj, "Suspended", "True", "Suspended", "TrainJob is suspended", &now);
        } else if condition(&tj, "Suspended").is_some() {
            set_condition(&mut tj, "Suspended", "False", "Resumed", "TrainJob is resumed", &now);
        }
    }
    let deadline = deadline(&tj).filter(|_| !finished && !suspended);
    if let Some(d) = deadline.filter(|d| state.now < *d) {
        wake::at(state, Ctl::Trainer, key, d);
    }
    if deadline.is_some_and(|d| state.now >= d) {
        set_condition(
            &mut tj,
            "Failed",
            "True",
            "DeadlineExceeded",
            "TrainJob exceeded its active deadline",
            &now,
        );
        if state.store.get(&js_key).is_some_and(|js| controlled_by(js, &uid)) {
            let opts =
                DeleteOptions { propagation: Some(Propagation::Background), ..Default::default() };
            let _ = registry::delete(state, &js_key, &opts);
        }
    } else if !finished {
        sync_jobset(state, &js_key, &mut tj, &uid, &now);
    }
    keep_failed_time(&mut tj, failed_before.as_ref());
    registry::write(state, key, tj, MANAGER);
}

/// A `Failed` set again as it was keeps its time: the Trainer copies the JobSet's
/// condition, time and all, so a reconcile that changes nothing writes nothing.
fn keep_failed_time(tj: &mut Value, before: Option<&Value>) {
    let Some(before) = before else { return };
    let conditions = tj.pointer_mut("/status/conditions").and_then(Value::as_array_mut);
    for c in conditions.into_iter().flatten().filter(|c| c["type"] == "Failed") {
        let same = ["status", "reason", "message"].iter().all(|f| c.get(*f) == before.get(*f));
        if same {
            *c = before.clone();
        }
    }
}

fn sync_jobset(state: &mut State, js_key: &Key, tj: &mut Value, uid: &str, now: &str) {
    let Some(rt) = snapshot::runtime(state, tj) else { return };
    let want = desired(tj, &rt);
    match state.store.get(js_key).cloned() {
        None => {
            state.insert(id("jobsets"), want, MANAGER);
        }
        Some(js) if controlled_by(&js, uid) => {
            let was_suspended = suspended(&js);
            let mut next = js.clone();
            if was_suspended {
                // A suspended JobSet takes the whole new template (runtime patches included).
                next["spec"] = want["spec"].clone();
                next["metadata"]["labels"] = want["metadata"]["labels"].clone();
                next["metadata"]["annotations"] = want["metadata"]["annotations"].clone();
            } else {
                next["spec"]["suspend"] = want["spec"]["suspend"].clone();
            }
            registry::write(state, js_key, next, MANAGER);
            for (typ, from) in [("Complete", "Completed"), ("Failed", "Failed")] {
                if let Some(c) = condition(&js, from).filter(|c| c["status"] == "True") {
                    set_condition(
                        tj,
                        typ,
                        "True",
                        str_at(c, "/reason"),
                        str_at(c, "/message"),
                        now,
                    );
                }
            }
        }
        Some(_) => {}
    }
}
