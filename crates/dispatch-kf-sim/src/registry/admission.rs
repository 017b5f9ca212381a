//! Admission for TrainJobs, in the order the apiserver runs it: the Trainer's mutating
//! webhook and CRD defaults, then the CRD schema and CEL rules (422 Invalid), then the
//! Trainer's validating webhook (403, "admission webhook ... denied the request").
//! Messages are the ones in kubeflow/trainer `pkg/apis/trainer/v1alpha1/trainjob_types.go`
//! and `pkg/runtime/core/trainingruntime.go` (Trainer v2.3).

use serde_json::{Value, json};

use crate::plain::apierror::{ApiError, Cause};
use crate::plain::object::keys::{
    GATED_BY, KUEUE_GROUP_VERSION, QUEUE_NAME, TRAINER_CONTROLLER, runtime_supported,
    unsupported_runtime,
};
use crate::plain::object::meta::{str_at, suspended};
use crate::plain::resources::{Resource, id};
use crate::store::Key;
use crate::store::State;

const MULTIKUEUE: &str = "kueue.x-k8s.io/multikueue";
const WEBHOOK: &str = "validator.trainjob.trainer.kubeflow.org";
/// CRD `MaxItems` on `spec.trainer.command`, `args` and `env`.
const MAX_ITEMS: usize = 128;

/// Fields the CRD marks `self == oldSelf`, with the CEL type name the message shows.
const IMMUTABLE: &[(&str, &str)] = &[
    ("runtimeRef", "object"),
    ("initializer", "object"),
    ("trainer", "object"),
    ("activeDeadlineSeconds", "integer"),
    ("managedBy", "string"),
];

fn is_rfc1035(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-'
}

/// CRD defaults and the mutating webhook (runtimePatches `time`).
fn default(old: Option<&Value>, new: &mut Value, now: &str, kueue: bool) {
    let spec = &mut new["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    if spec.get("suspend").is_none() {
        spec["suspend"] = json!(false);
    }
    // Kueue's job webhook suspends a new job that names a queue.
    let queued = new.pointer("/metadata/labels").and_then(|l| l.get(QUEUE_NAME)).is_some();
    let spec = &mut new["spec"];
    if old.is_none() && queued && kueue {
        spec["suspend"] = json!(true);
    }
    if spec.get("managedBy").is_none() {
        spec["managedBy"] = json!(TRAINER_CONTROLLER);
    }
    if spec["runtimeRef"].is_object() {
        if spec["runtimeRef"].get("apiGroup").is_none() {
            spec["runtimeRef"]["apiGroup"] = json!("trainer.kubeflow.org");
        }
        if spec["runtimeRef"].get("kind").is_none() {
            spec["runtimeRef"]["kind"] = json!("ClusterTrainingRuntime");
        }
    }
    let old_patches = old.and_then(|o| o.pointer("/spec/runtimePatches")?.as_array().cloned());
    if let Some(patches) = spec.get_mut("runtimePatches").and_then(Value::as_array_mut) {
        for p in patches {
            let manager = p.get("manager").cloned();
            let prior = old_patches.iter().flatten().find(|o| o.get("manager") == manager.as_ref());
            let strip = |v: &Value| {
                let mut v = v.clone();
                if let Some(m) = v.as_object_mut() {
                    m.remove("time");
                }
                v
            };
            match prior {
                Some(o) if strip(o) == strip(p) => {
                    if let Some(t) = o.get("time") {
                        p["time"] = t.clone();
                    }
                }
                _ if p.get("time").is_none() => p["time"] = json!(now),
                _ => {}
            }
        }
    }
}

/// Schema and CEL validation: the causes of a 422.
fn schema(old: Option<&Value>, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = str_at(new, "/metadata/name");
    let root = |msg: &str| {
        (
            "FieldValueInvalid",
            "<nil>".to_string(),
            format!("<nil>: Invalid value: \"object\": {msg}"),
        )
    };
    if !is_rfc1035(name) {
        causes.push(root("metadata.name must match RFC 1035 DNS label format"));
    }
    if name.len() > 63 {
        causes.push(root("metadata.name must be no more than 63 characters"));
    }
    for list in ["command", "args", "env"] {
        let n = new
            .pointer(&format!("/spec/trainer/{list}"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if n > MAX_ITEMS {
            let field = format!("spec.trainer.{list}");
            causes.push((
                "FieldValueTooMany",
                field.clone(),
                format!("{field}: Too many: {n}: must have at most {MAX_ITEMS} items"),
            ));
        }
    }
    if let Some(m) = new.pointer("/spec/managedBy").and_then(Value::as_str)
        && m != TRAINER_CONTROLLER
        && m != MULTIKUEUE
    {
        causes.push((
            "FieldValueInvalid",
            "spec.managedBy".into(),
            format!("spec.managedBy: Invalid value: \"string\": ManagedBy must be {TRAINER_CONTROLLER} or {MULTIKUEUE} if set"),
        ));
    }
    if let Some(old) = old {
        for (field, ty) in IMMUTABLE {
            let (a, b) =
                (old.pointer(&format!("/spec/{field}")), new.pointer(&format!("/spec/{field}")));
            if a.is_some() && a != b {
                let f = format!("spec.{field}");
                causes.push((
                    "FieldValueInvalid",
                    f.clone(),
                    format!("{f}: Invalid value: \"{ty}\": field is immutable"),
                ));
            }
        }
    }
    causes
}

/// Runs the admission of `res` beyond the generic checks, on every create (`old`
/// `None`) and every update of the object itself (not of its status), on `new` in
/// namespace `ns`. Only TrainJobs have one: the Trainer's webhook (and Kueue's).
pub(crate) fn admit(
    state: &State,
    res: &Resource,
    ns: &str,
    old: Option<&Value>,
    new: &mut Value,
) -> Result<(), ApiError> {
    if res.kind != "TrainJob" {
        return Ok(());
    }
    let now = state.now_str();
    let kueue = !state.unserved.contains(KUEUE_GROUP_VERSION);
    let active = old.map(|_| active_replicated_jobs(state, ns, str_at(new, "/metadata/name")));
    let checks =
        Lookups { runtime_exists: runtime_check(state, ns), active: active.unwrap_or_default() };
    trainjob(res, old, new, &now, kueue, checks)
}

/// The ReplicatedJobs in which the JobSet of `name` counts active Jobs
/// (`status.replicatedJobsStatus[].active`), as the Trainer's webhook reads them (from
/// its cache: the count lags the pods' going).
fn active_replicated_jobs(state: &State, ns: &str, name: &str) -> Vec<String> {
    let Some(job_set) = state.store.get(&Key::new(id("jobsets"), ns, name)) else {
        return Vec::new();
    };
    let rows = job_set.pointer("/status/replicatedJobsStatus").and_then(Value::as_array);
    rows.into_iter()
        .flatten()
        .filter(|r| r.get("active").and_then(Value::as_i64).is_some_and(|n| n > 0))
        .map(|r| str_at(r, "/name").to_owned())
        .collect()
}

/// What the Trainer's webhook looks up in the cluster: whether a runtime of a kind and
/// name exists, and the ReplicatedJobs the TrainJob's JobSet counts active Jobs in.
pub(crate) struct Lookups<F> {
    pub(crate) runtime_exists: F,
    pub(crate) active: Vec<String>,
}

/// Whether a runtime of a kind and name exists, as the Trainer's webhook checks.
fn runtime_check(state: &State, ns: &str) -> impl Fn(&str, &str) -> bool {
    let trs: Vec<String> = state
        .store
        .list(id("trainingruntimes"), ns)
        .into_iter()
        .map(|(k, _)| k.name.clone())
        .collect();
    let ctrs: Vec<String> = state
        .store
        .list(id("clustertrainingruntimes"), "")
        .into_iter()
        .map(|(k, _)| k.name.clone())
        .collect();
    move |kind: &str, name: &str| {
        let list = if kind == "TrainingRuntime" { &trs } else { &ctrs };
        list.iter().any(|n| n == name)
    }
}

/// Admits a TrainJob create (`old` None) or update; `kueue` says whether Kueue is
/// installed (its webhook suspends queued jobs); `lookups` answer what the webhook
/// looks up. Applies defaults to `new` in place.
pub(crate) fn trainjob(
    res: &Resource,
    old: Option<&Value>,
    new: &mut Value,
    now: &str,
    kueue: bool,
    lookups: Lookups<impl Fn(&str, &str) -> bool>,
) -> Result<(), ApiError> {
    default(old, new, now, kueue);
    let name = str_at(new, "/metadata/name").to_string();
    let causes = schema(old, new);
    if !causes.is_empty() {
        return Err(ApiError::invalid(res, &name, causes));
    }
    let rref = new.pointer("/spec/runtimeRef").cloned().unwrap_or(Value::Null);
    let kind = rref.get("kind").and_then(Value::as_str).unwrap_or_default();
    let rname = rref.get("name").and_then(Value::as_str).unwrap_or_default();
    let group = rref.get("apiGroup").and_then(Value::as_str).unwrap_or_default();
    if !runtime_supported(group, kind) {
        return Err(ApiError::webhook_denied(WEBHOOK, &unsupported_runtime(group, kind)));
    }
    if !(lookups.runtime_exists)(kind, rname) {
        let (plural, what) = if kind == "TrainingRuntime" {
            ("trainingruntimes", "trainingRuntime")
        } else {
            ("clustertrainingruntimes", "clusterTrainingRuntime")
        };
        return Err(ApiError::webhook_denied(
            WEBHOOK,
            &format!(
                "spec.runtimeRef: Invalid value: {rref}: {plural}.trainer.kubeflow.org \"{rname}\" not found: specified {what} must be created before the TrainJob is created"
            ),
        ));
    }
    if let Some(old) = old {
        if kueue {
            gate_only_shrinks(old, new)?;
        }
        let patches = |v: &Value| v.pointer("/spec/runtimePatches").cloned();
        let strip_times = |v: Option<Value>| {
            v.map(|mut p| {
                if let Some(a) = p.as_array_mut() {
                    for e in a.iter_mut().filter_map(Value::as_object_mut) {
                        e.remove("time");
                    }
                }
                p
            })
        };
        if strip_times(patches(old)) != strip_times(patches(new)) {
            if !suspended(old) && !suspended(new) {
                return Err(ApiError::webhook_denied(
                    WEBHOOK,
                    "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended before or after the update",
                ));
            }
            // Trainer v2.2 and v2.3, `plugins/jobset`: one error per active
            // ReplicatedJob, aggregated.
            let denials: Vec<String> = lookups.active.iter().map(|rj| format!(
                "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob {rj} is still active"
            )).collect();
            match denials.as_slice() {
                [] => {}
                [one] => return Err(ApiError::webhook_denied(WEBHOOK, one)),
                many => {
                    return Err(ApiError::webhook_denied(
                        WEBHOOK,
                        &format!("[{}]", many.join(", ")),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The gate names in `kueue.x-k8s.io/admission-gated-by` (comma-separated).
fn gates(v: &Value) -> Option<Vec<String>> {
    let a = v.pointer("/metadata/annotations")?.get(GATED_BY)?.as_str()?;
    Some(a.split(',').map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect())
}

/// Kueue's rule for the admission gate: set only at creation, and afterwards its names
/// may only be removed. (The wording is the sim's; Kueue's own was not available.)
fn gate_only_shrinks(old: &Value, new: &Value) -> Result<(), ApiError> {
    let Some(after) = gates(new) else { return Ok(()) };
    let before = gates(old).unwrap_or_default();
    match after.iter().find(|g| !before.contains(g)) {
        None => Ok(()),
        Some(added) => Err(ApiError::webhook_denied(
            "vtrainjob.kueue.x-k8s.io",
            &format!(
                "metadata.annotations[{GATED_BY}]: Invalid value: {added:?}: the admission gate can only be set at creation and afterwards only shrink"
            ),
        )),
    }
}
