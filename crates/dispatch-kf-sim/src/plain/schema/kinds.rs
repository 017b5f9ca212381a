//! The schema of each served kind, as tables.

use super::{Field, Shape, field};

/// The schema of objects of `kind`: TrainJob field by field, every other kind by its
/// metadata, keeping any `spec`, `status` or other top-level field it is sent.
pub(crate) fn of_kind(kind: &str) -> Shape {
    match kind {
        "TrainJob" => TRAIN_JOB,
        _ => ANY_KIND,
    }
}

/// A `metav1.ObjectMeta`: the apiserver refuses an undeclared field here on every kind.
pub(crate) const OBJECT_META: Shape = Shape::Object(&[
    field("name", Shape::Str, "The object's name, unique in its namespace and kind."),
    field(
        "generateName",
        Shape::Str,
        "A prefix the server completes into a unique name when name is empty.",
    ),
    field(
        "namespace",
        Shape::Str,
        "The namespace the object lives in; empty for cluster-scoped kinds.",
    ),
    field("uid", Shape::Str, "Set by the server: unique across the cluster's whole history."),
    field(
        "resourceVersion",
        Shape::Str,
        "Set by the server: the version a write must match, and a watch resumes from.",
    ),
    field(
        "generation",
        Shape::Int,
        "Set by the server: bumped by each change outside metadata and status.",
    ),
    field("creationTimestamp", Shape::Time, "Set by the server: when the object was made."),
    field("deletionTimestamp", Shape::Time, "Set by the server: when deletion was asked for."),
    field(
        "deletionGracePeriodSeconds",
        Shape::Int,
        "How long the object has to go, once deleting.",
    ),
    field("labels", Shape::Map(&Shape::Str), "Keys and values that selectors match."),
    field(
        "annotations",
        Shape::Map(&Shape::Str),
        "Keys and values for tools; selectors do not see them.",
    ),
    field(
        "ownerReferences",
        Shape::List(&OWNER_REFERENCE),
        "The objects this one belongs to; the garbage collector deletes it after them.",
    ),
    field("finalizers", Shape::List(&Shape::Str), "What must happen before the object is removed."),
    field(
        "managedFields",
        Shape::List(&Shape::Open(&[])),
        "Set by the server: which manager last set which fields.",
    ),
    field("selfLink", Shape::Str, "Unused; kept for old clients."),
]);

const OWNER_REFERENCE: Shape = Shape::Object(&[
    field("apiVersion", Shape::Str, "The owner's API version."),
    field("kind", Shape::Str, "The owner's kind."),
    field("name", Shape::Str, "The owner's name."),
    field("uid", Shape::Str, "The owner's UID."),
    field("controller", Shape::Bool, "Whether the owner is the object's controller."),
    field(
        "blockOwnerDeletion",
        Shape::Bool,
        "Whether the owner's foreground deletion waits for this object.",
    ),
]);

const API_VERSION: Field =
    field("apiVersion", Shape::Str, "The versioned schema the object is written in.");
const KIND: Field = field("kind", Shape::Str, "The object's kind.");
const METADATA: Field =
    field("metadata", OBJECT_META, "The object's name, labels, owners and server-set fields.");

/// Any kind but TrainJob.
const ANY_KIND: Shape = Shape::Open(&[API_VERSION, KIND, METADATA]);

/// The Trainer's TrainJob (trainer.kubeflow.org/v1alpha1, Trainer v2.3.0).
const TRAIN_JOB: Shape = Shape::Object(&[
    API_VERSION,
    KIND,
    METADATA,
    field("spec", TRAIN_JOB_SPEC, "What to train, with which runtime, on how many nodes."),
    field("status", TRAIN_JOB_STATUS, "What the Trainer observed of the job."),
]);

const TRAIN_JOB_SPEC: Shape = Shape::Object(&[
    field("runtimeRef", RUNTIME_REF, "The runtime the job is made from (required)."),
    field("trainer", TRAINER, "The trainer step: image, command and size."),
    field("initializer", Shape::Open(&[]), "Dataset and model initialization before training."),
    field(
        "runtimePatches",
        Shape::List(&Shape::Open(&[])),
        "Changes to the runtime's template, each owned by one manager.",
    ),
    field("suspend", Shape::Bool, "Whether the job is held: no pods run while it is true."),
    field("managedBy", Shape::Str, "The controller that reconciles the job; set at creation only."),
    field("activeDeadlineSeconds", Shape::Int, "How long the job may run before it fails."),
]);

const RUNTIME_REF: Shape = Shape::Object(&[
    field("name", Shape::Str, "The runtime's name."),
    field("kind", Shape::Str, "ClusterTrainingRuntime (the default) or TrainingRuntime."),
    field("apiGroup", Shape::Str, "The runtime's API group (trainer.kubeflow.org)."),
]);

const TRAINER: Shape = Shape::Object(&[
    field("image", Shape::Str, "The trainer's container image."),
    field("command", Shape::List(&Shape::Str), "The entrypoint."),
    field("args", Shape::List(&Shape::Str), "The entrypoint's arguments."),
    field("env", Shape::List(&ENV_VAR), "Environment variables of the trainer's container."),
    field("numNodes", Shape::Int, "How many nodes train."),
    field("numProcPerNode", Shape::Int, "How many processes each node runs."),
    field(
        "resourcesPerNode",
        Shape::Open(&[]),
        "Requests and limits of each node's trainer container.",
    ),
]);

const ENV_VAR: Shape = Shape::Object(&[
    field("name", Shape::Str, "The variable's name."),
    field("value", Shape::Str, "Its value."),
    field("valueFrom", Shape::Open(&[]), "Where its value comes from instead."),
]);

const TRAIN_JOB_STATUS: Shape = Shape::Object(&[
    field("conditions", Shape::List(&CONDITION), "Suspended, Complete, Failed, and why."),
    field("jobsStatus", Shape::List(&Shape::Open(&[])), "Counts of each replicated job's jobs."),
    field("trainerStatus", Shape::Open(&[]), "Progress the trainer reports."),
]);

const CONDITION: Shape = Shape::Object(&[
    field("type", Shape::Str, "The condition's type."),
    field("status", Shape::Str, "True, False or Unknown."),
    field("reason", Shape::Str, "Why, in one CamelCase word."),
    field("message", Shape::Str, "Why, in words."),
    field("lastTransitionTime", Shape::Time, "When the status last changed."),
    field("observedGeneration", Shape::Int, "The generation the condition was set for."),
]);
