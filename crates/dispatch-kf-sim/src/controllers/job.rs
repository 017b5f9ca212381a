//! The Job controller (kubernetes/kubernetes `pkg/controller/job/job_controller.go`,
//! `syncJob`, Kubernetes 1.33 defaults: `JobPodReplacementPolicy`, `JobManagedBy`,
//! `JobSuccessPolicy` and `PodIndexLabel` on). A Job's pods come from `job_pods.rs`.
//! Each pass counts and releases finished pods (`trackJobStatusAndRemoveFinalizers`: a
//! pod is failed when its phase is `Failed` or, as `isPodFailed` says, when it is being
//! deleted without having succeeded), then decides as `syncJob` does: more failures than
//! `backoffLimit` (or `activeDeadlineSeconds` passed) gives `FailureTarget` and deletes
//! the active pods; enough successes give `SuccessCriteriaMet`. The terminal `Failed`
//! or `Complete` follows only once no pod of the Job is terminating
//! (`delayTerminalCondition`, `enactJobFinished`), so a pod stuck Terminating on a lost
//! node holds its Job at `FailureTarget`. A suspended Job's active pods are deleted
//! uncounted (`deleteJobPods`); a resumed one sets `Suspended=False`/`JobResumed` and a
//! new `startTime`.

use std::collections::BTreeSet;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::KUBE_CONTROLLER_MANAGER;
use super::job_pods::{self, TRACKING};
use super::util::{objects_at, owned};
use super::wake::{self, Ctl};
use crate::plain::object::conditions::{condition, is_true, set_condition};
use crate::plain::object::meta::{
    deleting, has_finalizer, phase, str_at, suspended, terminal, uid,
};
use crate::plain::resources::id;
use crate::registry::{self, DeleteOptions};
use crate::store::Key;
use crate::store::State;

const DEFAULT_BACKOFF_LIMIT: i64 = 6;

/// A Job as the apiserver stores it at creation (`pkg/apis/batch/v1/defaults.go` and the
/// Job strategy's `generateSelector`): parallelism and completions, `backoffLimit` 6,
/// `completionMode`, `suspend`, `podReplacementPolicy`, and the selector on the
/// `batch.kubernetes.io/controller-uid` label that the pod template also gets, with the
/// job-name labels. `uid` is the UID the Job will have.
pub(crate) fn with_defaults(mut job: Value, uid: String) -> Value {
    let name = str_at(&job, "/metadata/name").to_string();
    let spec = &mut job["spec"];
    if spec["parallelism"].is_null() {
        spec["parallelism"] = json!(1);
        if spec["completions"].is_null() {
            spec["completions"] = json!(1);
        }
    }
    let defaults = [
        ("backoffLimit", json!(DEFAULT_BACKOFF_LIMIT)),
        ("completionMode", json!("NonIndexed")),
        ("suspend", json!(false)),
    ];
    for (field, value) in defaults {
        if spec[field].is_null() {
            spec[field] = value;
        }
    }
    if spec["podReplacementPolicy"].is_null() {
        let policy =
            if spec["podFailurePolicy"].is_null() { "TerminatingOrFailed" } else { "Failed" };
        spec["podReplacementPolicy"] = json!(policy);
    }
    spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
        "controller-uid": uid, "job-name": name,
    });
    crate::plain::patch::merge(&mut spec["template"]["metadata"]["labels"], &labels);
    job["metadata"]["uid"] = json!(uid);
    job["status"] = json!({});
    job
}

/// The fields of a Job the controllers write into; a Job where one of them is not an
/// object (possible only through the API, which the sim does not validate for Jobs) is
/// left alone.
const SHAPE: &[&str] = &[
    "/metadata/labels",
    "/metadata/annotations",
    "/spec",
    "/spec/template",
    "/spec/template/metadata",
    "/spec/template/metadata/labels",
    "/spec/template/metadata/annotations",
    "/spec/template/spec",
    "/status",
];

/// Whether the controllers can work on this Job (see [`SHAPE`]).
pub(crate) fn well_formed(job: &Value) -> bool {
    objects_at(job, SHAPE)
}

fn int_at(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

/// `onlyReplaceFailedPods`: a terminating pod is neither failed nor replaced yet.
fn only_replace_failed(job: &Value) -> bool {
    job["spec"]["podReplacementPolicy"] == "Failed" || !job["spec"]["podFailurePolicy"].is_null()
}

/// `isPodFailed`.
fn pod_failed(pod: &Value, job: &Value) -> bool {
    phase(pod) == "Failed"
        || (!only_replace_failed(job) && deleting(pod) && phase(pod) != "Succeeded")
}

/// `controller.CountTerminatingPods`: deleting, not finished.
fn is_terminating(pod: &Value) -> bool {
    deleting(pod) && !terminal(pod)
}

fn is_active(pod: &Value) -> bool {
    !deleting(pod) && !terminal(pod)
}

pub(crate) fn run(state: &mut State) {
    wake::each(state, Ctl::Job, reconcile);
    // `handleOrphanPod`: a tracked pod whose Job is gone is let go.
    wake::each(state, Ctl::JobOrphans, |state, key, pod| {
        if has_finalizer(&pod, TRACKING) && !controlled_by_a_job(state, &pod) {
            registry::remove_finalizer(state, key, TRACKING);
        }
    });
}

/// Whether a controller owner reference of `pod` names a Job that exists.
fn controlled_by_a_job(state: &State, pod: &Value) -> bool {
    let jobs = id("jobs");
    let index = state.store.index();
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r["controller"] == true)
        .filter_map(|r| r["uid"].as_str())
        .any(|uid| index.by_uid(uid).any(|k| k.res == jobs))
}

/// Counts what finished: pods still carrying the tracking finalizer that succeeded or
/// failed are added to the Job's counters and released (`uncountedTerminatedPods` is
/// flushed in the same step). When the Job is `finishing` (it has failed), every pod
/// that did not succeed counts as failed. Returns the succeeded indexes.
fn track(
    state: &mut State,
    job: &mut Value,
    pods: &[(Key, Value)],
    finishing: bool,
) -> BTreeSet<i64> {
    let indexed = job["spec"]["completionMode"] == "Indexed";
    let completions = int_at(job, "/spec/completions");
    let mut done = job_pods::parse_indexes(str_at(job, "/status/completedIndexes"));
    let (mut succeeded, mut failed) =
        (int_at(job, "/status/succeeded"), int_at(job, "/status/failed"));
    for (k, p) in pods.iter().filter(|(_, p)| has_finalizer(p, TRACKING)) {
        if phase(p) == "Succeeded" {
            match job_pods::index_of(p) {
                Some(ix) if indexed && ix < completions => {
                    done.insert(ix);
                }
                _ if !indexed => succeeded += 1,
                _ => {}
            }
        } else if finishing || pod_failed(p, job) {
            failed += 1;
        } else {
            continue;
        }
        registry::remove_finalizer(state, k, TRACKING);
    }
    if indexed {
        succeeded = done.len() as i64;
        job["status"]["completedIndexes"] = json!(job_pods::format_indexes(&done));
    }
    job["status"]["succeeded"] = json!(succeeded);
    job["status"]["failed"] = json!(failed);
    done
}

/// When a running Job's `activeDeadlineSeconds` runs out: none while it is suspended or
/// not started.
fn deadline(job: &Value) -> Option<Timestamp> {
    let secs = job.pointer("/spec/activeDeadlineSeconds").and_then(Value::as_i64)?;
    let start = str_at(job, "/status/startTime").parse::<Timestamp>().ok();
    start.filter(|_| !suspended(job)).map(|s| s + SignedDuration::from_secs(secs))
}

/// The failure `syncJob` finds: an earlier `FailureTarget`, too many failures, or the
/// active deadline.
fn failure(job: &Value, now: Timestamp) -> Option<(String, String)> {
    if let Some(c) = condition(job, "FailureTarget").filter(|c| c["status"] == "True") {
        return Some((str_at(c, "/reason").into(), str_at(c, "/message").into()));
    }
    let backoff =
        job.pointer("/spec/backoffLimit").and_then(Value::as_i64).unwrap_or(DEFAULT_BACKOFF_LIMIT);
    if int_at(job, "/status/failed") > backoff {
        return Some((
            "BackoffLimitExceeded".into(),
            "Job has reached the specified backoff limit".into(),
        ));
    }
    deadline(job).is_some_and(|d| now >= d).then(|| {
        ("DeadlineExceeded".into(), "Job was active longer than specified deadline".into())
    })
}

fn reconcile(state: &mut State, key: &Key, mut job: Value) {
    if !well_formed(&job) {
        return;
    }
    let now = state.now_str();
    let pods = owned(state, "pods", &key.ns, uid(&job));
    if deleting(&job) || is_true(&job, "Complete") || is_true(&job, "Failed") {
        // `canRemoveFinalizer`: a Job being deleted (or done) lets go of every pod.
        for (k, _) in &pods {
            registry::remove_finalizer(state, k, TRACKING);
        }
        return;
    }
    let done = track(state, &mut job, &pods, false);
    let active: Vec<&(Key, Value)> = pods.iter().filter(|(_, p)| is_active(p)).collect();
    let mut terminating = pods.iter().filter(|(_, p)| is_terminating(p)).count() as i64;
    let mut n_active = active.len() as i64;
    let finished = if let Some((reason, message)) = failure(&job, state.now) {
        // `deleteActivePods`: deleted with their finalizer; counted failed as they go.
        for (k, _) in &active {
            let _ = registry::delete(state, k, &DeleteOptions::default());
        }
        terminating += n_active;
        n_active = 0;
        let now_pods = owned(state, "pods", &key.ns, uid(&job));
        let _ = track(state, &mut job, &now_pods, true);
        Some(("FailureTarget", "Failed", reason, message))
    } else {
        if let Some(d) = deadline(&job) {
            wake::at(state, Ctl::Job, key, d);
        }
        n_active = manage(state, &mut job, &pods, &done, &now);
        if suspended(&job) {
            terminating += active.len() as i64;
        }
        let completions = int_at(&job, "/spec/completions").max(1);
        (int_at(&job, "/status/succeeded") >= completions && n_active == 0).then(|| {
            let (r, m) = ("CompletionsReached", "Reached expected number of succeeded pods");
            ("SuccessCriteriaMet", "Complete", r.to_string(), m.to_string())
        })
    };
    if let Some((interim, last, reason, message)) = finished {
        set_condition(&mut job, interim, "True", &reason, &message, &now);
        if terminating == 0 {
            set_condition(&mut job, last, "True", &reason, &message, &now);
            if last == "Complete" {
                job["status"]["completionTime"] = json!(now);
            }
        }
    }
    let ready = pods
        .iter()
        .filter(|(_, p)| is_active(p) && is_true(p, "Ready"))
        .count()
        .min(n_active as usize);
    job["status"]["active"] = json!(n_active);
    job["status"]["ready"] = json!(ready);
    job["status"]["terminating"] = json!(terminating);
    job["status"]["uncountedTerminatedPods"] = json!({});
    registry::write(state, key, job, KUBE_CONTROLLER_MANAGER);
}

/// `manageJob`: a suspended Job's active pods are deleted uncounted; otherwise the
/// missing pods are made. Returns the number of active pods.
fn manage(
    state: &mut State,
    job: &mut Value,
    pods: &[(Key, Value)],
    done: &BTreeSet<i64>,
    now: &str,
) -> i64 {
    let active: Vec<&(Key, Value)> = pods.iter().filter(|(_, p)| is_active(p)).collect();
    if suspended(job) {
        for (k, _) in &active {
            registry::remove_finalizer(state, k, TRACKING);
            if state.store.get(k).is_some() {
                let _ = registry::delete(state, k, &DeleteOptions::default());
            }
        }
        set_condition(job, "Suspended", "True", "JobSuspended", "Job suspended", now);
        return 0;
    }
    if condition(job, "Suspended").is_some()
        && set_condition(job, "Suspended", "False", "JobResumed", "Job resumed", now)
    {
        job["status"]["startTime"] = json!(now);
    }
    if job.pointer("/status/startTime").is_none() {
        job["status"]["startTime"] = json!(now);
    }
    let held: Vec<&Value> = pods
        .iter()
        .map(|(_, p)| p)
        .filter(|p| is_active(p) || (only_replace_failed(job) && is_terminating(p)))
        .collect();
    let made = job_pods::create_missing(state, job, &held, done);
    (active.len() + made) as i64
}
