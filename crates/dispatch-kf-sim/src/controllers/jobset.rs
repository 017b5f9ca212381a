//! The JobSet controller (kubernetes-sigs/jobset `pkg/controllers/jobset_controller.go`,
//! `Reconcile` and `reconcile`): one batch/v1 Job per replicatedJob replica, controlled
//! by the JobSet (see `jobset_jobs.rs` for what a Job carries). Each pass sorts the
//! JobSet's Jobs as `getChildJobs` does (previous restart attempt, active, successful,
//! failed, by the Jobs' `Complete`/`Failed` conditions only: a Job at `FailureTarget` is
//! still active), then, in `reconcile`'s order: a finished JobSet deletes its active
//! Jobs; Jobs of a previous attempt are deleted (foreground); a failed Job runs the
//! failure policy (`failure_policy.go`: `maxRestarts` raises `status.restarts`, else
//! `Failed` with `FailedJobs` / `ReachedMaxRestarts`); successful Jobs run the success
//! policy (`Completed`/`AllJobsCompleted`); missing Jobs are created (a name still held
//! by a Job being deleted waits, as `shouldCreateJob` does); suspend and resume. A
//! finished JobSet with `ttlSecondsAfterFinished` is deleted (foreground) that long after
//! its `Completed`/`Failed` condition (`ttl_after_finished.go`).

use serde_json::{Value, json};

use super::jobset_jobs::{construct_job, resume_job};
use super::util::{delete_once, objects_at, owned};
use super::wake::{self, Ctl};
use crate::plain::object::conditions::{condition, is_true, set_condition};
use crate::plain::object::keys::{REPLICATED_JOB_NAME, RESTART_ATTEMPT};
use crate::plain::object::meta::{deleting, label, str_at, suspended, uid};
use crate::plain::resources::id;
use crate::registry::{self, Propagation};
use crate::store::Key;
use crate::store::State;

const CONTROLLER: &str = "jobset.sigs.k8s.io/jobset-controller";
const MANAGER: &str = "jobset";

/// A JobSet's Jobs, sorted as `getChildJobs` sorts them.
#[derive(Default)]
struct Children {
    previous: Vec<(Key, Value)>,
    active: Vec<(Key, Value)>,
    successful: Vec<(Key, Value)>,
    failed: Vec<(Key, Value)>,
}

impl Children {
    fn read(state: &State, ns: &str, js: &Value) -> Self {
        let restarts = int_at(js, "/status/restarts");
        let mut out = Self::default();
        for (k, job) in owned(state, "jobs", ns, uid(js)) {
            let bucket = match label(&job, RESTART_ATTEMPT).parse::<i64>() {
                Ok(r) if r >= restarts => {
                    if is_true(&job, "Failed") {
                        &mut out.failed
                    } else if is_true(&job, "Complete") {
                        &mut out.successful
                    } else {
                        &mut out.active
                    }
                }
                _ => &mut out.previous,
            };
            bucket.push((k, job));
        }
        out
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        [&self.previous, &self.active, &self.successful, &self.failed]
            .into_iter()
            .flatten()
            .map(|(k, _)| k.name.as_str())
    }
}

fn int_at(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn replicated_jobs(js: &Value) -> Vec<Value> {
    js.pointer("/spec/replicatedJobs").and_then(Value::as_array).cloned().unwrap_or_default()
}

pub(crate) fn run(state: &mut State) {
    wake::each(state, Ctl::JobSet, |state, key, js| {
        let managed =
            js.pointer("/spec/managedBy").and_then(Value::as_str).is_none_or(|m| m == CONTROLLER);
        if managed && !deleting(&js) {
            reconcile(state, key, js);
        }
    });
}

fn reconcile(state: &mut State, key: &Key, mut js: Value) {
    if !objects_at(&js, &["/spec", "/status"]) {
        return;
    }
    let now = state.now_str();
    let kids = Children::read(state, &key.ns, &js);
    js["status"]["replicatedJobsStatus"] = statuses(&js, &kids);
    if js.pointer("/status/restarts").is_none() {
        js["status"]["restarts"] = json!(0);
    }
    if is_true(&js, "Completed") || is_true(&js, "Failed") {
        for (k, _) in &kids.active {
            delete_once(state, k, Some(Propagation::Foreground));
        }
        if ttl_after_finished(state, key, &js) {
            delete_once(state, key, Some(Propagation::Foreground));
            return;
        }
    } else {
        for (k, _) in &kids.previous {
            delete_once(state, k, Some(Propagation::Foreground));
        }
        if !kids.failed.is_empty() {
            failure_policy(&mut js, &kids.failed, &now);
        } else if !(success_policy(&mut js, &kids, &now)) {
            create_jobs(state, &js, &kids);
            suspend_or_resume(state, &mut js, &kids, &now);
        }
    }
    registry::write(state, key, js, MANAGER);
}

/// `executeTTLAfterFinishedPolicy`: whether a finished JobSet's TTL has run out (it is
/// then deleted); a TTL still running wakes the JobSet when it runs out.
fn ttl_after_finished(state: &mut State, key: &Key, js: &Value) -> bool {
    let Some(ttl) = js.pointer("/spec/ttlSecondsAfterFinished").and_then(Value::as_i64) else {
        return false;
    };
    let finished = ["Completed", "Failed"]
        .into_iter()
        .filter_map(|t| condition(js, t).filter(|c| c["status"] == "True"))
        .find_map(|c| str_at(c, "/lastTransitionTime").parse::<jiff::Timestamp>().ok());
    let Some(expires) = finished.map(|at| at + jiff::SignedDuration::from_secs(ttl)) else {
        return false;
    };
    if state.now >= expires {
        return true;
    }
    wake::at(state, Ctl::JobSet, key, expires);
    false
}

/// `calculateReplicatedJobStatuses`, in the order of `spec.replicatedJobs`.
fn statuses(js: &Value, kids: &Children) -> Value {
    let count = |jobs: &[(Key, Value)], rj: &str, f: &dyn Fn(&Value) -> bool| {
        jobs.iter().filter(|(_, j)| label(j, REPLICATED_JOB_NAME) == rj && f(j)).count()
    };
    let ready = |j: &Value| {
        let pods = int_at(j, "/spec/parallelism")
            .min(j.pointer("/spec/completions").and_then(Value::as_i64).unwrap_or(i64::MAX));
        int_at(j, "/status/succeeded") + int_at(j, "/status/ready") >= pods
    };
    let rows: Vec<Value> = replicated_jobs(js)
        .iter()
        .map(|rj| {
            let name = str_at(rj, "/name");
            json!({
                "name": name,
                "ready": count(&kids.active, name, &ready),
                "succeeded": count(&kids.successful, name, &|_| true),
                "failed": count(&kids.failed, name, &|_| true),
                "active": count(&kids.active, name, &|j| int_at(j, "/status/active") > 0),
                "suspended": count(&kids.active, name, &suspended),
            })
        })
        .collect();
    json!(rows)
}

/// `executeFailurePolicy` without rules: restart while `maxRestarts` allows (with
/// `RestartingJobSet=True`, as JobSet v0.12 writes it), else fail, naming the Job that
/// failed first (`messageWithFirstFailedJob`).
fn failure_policy(js: &mut Value, failed: &[(Key, Value)], now: &str) {
    let first = failed
        .iter()
        .min_by_key(|(k, j)| {
            let at = condition(j, "Failed").map(|c| str_at(c, "/lastTransitionTime")).unwrap_or("");
            (at.to_string(), k.name.clone())
        })
        .map(|(k, _)| k.name.clone())
        .unwrap_or_default();
    let policy = js.pointer("/spec/failurePolicy").cloned();
    let counted = int_at(js, "/status/restartsCountTowardsMax");
    let (reason, message) = match policy {
        None => ("FailedJobs", "jobset failed due to one or more job failures"),
        Some(p) if counted >= p["maxRestarts"].as_i64().unwrap_or(0) => {
            ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
        }
        Some(_) => {
            js["status"]["restarts"] = json!(int_at(js, "/status/restarts") + 1);
            js["status"]["restartsCountTowardsMax"] = json!(counted + 1);
            let message =
                format!("applying RestartJobSet failure policy action (first failed job: {first})");
            set_condition(js, "RestartingJobSet", "True", "DefaultFailurePolicy", &message, now);
            return;
        }
    };
    let message = format!("{message} (first failed job: {first})");
    set_condition(js, "Failed", "True", reason, &message, now);
    js["status"]["terminalState"] = json!("Failed");
}

/// `executeSuccessPolicy`: operator `All` (the default) needs every targeted Job
/// successful, `Any` one; no `targetReplicatedJobs` targets them all.
fn success_policy(js: &mut Value, kids: &Children, now: &str) -> bool {
    let policy = js.pointer("/spec/successPolicy").cloned().unwrap_or(json!({}));
    let targets: Vec<&str> = policy["targetReplicatedJobs"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let targeted = |rj: &str| targets.is_empty() || targets.contains(&rj);
    let expected: i64 = replicated_jobs(js)
        .iter()
        .filter(|rj| targeted(str_at(rj, "/name")))
        .map(|rj| rj["replicas"].as_i64().unwrap_or(1))
        .sum();
    let done =
        kids.successful.iter().filter(|(_, j)| targeted(label(j, REPLICATED_JOB_NAME))).count()
            as i64;
    let met = match policy["operator"].as_str() {
        Some("Any") => done > 0,
        _ => done >= expected && expected > 0,
    };
    if met {
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
    met
}

/// `reconcileReplicatedJobs` / `constructJobsFromTemplate`: every replica's Job that no
/// Job of the JobSet holds the name of yet.
fn create_jobs(state: &mut State, js: &Value, kids: &Children) {
    let taken: Vec<String> = kids.names().map(str::to_string).collect();
    let mut global = 0;
    for rj in replicated_jobs(js) {
        for j in 0..rj["replicas"].as_i64().unwrap_or(1) {
            let job = construct_job(js, &rj, j, global);
            global += 1;
            if taken.iter().any(|t| job["metadata"]["name"] == t.as_str()) {
                continue;
            }
            let job = super::job::with_defaults(job, state.next_uid());
            state.insert(id("jobs"), job, MANAGER);
        }
    }
}

/// `suspendJobs` / `resumeJobsIfNecessary`.
fn suspend_or_resume(state: &mut State, js: &mut Value, kids: &Children, now: &str) {
    let suspend = suspended(js);
    for (key, job) in &kids.active {
        if suspend && !suspended(job) {
            let mut next = job.clone();
            next["spec"]["suspend"] = json!(true);
            registry::write(state, key, next, MANAGER);
        } else if !suspend && suspended(job) && super::job::well_formed(job) {
            registry::write(state, key, resume_job(js, job), MANAGER);
        }
    }
    if suspend {
        set_condition(js, "Suspended", "True", "SuspendedJobs", "jobset is suspended", now);
    } else if condition(js, "Suspended").is_some() {
        set_condition(js, "Suspended", "False", "ResumeJobs", "jobset is resumed", now);
    }
}
