//! The two objects render writes: the TrainJob (`docs/render.md#the-trainjob`) and the
//! runtime copy (`docs/render.md#the-runtime-copy`), with the labels and annotations of
//! `docs/names-labels-annotations.md` and the runtime patch of
//! `docs/render.md#dispatchs-runtime-patch`.

use dispatch_core::StartRequest;
use serde_json::{Map, Value, json};

use super::env::trainer_env;
use super::token::AttemptToken;
use super::{Purpose, limits};
use crate::Mode;
use crate::keys;
use crate::prologue::PROLOGUE;
use crate::runtime::rules::TrainerStep;
use crate::settings::Settings;

/// What the objects are made from, once every check has passed.
pub(crate) struct Parts<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) request: &'a StartRequest,
    pub(crate) name: &'a str,
    pub(crate) image: &'a str,
    pub(crate) step: &'a TrainerStep<'a>,
    pub(crate) token: &'a AttemptToken,
    pub(crate) purpose: Purpose,
}

/// The three labels on every object (TrainJob, copy, JobSet, pods).
fn common_labels(request: &StartRequest) -> Map<String, Value> {
    Map::from_iter([
        (keys::LABEL_JOB_ID.to_owned(), json!(request.job.as_str())),
        (keys::LABEL_SUBMISSION.to_owned(), json!(request.submission.to_string())),
        (keys::LABEL_MANAGED_BY.to_owned(), json!(keys::MANAGED_BY_DISPATCH)),
    ])
}

/// The probe's mark on its TrainJob and runtime copy: the label that finds them and
/// the annotation that says when their probe has ended (`crate::internal::probe`).
fn mark_probe(
    purpose: Purpose,
    labels: &mut Map<String, Value>,
    annotations: &mut Map<String, Value>,
) {
    if let Purpose::Probe { expires } = purpose {
        labels.insert(keys::LABEL_PURPOSE.to_owned(), json!(keys::PURPOSE_PROBE));
        annotations.insert(keys::ANN_PROBE_EXPIRES.to_owned(), json!(expires.to_string()));
    }
}

/// The pods' annotations through the runtime patch: the admission count in plain mode;
/// in Kueue mode the gate controller writes it, so the patch leaves it out.
fn pod_annotations(mode: Mode) -> Option<Value> {
    match mode {
        Mode::Plain => Some(json!({keys::ANN_ADMISSION: "0"})),
        Mode::Kueue => None,
    }
}

/// dispatch's one runtime patch entry.
pub(crate) fn runtime_patch(p: &Parts<'_>) -> Value {
    let labels = Value::Object(common_labels(p.request));
    let mut pod_meta = json!({"labels": labels});
    if let Some(annotations) = pod_annotations(p.settings.mode) {
        pod_meta["annotations"] = annotations;
    }
    let mut pod = json!({"metadata": pod_meta});
    if matches!(p.purpose, Purpose::Probe { .. }) {
        pod["spec"] =
            json!({"nodeSelector": {keys::PROBE_NODE_SELECTOR: keys::PROBE_NODE_SELECTOR_VALUE}});
    }
    json!({
        "manager": keys::RUNTIME_PATCH_MANAGER,
        "trainingRuntimeSpec": {"template": {
            "metadata": {"labels": labels},
            "spec": {"replicatedJobs": [{
                "name": p.step.replicated_job,
                "template": {"metadata": {"labels": labels}, "spec": {"template": pod}},
            }]},
        }},
    })
}

/// `spec.trainer`.
fn trainer(p: &Parts<'_>) -> Value {
    let spec = &p.request.spec;
    let mut command: Vec<Value> =
        vec![json!("/bin/sh"), json!("-c"), json!(PROLOGUE), json!(keys::PROLOGUE_NAME)];
    debug_assert_eq!(command.len(), limits::PROLOGUE_ITEMS);
    command.extend(spec.command.iter().map(|c| json!(c)));
    let mut trainer = json!({
        "image": p.image,
        "command": command,
        "env": trainer_env(p.request),
        "numNodes": spec.nodes,
    });
    if spec.procs_per_node > 0 {
        trainer["numProcPerNode"] = json!(spec.procs_per_node);
    }
    if spec.gpus_per_node > 0 {
        trainer["resourcesPerNode"] =
            json!({"limits": {p.settings.gpu_resource.clone(): spec.gpus_per_node.to_string()}});
    }
    trainer
}

/// The TrainJob.
pub(crate) fn train_job(p: &Parts<'_>) -> Value {
    let r = p.request;
    let mut labels = common_labels(r);
    let mut annotations = Map::from_iter([
        (
            keys::ANN_COMMENT.to_owned(),
            json!(format!(
                "dispatch job {} generation {} submission {} a={}",
                r.job, r.generation, r.submission, r.attempt
            )),
        ),
        (keys::ANN_ATTEMPT_TOKEN.to_owned(), json!(p.token.to_string())),
        (keys::ANN_GENERATION.to_owned(), json!(r.generation.to_string())),
    ]);
    match (&p.settings.mode, &p.settings.kueue) {
        (Mode::Kueue, Some(kueue)) => {
            labels.insert(keys::KUEUE_QUEUE_NAME.to_owned(), json!(kueue.queue));
            annotations.insert(keys::KUEUE_ADMISSION_GATED_BY.to_owned(), json!(keys::START_GATE));
        }
        _ => {
            annotations.insert(keys::ANN_ADMISSION.to_owned(), json!("0"));
        }
    }
    mark_probe(p.purpose, &mut labels, &mut annotations);
    let mut spec = json!({
        "runtimeRef": {"apiGroup": keys::TRAINER_GROUP, "kind": keys::KIND_TRAINING_RUNTIME, "name": p.name},
        "trainer": trainer(p),
        "runtimePatches": [runtime_patch(p)],
    });
    if p.settings.mode == Mode::Plain {
        spec["suspend"] = json!(true);
    }
    if let Some(limit) = r.spec.time_limit.filter(|t| t.is_positive()) {
        spec["activeDeadlineSeconds"] = json!(limit.ceil_secs());
    }
    json!({
        "apiVersion": keys::TRAINER_API_VERSION,
        "kind": keys::KIND_TRAIN_JOB,
        "metadata": {"name": p.name, "namespace": p.settings.namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    })
}

/// The runtime copy: a TrainingRuntime of the TrainJob's name, its spec the source's
/// less what `runtime::copy` leaves out.
pub(crate) fn runtime_copy(p: &Parts<'_>) -> Value {
    let mut labels = common_labels(p.request);
    let mut annotations = Map::from_iter([
        (keys::ANN_ATTEMPT_TOKEN.to_owned(), json!(p.token.to_string())),
        (keys::ANN_RUNTIME_SOURCE.to_owned(), json!(p.step.source.reference.to_string())),
    ]);
    mark_probe(p.purpose, &mut labels, &mut annotations);
    json!({
        "apiVersion": keys::TRAINER_API_VERSION,
        "kind": keys::KIND_TRAINING_RUNTIME,
        "metadata": {
            "name": p.name,
            "namespace": p.settings.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": crate::runtime::copy::spec_of_copy(&p.step.source.spec),
    })
}
