//! The hold family's decisions (`docs/start-gate-and-holds.md`): what Open, Hold and
//! Release change on the object as read, or why they refuse. Pure: each function edits
//! a JSON object in place and says whether to write it; the Backend reads, calls, and
//! writes with the resource version it read (retrying a conflict by calling again on a
//! fresh read).
//!
//! Plain mode edits the TrainJob (`spec.suspend`, the admission count on the TrainJob
//! and in dispatch's runtime patch, the hold instance). Kueue mode lifts the start gate
//! on the TrainJob and holds on the Workload (`spec.active`, the hold instance).

use dispatch_core::{Error, Refinement};
use serde_json::{Map, Value, json};

use crate::classify::execution::parse_counter;
use crate::internal::ended::EndRecord;
use crate::internal::json::annotation;
use crate::keys;
use crate::names::parse_canonical_decimal;

/// What the caller learned of the object before the edit, from its classification.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Situation {
    /// The TrainJob has ended (Complete or Failed).
    pub ended: bool,
    /// What of a previous execution remains (`ranks::remaining`): its pods still
    /// going, and the JobSet's count of active Jobs until it reaches 0.
    pub pods_remaining: Vec<String>,
}

/// What an edit decided: whether the object changed and must be written. The client's
/// read-modify-write takes the same answer from the closure that edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// The object was changed: write it.
    Write,
    /// Nothing to change: the call succeeds without writing.
    Unchanged,
}

/// `value` as a JSON object, made one first if it is anything else: the objects come
/// from the apiserver, but a malformed one must not panic.
fn object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    value.as_object_mut().expect("made an object just above")
}

/// Refuses an object the hold family cannot edit without making parts of it up: one
/// that is not a JSON object, or whose `metadata`, `metadata.annotations` or `spec` is
/// present and not an object. The apiserver never returns one; a write of what the
/// edit would make of it could only replace what someone else wrote.
fn well_formed(value: &Value) -> Result<(), Error> {
    let is_object_or_absent = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.is_object());
    let shape = if !value.is_object() {
        Some("it is not a JSON object")
    } else if !is_object_or_absent(value.get("metadata")) {
        Some("its metadata is not an object")
    } else if !is_object_or_absent(value.pointer("/metadata/annotations")) {
        Some("its annotations are not an object")
    } else if !is_object_or_absent(value.get("spec")) {
        Some("its spec is not an object")
    } else {
        None
    };
    match shape {
        Some(why) => Err(Error::rejected(format!("the object as read is malformed: {why}"))),
        None => Ok(()),
    }
}

/// The member `key` of `value` (made an object first, if need be).
fn field<'a>(value: &'a mut Value, key: &str) -> &'a mut Value {
    object(value).entry(key).or_insert(Value::Null)
}

fn annotations(value: &mut Value) -> &mut Map<String, Value> {
    object(field(field(value, "metadata"), "annotations"))
}

/// The hold instance in force on `object`: `None` when there is none. A malformed
/// value is a refusal: someone else wrote it, and dispatch will not guess.
pub(crate) fn hold_in_force(object: &Value) -> Result<Option<u64>, Error> {
    match annotation(object, keys::ANN_HOLD_INSTANCE) {
        None => Ok(None),
        Some(text) => parse_canonical_decimal(text).map(Some).ok_or_else(|| {
            Error::rejected(format!(
                "annotation {}={text:?} is malformed: want a decimal of 1 or more; remove it by hand",
                keys::ANN_HOLD_INSTANCE
            ))
        }),
    }
}

/// The admission count A of a plain-mode TrainJob (0 when absent or malformed), read
/// as classification reads it.
pub(crate) fn admission(train_job: &Value) -> u64 {
    annotation(train_job, keys::ANN_ADMISSION).and_then(parse_counter).unwrap_or(0)
}

/// Sets the admission count on the TrainJob and in dispatch's runtime patch (every pod
/// template of the patch), so the next execution's pods carry it.
fn set_admission(train_job: &mut Value, count: u64) {
    annotations(train_job).insert(keys::ANN_ADMISSION.into(), json!(count.to_string()));
    let patches = train_job.pointer_mut("/spec/runtimePatches").and_then(Value::as_array_mut);
    for patch in patches.into_iter().flatten() {
        if patch.get("manager").and_then(Value::as_str) != Some(keys::RUNTIME_PATCH_MANAGER) {
            continue;
        }
        let jobs = patch
            .pointer_mut("/trainingRuntimeSpec/template/spec/replicatedJobs")
            .and_then(Value::as_array_mut);
        for job in jobs.into_iter().flatten() {
            if let Some(meta) = job.pointer_mut("/template/spec/template/metadata") {
                *field(field(meta, "annotations"), keys::ANN_ADMISSION) = json!(count.to_string());
            }
        }
    }
}

fn set_suspend(train_job: &mut Value, suspend: bool) {
    *field(field(train_job, "spec"), "suspend") = json!(suspend);
}

fn set_active(workload: &mut Value, active: bool) {
    *field(field(workload, "spec"), "active") = json!(active);
}

fn stale(instance: u64, in_force: u64) -> Error {
    Error::refined(
        Refinement::StaleHold,
        format!("hold {instance} is not the one in force: hold {in_force} is"),
    )
}

fn pods_remain(verb: &str, pods: &[String]) -> Error {
    Error::refined(
        Refinement::PodsRemain,
        format!(
            "{verb} must wait: the previous execution has not gone yet ({}); nothing was written, retry",
            pods.join(", ")
        ),
    )
}

/// Refuses an instance of 0: hold instances start at 1.
pub fn check_instance(instance: u64) -> Result<(), Error> {
    if instance == 0 {
        Err(Error::invalid("hold instance 0 is not valid: instances start at 1"))
    } else {
        Ok(())
    }
}

/// Plain-mode Open: lift the start gate (`spec.suspend: false`, admission 1), unless a
/// dispatch hold keeps it stopped (then only the admission count moves).
pub fn open_plain(train_job: &mut Value, situation: &Situation) -> Result<Edit, Error> {
    well_formed(train_job)?;
    let count = admission(train_job);
    if situation.ended {
        return Err(ended_before_open(count == 0));
    }
    if count >= 1 {
        return Ok(Edit::Unchanged);
    }
    if !situation.pods_remaining.is_empty() {
        return Err(pods_remain("open", &situation.pods_remaining));
    }
    let held = hold_in_force(train_job)?.is_some();
    set_admission(train_job, 1);
    set_suspend(train_job, held);
    Ok(Edit::Write)
}

/// Kueue-mode Open: remove dispatch's start gate from the TrainJob's
/// `kueue.x-k8s.io/admission-gated-by` (the annotation goes when it was the only gate).
pub fn open_kueue(train_job: &mut Value, situation: &Situation) -> Result<Edit, Error> {
    well_formed(train_job)?;
    let gates: Vec<String> = annotation(train_job, keys::KUEUE_ADMISSION_GATED_BY)
        .map(|g| g.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let gated = gates.iter().any(|g| g == keys::START_GATE);
    if situation.ended {
        return Err(ended_before_open(gated));
    }
    if !gated {
        return Ok(Edit::Unchanged);
    }
    let rest: Vec<String> = gates.into_iter().filter(|g| g != keys::START_GATE).collect();
    let annotations = annotations(train_job);
    if rest.is_empty() {
        annotations.remove(keys::KUEUE_ADMISSION_GATED_BY);
    } else {
        annotations.insert(keys::KUEUE_ADMISSION_GATED_BY.into(), json!(rest.join(",")));
    }
    Ok(Edit::Write)
}

fn ended_before_open(never_opened: bool) -> Error {
    if never_opened {
        Error::rejected("the TrainJob ended without being opened")
    } else {
        Error::rejected("the TrainJob has run and ended")
    }
}

/// Plain-mode Hold of `instance` on the TrainJob: sets the hold instance and suspends
/// it (`spec.suspend: true`). The same instance again writes nothing; another is stale.
pub fn hold_plain(
    train_job: &mut Value,
    instance: u64,
    situation: &Situation,
) -> Result<Edit, Error> {
    hold(train_job, instance, situation, |tj| set_suspend(tj, true))
}

/// Kueue-mode Hold of `instance` on the Workload: sets the hold instance and
/// deactivates it (`spec.active: false`). The same instance again writes nothing;
/// another is stale.
pub fn hold_kueue(
    workload: &mut Value,
    instance: u64,
    situation: &Situation,
) -> Result<Edit, Error> {
    hold(workload, instance, situation, |wl| set_active(wl, false))
}

/// Hold `instance` on the held object, which `stop` stops.
fn hold(
    held: &mut Value,
    instance: u64,
    situation: &Situation,
    stop: fn(&mut Value),
) -> Result<Edit, Error> {
    well_formed(held)?;
    check_instance(instance)?;
    if situation.ended {
        return Err(Error::rejected("the TrainJob has ended: there is nothing to hold"));
    }
    match hold_in_force(held)? {
        Some(k) if k == instance => return Ok(Edit::Unchanged),
        Some(k) => return Err(stale(instance, k)),
        None => {}
    }
    annotations(held).insert(keys::ANN_HOLD_INSTANCE.into(), json!(instance.to_string()));
    stop(held);
    Ok(Edit::Write)
}

/// The checks every Release makes first: whether the hold of `instance` is in force on
/// `held` (`false`: no hold is, so the Release writes nothing), refusing instance 0, a
/// malformed object and another instance's hold (*stale hold*).
fn hold_to_release(held: &Value, instance: u64) -> Result<bool, Error> {
    well_formed(held)?;
    check_instance(instance)?;
    match hold_in_force(held)? {
        None => Ok(false),
        Some(k) if k != instance => Err(stale(instance, k)),
        Some(_) => Ok(true),
    }
}

/// Plain-mode Release of `instance`: when the gate has been lifted, runs the TrainJob
/// again as a new execution (admission + 1), once the previous execution's pods are
/// gone; when it never was, only removes the hold. No hold in force writes nothing.
pub fn release_plain(
    train_job: &mut Value,
    instance: u64,
    situation: &Situation,
) -> Result<Edit, Error> {
    if !hold_to_release(train_job, instance)? {
        return Ok(Edit::Unchanged);
    }
    if annotation(train_job, keys::ANN_ENDED).is_some() {
        return Err(Error::rejected(
            "the TrainJob has run and ended: a Release would run it again under the identity of the execution that ended; start the next submission instead",
        ));
    }
    let count = admission(train_job);
    if count >= 1 {
        if !situation.pods_remaining.is_empty() {
            return Err(pods_remain("release", &situation.pods_remaining));
        }
        set_admission(train_job, count + 1);
        set_suspend(train_job, false);
    }
    annotations(train_job).remove(keys::ANN_HOLD_INSTANCE);
    Ok(Edit::Write)
}

/// Seals a TrainJob that has failed, in either mode: closes its start gate again
/// (`spec.suspend: true`) and writes `record` (`ended.rs` says why). A TrainJob already
/// sealed writes nothing, whatever its record says: the first one stands.
pub fn seal(train_job: &mut Value, record: &EndRecord) -> Result<Edit, Error> {
    well_formed(train_job)?;
    if annotation(train_job, keys::ANN_ENDED).is_some() {
        return Ok(Edit::Unchanged);
    }
    annotations(train_job).insert(keys::ANN_ENDED.into(), json!(record.to_annotation()));
    set_suspend(train_job, true);
    Ok(Edit::Write)
}

/// Kueue-mode Release of `instance` on the Workload: removes the hold, makes it active
/// again and counts the Release in `d/releases`, so the gate controller permits one
/// more admission (`readmission::decide`), once the previous execution's pods are gone,
/// as in plain mode: Kueue would admit the Workload again at once, and the resumed
/// Jobs make their pods while the held ones still terminate.
pub fn release_kueue(
    workload: &mut Value,
    instance: u64,
    situation: &Situation,
) -> Result<Edit, Error> {
    if !hold_to_release(workload, instance)? {
        return Ok(Edit::Unchanged);
    }
    if !situation.pods_remaining.is_empty() {
        return Err(pods_remain("release", &situation.pods_remaining));
    }
    let releases = annotation(workload, keys::ANN_RELEASES).and_then(parse_counter).unwrap_or(0);
    let annotations = annotations(workload);
    annotations.remove(keys::ANN_HOLD_INSTANCE);
    annotations.insert(keys::ANN_RELEASES.into(), json!((releases + 1).to_string()));
    set_active(workload, true);
    Ok(Edit::Write)
}

#[cfg(test)]
mod tests;
