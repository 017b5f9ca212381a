//! Kueue (kubernetes-sigs/kueue v0.17+, v1beta2), reduced to what dispatch reads and
//! writes: a Workload per TrainJob labelled `kueue.x-k8s.io/queue-name` (named
//! `trainjob-<name>-<5 hex>`, labelled with the job's UID, owned by it), the
//! `admission-gated-by` annotation copied from the TrainJob while the Workload is active
//! (`QuotaReserved=False`, `AdmissionGated`; neither without the `AdmissionGatedBy`
//! feature gate, [`crate::Releases`]), flavors assigned and admission checks run
//! per flavor as Kueue does (`kueue_flavors`), `nvidia.com/gpu` quota in the ClusterQueue
//! of the LocalQueue, admission checks (Admitted once all are Ready; their podSetUpdates
//! applied through the `kueue.x-k8s.io/manager` runtime patch), eviction when
//! `spec.active` turns false (`Deactivated`) or a check asks for a retry
//! (`AdmissionCheck`; queued again after the check's `requeueAfterSeconds`, checks
//! reset to Pending then), and the TrainJob suspended or resumed to match. Once the
//! TrainJob is `Complete` or `Failed` its Workload is `Finished` (reason `Succeeded` or
//! `Failed`, the condition's message), counts against no quota, and Kueue touches
//! neither again, even when the Trainer clears the TrainJob's `Failed` later
//! (`ReconcileGenericJob`, steps "handle job is finished" and the finished Workload's
//! early return).

use serde_json::{Value, json};

use super::kueue_flavors;
use super::util::owned;
use super::wake::{self, Ctl};
use crate::plain::object::conditions::{condition, is_true, set_condition};
use crate::plain::object::keys::{GATED_BY, GPU, KUEUE_GROUP_VERSION, QUEUE_NAME, workload_gpus};
use crate::plain::object::meta::{controller_ref, deleting, str_at, suspended, uid};
use crate::plain::resources::id;
use crate::registry;
use crate::store::Key;
use crate::store::State;

const JOB_UID: &str = "kueue.x-k8s.io/job-uid";
const PATCH_MANAGER: &str = "kueue.x-k8s.io/manager";
const MANAGER: &str = "kueue";

fn short_hash(s: &str) -> String {
    let h = s
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("{:05x}", h & 0xfffff)
}

fn annotation<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.pointer("/metadata/annotations").and_then(|a| a.get(k)).and_then(Value::as_str)
}

pub(crate) fn run(state: &mut State) {
    if state.unserved.contains(KUEUE_GROUP_VERSION) {
        wake::clear(state, Ctl::KueueJobs);
        wake::clear(state, Ctl::KueueWorkloads);
        return;
    }
    wake::each(state, Ctl::KueueJobs, |state, _, tj| {
        let queued = tj.pointer(&format!("/metadata/labels/{}", QUEUE_NAME.replace('/', "~1")));
        if !deleting(&tj) && (queued.is_some() || state.manage_jobs_without_queue_name) {
            ensure_workload(state, &tj);
        }
    });
    wake::each(state, Ctl::KueueWorkloads, |state, key, wl| {
        if !deleting(&wl) {
            reconcile(state, key, wl);
        }
    });
}

fn ensure_workload(state: &mut State, tj: &Value) {
    let uid = uid(tj);
    let ns = str_at(tj, "/metadata/namespace");
    let existing = owned(state, "workloads", ns, uid).into_iter().next();
    let gate = annotation(tj, GATED_BY)
        .filter(|_| state.releases.kueue_admission_gated_by)
        .map(str::to_string);
    match (existing, finished(tj)) {
        (None, _) => {
            let name = format!("trainjob-{}-{}", str_at(tj, "/metadata/name"), short_hash(uid));
            let count = tj.pointer("/spec/trainer/numNodes").and_then(Value::as_i64).unwrap_or(1);
            let resources =
                tj.pointer("/spec/trainer/resourcesPerNode").cloned().unwrap_or(json!({}));
            let mut meta = json!({"name": name, "namespace": ns, "labels": {JOB_UID: uid}, "ownerReferences": [controller_ref(tj)]});
            if let Some(g) = &gate {
                meta["annotations"] = json!({GATED_BY: g});
            }
            let wl = json!({
                "metadata": meta,
                "spec": {
                    "active": true,
                    "queueName": tj["metadata"]["labels"][QUEUE_NAME],
                    "podSets": [{"name": "node", "count": count, "template": {"spec": {"containers": [{"name": "node", "resources": resources}]}}}],
                },
            });
            state.insert(id("workloads"), wl, MANAGER);
        }
        (Some((_, wl)), _) if is_true(&wl, "Finished") => {}
        (Some((key, mut wl)), Some((reason, message))) => {
            let now = state.now_str();
            set_condition(&mut wl, "Finished", "True", reason, &message, &now);
            registry::write(state, &key, wl, MANAGER);
        }
        (Some((key, mut wl)), None) => {
            let active = wl.pointer("/spec/active").and_then(Value::as_bool).unwrap_or(true);
            if active && annotation(&wl, GATED_BY).map(str::to_string) != gate {
                match &gate {
                    Some(g) => wl["metadata"]["annotations"][GATED_BY] = json!(g),
                    None => {
                        if let Some(a) = wl["metadata"]["annotations"].as_object_mut() {
                            a.remove(GATED_BY);
                        }
                    }
                }
                registry::write(state, &key, wl, MANAGER);
            }
        }
    }
}

/// `Finished()` of Kueue's TrainJob integration: the Workload's `Finished` reason and
/// message when the TrainJob is `Complete` or `Failed`.
fn finished(tj: &Value) -> Option<(&'static str, String)> {
    [("Complete", "Succeeded"), ("Failed", "Failed")].into_iter().find_map(|(typ, reason)| {
        condition(tj, typ)
            .filter(|c| c["status"] == "True")
            .map(|c| (reason, str_at(c, "/message").to_owned()))
    })
}

/// Kueue preempts `wl` for a higher-priority Workload of its ClusterQueue: a placeholder
/// Workload `preemptor-<victim>` takes the victim's GPUs there (so the victim cannot
/// reserve them again while it lasts), and the victim is evicted with reason
/// `Preempted` and gets `Preempted=True` (`InClusterQueue`), as Kueue's preemption
/// writes them. Deleting the placeholder frees the quota.
pub(crate) fn preempt(state: &mut State, key: &Key) -> bool {
    let Some(mut wl) = state.store.get(key).cloned() else { return false };
    let now = state.now_str();
    let (ns, name) =
        (str_at(&wl, "/metadata/namespace").to_string(), str_at(&wl, "/metadata/name").to_string());
    let cq = wl.pointer("/status/admission/clusterQueue").cloned().unwrap_or(json!(""));
    let preemptor = json!({
        "metadata": {"name": format!("preemptor-{name}"), "namespace": ns},
        "spec": {"active": true, "queueName": wl["spec"]["queueName"], "priority": 1_000_000,
                 "podSets": wl["spec"]["podSets"]},
        "status": {"admission": {"clusterQueue": cq},
                   "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                   "message": "Quota reserved", "lastTransitionTime": now},
                                  {"type": "Admitted", "status": "True", "reason": "Admitted",
                                   "message": "The workload is admitted", "lastTransitionTime": now}]},
    });
    state.insert(id("workloads"), preemptor, MANAGER);
    let uid = state
        .store
        .get(&Key::new(id("workloads"), &ns, &format!("preemptor-{name}")))
        .map(|p| uid(p).to_string())
        .unwrap_or_default();
    // Kueue's preemption message (`pkg/scheduler/preemption/preemption.go`): the
    // placeholder has no job, so its JobUID is UNKNOWN, as for any bare Workload.
    let path = format!("/{}", cq.as_str().unwrap_or_default());
    let message = format!(
        "Preempted to accommodate a workload (UID: {uid}, JobUID: UNKNOWN) due to prioritization \
         in the ClusterQueue; preemptor path: {path}; preemptee path: {path}"
    );
    release(&mut wl, "Preempted", &message, &now);
    set_condition(&mut wl, "Preempted", "True", "InClusterQueue", &message, &now);
    registry::write(state, key, wl, MANAGER);
    true
}

/// How long a Workload evicted for PodsReadyTimeout waits before it is requeued.
const REQUEUE_BACKOFF_SECS: i64 = 60;

/// Kueue's waitForPodsReady: the Workload's pods were not all ready in time, so it is
/// evicted with reason `PodsReadyTimeout` and requeued.
pub(crate) fn pods_ready_timeout(state: &mut State, key: &Key) -> bool {
    let Some(mut wl) = state.store.get(key).cloned() else { return false };
    let now = state.now_str();
    let message = "Exceeded the PodsReady timeout";
    release(&mut wl, "PodsReadyTimeout", message, &now);
    set_condition(&mut wl, "Requeued", "False", "PodsReadyTimeout", message, &now);
    // Kueue's requeuing strategy backs off before the Workload may reserve quota again.
    let count = wl.pointer("/status/requeueState/count").and_then(Value::as_i64).unwrap_or(0) + 1;
    let at = state
        .now
        .checked_add(jiff::SignedDuration::from_secs(REQUEUE_BACKOFF_SECS))
        .unwrap_or(state.now);
    wl["status"]["requeueState"] = json!({"count": count, "requeueAt": at.to_string()});
    registry::write(state, key, wl, MANAGER);
    true
}

fn release(wl: &mut Value, reason: &str, message: &str, now: &str) {
    evict(wl, reason, message, now);
    reset_checks(wl);
}

/// Evicts: the quota is released and the Workload is no longer admitted. Each eviction
/// is counted by reason in `status.schedulingStats.evictions`, as Kueue's `Evict` does
/// (`workloadEvictionStateInc`).
fn evict(wl: &mut Value, reason: &str, message: &str, now: &str) {
    count_eviction(wl, reason);
    set_condition(wl, "Evicted", "True", reason, message, now);
    set_condition(wl, "QuotaReserved", "False", "Pending", message, now);
    // Kueue's words when admission checks are listed and not all Ready (`workload.go`,
    // `NoReservationUnsatisfiedChecks`); the sim's Workloads always list dispatch's check.
    let (reason, words) = if wl
        .pointer("/status/admissionChecks")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
    {
        (
            "NoReservationUnsatisfiedChecks",
            "The workload has no reservation and not all checks ready",
        )
    } else {
        ("NoReservation", "The workload has no reservation")
    };
    set_condition(wl, "Admitted", "False", reason, words, now);
    if let Some(s) = wl["status"].as_object_mut() {
        s.remove("admission");
    }
}

fn count_eviction(wl: &mut Value, reason: &str) {
    if !wl["status"]["schedulingStats"]["evictions"].is_array() {
        wl["status"]["schedulingStats"]["evictions"] = json!([]);
    }
    let Some(list) = wl["status"]["schedulingStats"]["evictions"].as_array_mut() else { return };
    match list.iter_mut().find(|e| e["reason"] == reason && e["underlyingCause"] == "") {
        Some(e) => e["count"] = json!(e["count"].as_u64().unwrap_or(0) + 1),
        None => list.push(json!({"reason": reason, "underlyingCause": "", "count": 1})),
    }
}

/// Every admission check back to Pending, as Kueue resets them when it queues an
/// evicted Workload again.
fn reset_checks(wl: &mut Value) {
    for c in wl
        .pointer_mut("/status/admissionChecks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|c| c["state"] != "Pending")
    {
        let previous = str_at(c, "/state").to_string();
        c["state"] = json!("Pending");
        c["message"] = json!(format!("Reset to Pending after eviction. Previously: {previous}"));
    }
}

/// The longest `requeueAfterSeconds` of the checks in Retry (Kueue KEP-3258): Kueue
/// evicts at once but keeps the checks as they are, and queues the Workload again only
/// after it.
fn retry_delay(wl: &Value) -> i64 {
    let checks = wl.pointer("/status/admissionChecks").and_then(Value::as_array);
    checks
        .into_iter()
        .flatten()
        .filter(|c| c["state"] == "Retry")
        .filter_map(|c| c["requeueAfterSeconds"].as_i64())
        .max()
        .unwrap_or(0)
}

fn reconcile(state: &mut State, key: &Key, mut wl: Value) {
    if is_true(&wl, "Finished") {
        return;
    }
    let now = state.now_str();
    let active = wl.pointer("/spec/active").and_then(Value::as_bool).unwrap_or(true);
    sync_checks(state, &mut wl, &now);
    let reserved = is_true(&wl, "QuotaReserved");
    let retry = wl
        .pointer("/status/admissionChecks")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["state"] == "Retry" || c["state"] == "Rejected"));
    if !active {
        if reserved || !is_true(&wl, "Evicted") {
            release(&mut wl, "Deactivated", "The workload is deactivated", &now);
        }
    } else if reserved && retry {
        let delay = retry_delay(&wl);
        evict(&mut wl, "AdmissionCheck", "At least one admission check is false", &now);
        if delay > 0 {
            let at =
                state.now.checked_add(jiff::SignedDuration::from_secs(delay)).unwrap_or(state.now);
            wl["status"]["requeueState"]["requeueAt"] = json!(at.to_string());
        } else {
            reset_checks(&mut wl);
        }
    } else if !reserved && !backing_off(state, key, &wl) {
        if retry {
            reset_checks(&mut wl);
        }
        reserve(state, &mut wl, &now);
        // The checks that apply to the flavors just assigned (none, for a Workload that
        // was assigned none), as Kueue's workload controller syncs them next.
        sync_checks(state, &mut wl, &now);
    }
    if is_true(&wl, "QuotaReserved") {
        let checks = wl
            .pointer("/status/admissionChecks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if checks.iter().all(|c| c["state"] == "Ready") && !is_true(&wl, "Admitted") {
            set_condition(
                &mut wl,
                "Admitted",
                "True",
                "Admitted",
                "The workload is admitted",
                &now,
            );
        }
    }
    sync_job(state, &wl);
    registry::write(state, key, wl, MANAGER);
}

/// Reserves quota for the Workload when its admission is not gated and its
/// ClusterQueue has room; otherwise says why in `QuotaReserved=False`. Without the
/// `AdmissionGatedBy` feature gate the annotation means nothing.
fn reserve(state: &State, wl: &mut Value, now: &str) {
    let gated = state.releases.kueue_admission_gated_by;
    if let Some(g) = annotation(wl, GATED_BY).filter(|g| gated && !g.is_empty()) {
        let msg = format!("Admission is gated by: {g}");
        set_condition(wl, "QuotaReserved", "False", "AdmissionGated", &msg, now);
        return;
    }
    match room_for(state, wl) {
        Ok(queue) => reserve_in(wl, queue, now),
        Err((reason, message)) => {
            set_condition(wl, "QuotaReserved", "False", reason, &message, now);
        }
    }
}

/// The ClusterQueue a Workload reserves quota in, and the flavors its pod sets are
/// assigned there (`status.admission.podSetAssignments`).
struct Queue {
    name: String,
    assignments: Vec<Value>,
}

/// The Workload's ClusterQueue, through its LocalQueue, when that covers every resource
/// it asks for and has the GPUs free; else the reason and message of
/// `QuotaReserved=False`.
fn room_for(state: &State, wl: &Value) -> Result<Queue, (&'static str, String)> {
    let ns = str_at(wl, "/metadata/namespace");
    let lq_name = str_at(wl, "/spec/queueName");
    let lq = state
        .store
        .get(&Key::new(id("localqueues"), ns, lq_name))
        .ok_or_else(|| ("Inadmissible", format!("LocalQueue {lq_name} doesn't exist")))?;
    let cq_name = str_at(lq, "/spec/clusterQueue");
    let cq = state
        .store
        .get(&Key::new(id("clusterqueues"), "", cq_name))
        .ok_or_else(|| ("Inadmissible", format!("ClusterQueue {cq_name} doesn't exist")))?;
    let assignments = kueue_flavors::assign(cq, wl).map_err(|m| ("Pending", m))?;
    let (quota, flavor) = gpu_quota(cq);
    let used = gpus_reserved_in(state, cq_name);
    let want = workload_gpus(wl);
    if want > 0 && used + want > quota {
        return Err((
            "Pending",
            format!(
                "couldn't assign flavors to pod set node: insufficient unused quota for {GPU} in flavor {flavor}, {} more needed",
                used + want - quota
            ),
        ));
    }
    Ok(Queue { name: cq_name.to_owned(), assignments })
}

/// A ClusterQueue's nominal GPU quota, over all its flavors, and the flavor that has it.
fn gpu_quota(cq: &Value) -> (i64, String) {
    let (mut quota, mut flavor) = (0, String::new());
    for f in cq
        .pointer("/spec/resourceGroups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|g| g["flavors"].as_array().cloned().unwrap_or_default())
    {
        for r in f["resources"].as_array().into_iter().flatten().filter(|r| r["name"] == GPU) {
            quota += r["nominalQuota"]
                .as_str()
                .and_then(|q| q.parse::<i64>().ok())
                .or(r["nominalQuota"].as_i64())
                .unwrap_or(0);
            flavor = str_at(&f, "/name").to_string();
        }
    }
    (quota, flavor)
}

/// The GPUs the Workloads with quota reserved in the ClusterQueue `cq_name` hold.
fn gpus_reserved_in(state: &State, cq_name: &str) -> i64 {
    state
        .store
        .list(id("workloads"), "")
        .into_iter()
        .filter(|(_, w)| {
            is_true(w, "QuotaReserved")
                && !is_true(w, "Finished")
                && w.pointer("/status/admission/clusterQueue").and_then(Value::as_str)
                    == Some(cq_name)
        })
        .map(|(_, w)| workload_gpus(w))
        .sum()
}

/// Reserves the Workload's quota in `queue`: its admission, `QuotaReserved=True`, and,
/// as Kueue's SetQuotaReservation does, an eviction or preemption in force is over.
fn reserve_in(wl: &mut Value, queue: Queue, now: &str) {
    wl["status"]["admission"] =
        json!({"clusterQueue": queue.name, "podSetAssignments": queue.assignments});
    let message = format!("Quota reserved in ClusterQueue {}", queue.name);
    set_condition(wl, "QuotaReserved", "True", "QuotaReserved", &message, now);
    for kind in ["Evicted", "Preempted"] {
        let active = condition(wl, kind)
            .filter(|c| c["status"] == "True")
            .map(|c| str_at(c, "/message").to_string());
        if let Some(previous) = active {
            let message = format!("Previously: {previous}");
            set_condition(wl, kind, "False", "QuotaReserved", &message, now);
        }
    }
}

/// Whether the Workload's requeue backoff has not passed yet; if so, it is looked at
/// again when it has.
fn backing_off(state: &mut State, key: &Key, wl: &Value) -> bool {
    let at = wl.pointer("/status/requeueState/requeueAt").and_then(Value::as_str);
    let Some(at) = at.and_then(|t| t.parse::<jiff::Timestamp>().ok()) else { return false };
    if at <= state.now {
        return false;
    }
    wake::at(state, Ctl::KueueWorkloads, key, at);
    true
}

/// The ClusterQueue of a Workload's LocalQueue, when both exist.
fn cluster_queue(state: &State, wl: &Value) -> Option<Value> {
    let lq = state.store.get(&Key::new(
        id("localqueues"),
        str_at(wl, "/metadata/namespace"),
        str_at(wl, "/spec/queueName"),
    ))?;
    state.store.get(&Key::new(id("clusterqueues"), "", str_at(lq, "/spec/clusterQueue"))).cloned()
}

/// Lists the ClusterQueue's admission checks that apply to the Workload
/// (`kueue_flavors::applicable_checks`) on it, each Pending until its controller says
/// otherwise, and drops the others. Kueue's workload controller does this as soon as the
/// Workload is in a ClusterQueue, before quota is reserved and while admission is gated,
/// and again once flavors are assigned (`reconcileSyncAdmissionChecks`).
fn sync_checks(state: &State, wl: &mut Value, now: &str) {
    let Some(cq) = cluster_queue(state, wl) else { return };
    let names = kueue_flavors::applicable_checks(&cq, wl.pointer("/status/admission"));
    let current = wl
        .pointer("/status/admissionChecks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut checks: Vec<Value> =
        current.iter().filter(|c| names.iter().any(|n| c["name"] == n.as_str())).cloned().collect();
    for n in names {
        if !checks.iter().any(|c| c["name"] == n.as_str()) {
            checks.push(
                json!({"name": n, "state": "Pending", "message": "", "lastTransitionTime": now}),
            );
        }
    }
    if checks != current {
        wl["status"]["admissionChecks"] = json!(checks);
    }
}

/// Suspends or resumes the owning TrainJob to match admission, applying the checks'
/// podSetUpdates through Kueue's runtime patch when it resumes.
fn sync_job(state: &mut State, wl: &Value) {
    let Some(owner) = wl.pointer("/metadata/ownerReferences/0") else { return };
    let key = Key::new(id("trainjobs"), str_at(wl, "/metadata/namespace"), str_at(owner, "/name"));
    let Some(mut tj) = state.store.get(&key).cloned() else { return };
    let done = is_true(&tj, "Complete") || is_true(&tj, "Failed") || is_true(wl, "Finished");
    if tj["metadata"]["uid"] != owner["uid"] || done {
        return;
    }
    let admitted = is_true(wl, "Admitted");
    let suspended = suspended(&tj);
    if admitted && suspended {
        let mut labels = json!({});
        let mut annotations = json!({});
        for c in
            wl.pointer("/status/admissionChecks").and_then(Value::as_array).into_iter().flatten()
        {
            for u in c["podSetUpdates"].as_array().into_iter().flatten() {
                // An update without labels (or annotations) leaves them as they are.
                for (into, from) in
                    [(&mut labels, &u["labels"]), (&mut annotations, &u["annotations"])]
                {
                    if from.is_object() {
                        crate::plain::patch::merge(into, from);
                    }
                }
            }
        }
        let patch = json!({"manager": PATCH_MANAGER, "time": state.now_str(), "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
            {"name": "node", "template": {"spec": {"template": {"metadata": {"labels": labels, "annotations": annotations}}}}}
        ]}}}});
        let mut patches = tj
            .pointer("/spec/runtimePatches")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        patches.retain(|p| p["manager"] != PATCH_MANAGER);
        patches.push(patch);
        tj["spec"]["runtimePatches"] = json!(patches);
        tj["spec"]["suspend"] = json!(false);
    } else if !admitted && !suspended {
        tj["spec"]["suspend"] = json!(true);
    }
    registry::write(state, &key, tj, MANAGER);
}
