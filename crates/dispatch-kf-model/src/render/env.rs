//! `spec.trainer.env`: the job's env sorted by key, then dispatch's variables in the
//! order of `docs/names-labels-annotations.md#environment`.

use dispatch_core::StartRequest;
use serde_json::{Value, json};

use crate::keys::{self, env};

/// Where a dispatch variable's value comes from.
enum Source {
    /// A value render knows.
    Literal(fn(&StartRequest) -> String),
    /// The pod's annotation, through the downward API.
    PodAnnotation(&'static str),
    /// The pod's label, through the downward API.
    PodLabel(&'static str),
}

/// dispatch's variables, in order (the table "Environment"); `DISPATCH_K8S_WORKDIR`
/// follows them when the job sets a WorkDir.
const VARIABLES: [(&str, Source); 6] = [
    (env::JOB_ID, Source::Literal(|r| r.job.to_string())),
    (env::SUBMISSION, Source::Literal(|r| r.submission.to_string())),
    (env::ATTEMPT, Source::Literal(|r| r.attempt.to_string())),
    (env::EPOCH_PREFIX, Source::Literal(|r| epoch_prefix(r.generation, r.submission).to_string())),
    (env::ADMISSION, Source::PodAnnotation(keys::ANN_ADMISSION)),
    (env::RESTART_ATTEMPT, Source::PodLabel(keys::JOBSET_RESTART_ATTEMPT)),
];

/// How many variables dispatch adds without a WorkDir.
pub(super) const DISPATCH_VARIABLES: usize = VARIABLES.len();

/// `G × 10^6 + N`: the first part of a training program's fencing epoch
/// `DISPATCH_K8S_EPOCH_PREFIX × 10^6 + A + J`. Both arguments are in range (checked
/// before render gets here), so this never overflows.
pub(super) fn epoch_prefix(generation: i64, submission: i64) -> i64 {
    generation * 1_000_000 + submission
}

/// The whole `spec.trainer.env` of `request`.
pub(crate) fn trainer_env(request: &StartRequest) -> Vec<Value> {
    let job = request.spec.env.iter().map(|(k, v)| json!({"name": k, "value": v}));
    let dispatch = VARIABLES.iter().map(|(name, source)| match source {
        Source::Literal(read) => json!({"name": name, "value": read(request)}),
        Source::PodAnnotation(key) => field_ref(name, &format!("metadata.annotations['{key}']")),
        Source::PodLabel(key) => field_ref(name, &format!("metadata.labels['{key}']")),
    });
    let work_dir = request.spec.work_dir.iter().map(|d| json!({"name": env::WORKDIR, "value": d}));
    job.chain(dispatch).chain(work_dir).collect()
}

/// A downward-API variable; `apiVersion` is written so that it reads back equal.
fn field_ref(name: &str, path: &str) -> Value {
    json!({"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}})
}
