//! Foreign notes: what contradicts dispatch having made an object (the rows are
//! `docs/classification.md#foreign-notes-classifyforeignrs-in-this-order`). Each true
//! row adds its note, in the table's order. A label or annotation that is absent
//! contradicts nothing.
//!
//! One row is this adapter's own: a TrainJob whose name is not one `names::make` writes
//! is foreign, `name <n> is not one dispatch makes`, listed first.

use super::facts::Facts;
use super::text::per_pod_notes;
use crate::keys;
use crate::lenient::Str;
use crate::mode::Mode;

/// The kind a runtime copy has, and the one `spec.runtimeRef` means when it names none.
const RUNTIME_COPY_KIND: &str = "TrainingRuntime";
const RUNTIME_REF_DEFAULT_KIND: &str = "ClusterTrainingRuntime";

/// The foreign notes of one TrainJob, in the table's order.
pub(crate) fn notes<S: Str>(f: &Facts<'_, S>) -> Vec<String> {
    let tj = f.tj;
    let name = tj.meta.name();
    let mut out = Vec::new();
    let job = &f.named_text;
    match job {
        None => out.push(format!("name {name} is not one dispatch makes")),
        Some((id, n)) => {
            if let Some(v) = tj.meta.label(keys::LABEL_JOB_ID).filter(|v| v != id) {
                out.push(format!("label {}={v} contradicts the name", keys::LABEL_JOB_ID));
            }
            if let Some(v) = tj.meta.label(keys::LABEL_SUBMISSION).filter(|v| v != n) {
                out.push(format!("label {}={v} contradicts the name", keys::LABEL_SUBMISSION));
            }
        }
    }
    if let Some(r) = &tj.runtime_ref {
        let kind = r.kind.get().unwrap_or(RUNTIME_REF_DEFAULT_KIND);
        let ref_name = r.name.or_empty();
        if kind != RUNTIME_COPY_KIND || ref_name != name {
            out.push(format!("spec.runtimeRef names {kind} {ref_name}"));
        }
    }
    if let Some(v) = tj.managed_by.get().filter(|v| *v != keys::TRAINER_CONTROLLER) {
        out.push(format!("spec.managedBy is {v}"));
    }
    if let Some(js) = f.job_set
        && js.meta.controller().and_then(|o| o.uid.get()) != Some(tj.meta.uid())
    {
        out.push(format!("JobSet {name} is controlled by another object"));
    }
    let (id, n) = match job {
        Some((id, n)) => (Some(id.as_str()), Some(n.as_str())),
        None => (tj.meta.label(keys::LABEL_JOB_ID), tj.meta.label(keys::LABEL_SUBMISSION)),
    };
    let contradicting = f
        .pods
        .iter()
        .filter(|p| {
            let (pid, pn, jobset) = (p.job_id, p.submission, p.jobset);
            let selected_by_job = pid.is_some() && pid == id && pn == n;
            let other_jobset = selected_by_job && jobset.is_some_and(|js| js != name);
            let other_job = jobset == Some(name)
                && (pid.is_some_and(|v| Some(v) != id) || pn.is_some_and(|v| Some(v) != n));
            other_jobset || other_job
        })
        .map(|p| (p.name(), format!("pod {} contradicts its labels", p.name())))
        .collect();
    per_pod_notes(contradicting, &mut out);
    if f.options.mode == Mode::Kueue
        && let Some(w) = f.workload
        && !w.meta.owner_references.0.iter().any(|o| o.uid.get() == Some(tj.meta.uid()))
    {
        out.push(format!("Workload {} is owned by another object", w.meta.name()));
    }
    if let Some(v) = f.hold_text
        && f.hold_instance.is_none()
    {
        out.push(format!("annotation {}={v} is malformed", keys::ANN_HOLD_INSTANCE));
    }
    out
}
