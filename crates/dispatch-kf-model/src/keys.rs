//! Every label, annotation, name and value the adapter shares with the cluster, in one
//! place. `d/` in the docs is dispatch's domain prefix, `dispatch.phpboyscout.uk/`.

/// Label: the JobId, canonical upper case.
pub const LABEL_JOB_ID: &str = "dispatch.phpboyscout.uk/job-id";
/// Label: the submission N.
pub const LABEL_SUBMISSION: &str = "dispatch.phpboyscout.uk/submission";
/// Label: always `dispatch` (`MANAGED_BY_DISPATCH`).
pub const LABEL_MANAGED_BY: &str = "dispatch.phpboyscout.uk/managed-by";
/// The value of [`LABEL_MANAGED_BY`].
pub(crate) const MANAGED_BY_DISPATCH: &str = "dispatch";
/// Label (the preflight probe's TrainJob and runtime copy): what the object is for,
/// [`PURPOSE_PROBE`]; a job's objects have none.
pub const LABEL_PURPOSE: &str = "dispatch.phpboyscout.uk/purpose";
/// The value of [`LABEL_PURPOSE`] on the preflight probe's objects.
pub const PURPOSE_PROBE: &str = "probe";

/// Annotation (TrainJob): `dispatch job <JobId> generation <G> submission <N> a=<attempt>`.
pub(crate) const ANN_COMMENT: &str = "dispatch.phpboyscout.uk/comment";
/// Annotation (TrainJob, runtime copy): `<attempt>-<16 lower-case hex>`.
pub(crate) const ANN_ATTEMPT_TOKEN: &str = "dispatch.phpboyscout.uk/attempt-token";
/// Annotation (TrainJob): the generation G.
pub(crate) const ANN_GENERATION: &str = "dispatch.phpboyscout.uk/generation";
/// Annotation (runtime copy): `<Kind>/<name>` of the runtime it copies.
pub(crate) const ANN_RUNTIME_SOURCE: &str = "dispatch.phpboyscout.uk/runtime-source";
/// Annotation (the preflight probe's TrainJob and runtime copy): the moment, RFC 3339,
/// by which the probe that made the object has ended, its clean-up included; past it
/// (and `probe::CLOCK_ALLOWANCE`), the next probe removes the object's job.
pub const ANN_PROBE_EXPIRES: &str = "dispatch.phpboyscout.uk/probe-expires";
/// Annotation (TrainJob in plain mode; every pod): the admission count A.
pub const ANN_ADMISSION: &str = "dispatch.phpboyscout.uk/admission";
/// Annotation (the held object): the hold instance in force.
pub const ANN_HOLD_INSTANCE: &str = "dispatch.phpboyscout.uk/hold-instance";
/// Annotation (TrainJob): the execution that ended and its cause, as JSON
/// (`ended::EndRecord`), written with `spec.suspend: true` once a TrainJob has failed,
/// so that it never runs again.
pub const ANN_ENDED: &str = "dispatch.phpboyscout.uk/ended";
/// Annotation (Workload, Kueue mode): how many Releases the adapter has made; the
/// readmission gate permits one more admission for each one it has not seen.
pub(crate) const ANN_RELEASES: &str = "dispatch.phpboyscout.uk/releases";
/// Annotation (Workload, written by the gate controller): the admissions it has
/// approved so far (the last approval's `d/admission`).
pub const ANN_GATE_ADMISSIONS: &str = "dispatch.phpboyscout.uk/gate-admissions";
/// Annotation (Workload, written by the gate controller): the [`ANN_RELEASES`] count
/// its last approval (or running admission) has used up.
pub(crate) const ANN_GATE_RELEASES_SEEN: &str = "dispatch.phpboyscout.uk/gate-releases-seen";
/// Annotation (Workload, written by the gate controller): the quota reservation its last
/// approval was for (`readmission::reservation`), so that an approval whose check write
/// did not land is made again for that reservation, and never for another.
pub(crate) const ANN_GATE_APPROVED_RESERVATION: &str =
    "dispatch.phpboyscout.uk/gate-approved-reservation";
/// The gate controller's field manager for its server-side applies.
pub const GATE_FIELD_MANAGER: &str = "dispatch-kf-gate";

/// dispatch's start gate, named in [`KUEUE_ADMISSION_GATED_BY`].
pub const START_GATE: &str = "dispatch.phpboyscout.uk/start";
/// The field manager of dispatch's runtime patch.
pub(crate) const RUNTIME_PATCH_MANAGER: &str = "dispatch.phpboyscout.uk/adapter";
/// Node selector key of the preflight probe; no node carries it.
pub(crate) const PROBE_NODE_SELECTOR: &str = "dispatch.phpboyscout.uk/probe";
/// The value of [`PROBE_NODE_SELECTOR`].
pub(crate) const PROBE_NODE_SELECTOR_VALUE: &str = "never";
/// `spec.controllerName` of dispatch's AdmissionCheck.
pub const GATE_CONTROLLER_NAME: &str = "dispatch.phpboyscout.uk/readmission-gate";
/// `reportingController` of the Events the cause controller creates.
pub const EVENTS_CONTROLLER_NAME: &str = "dispatch.phpboyscout.uk/events";

/// Kueue label: the LocalQueue (Kueue mode, TrainJob only).
pub const KUEUE_QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
/// The resource every Kueue pod set requests, one per pod, when its ClusterQueue covers
/// it: a ClusterQueue that covers it assigns a flavor to every Workload.
pub(crate) const KUEUE_PODS_RESOURCE: &str = "pods";
/// Kueue annotation: the admission gates still closed.
pub const KUEUE_ADMISSION_GATED_BY: &str = "kueue.x-k8s.io/admission-gated-by";
/// Kueue label on a Workload: the UID of the job it stands for.
pub const KUEUE_JOB_UID: &str = "kueue.x-k8s.io/job-uid";

/// JobSet label on its pods: the JobSet's name.
pub const JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";
/// JobSet label on its pods: the UID of the JobSet that made them (which tells two
/// instances of one name apart).
pub const JOBSET_UID: &str = "jobset.sigs.k8s.io/jobset-uid";
/// JobSet label on its pods: the restart attempt J.
pub const JOBSET_RESTART_ATTEMPT: &str = "jobset.sigs.k8s.io/restart-attempt";
/// JobSet label on its pods: the index of the Job within its replicated job.
pub(crate) const JOBSET_JOB_INDEX: &str = "jobset.sigs.k8s.io/job-index";
/// Kubernetes label on an indexed Job's pods: the completion index (the rank).
pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The Job controller's finalizer on each pod of a Job: it holds a pod until the
/// controller has counted it, and it takes it off a pod whose Job is gone.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Trainer label on a runtime's replicated job: which step it runs.
pub const TRAINER_ANCESTOR_STEP: &str = "trainer.kubeflow.org/trainjob-ancestor-step";
/// The value of [`TRAINER_ANCESTOR_STEP`] on the trainer step.
pub const TRAINER_STEP: &str = "trainer";
/// The container the Trainer puts the job's image and command in.
pub const NODE_CONTAINER: &str = "node";

/// `spec.managedBy` of a TrainJob the Trainer's own controller manages.
pub(crate) const TRAINER_CONTROLLER: &str = "trainer.kubeflow.org/trainjob-controller";
/// `spec.managedBy` of a JobSet JobSet's own controller manages.
pub(crate) const JOBSET_CONTROLLER: &str = "jobset.sigs.k8s.io/jobset-controller";

/// The taint that says a node is out of service and its pods may go.
pub(crate) const TAINT_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// An API's group, the version the adapter speaks, and the two as `apiVersion`, each
/// spelled once.
macro_rules! api {
    ($api:literal: $group:ident, $version:ident, $api_version:ident = $g:literal / $v:literal) => {
        #[doc = concat!($api, "'s API group.")]
        pub const $group: &str = $g;
        #[doc = concat!("The version of ", $api, "'s API the adapter speaks.")]
        pub const $version: &str = $v;
        #[doc = concat!($api, "'s `apiVersion`: group/version.")]
        pub const $api_version: &str = concat!($g, "/", $v);
    };
}

api!("The Trainer": TRAINER_GROUP, TRAINER_VERSION, TRAINER_API_VERSION =
    "trainer.kubeflow.org" / "v1alpha1");
api!("JobSet": JOBSET_GROUP, JOBSET_VERSION, JOBSET_API_VERSION = "jobset.x-k8s.io" / "v1alpha2");
api!("Kueue": KUEUE_GROUP, KUEUE_VERSION, KUEUE_API_VERSION = "kueue.x-k8s.io" / "v1beta2");

/// What the Trainer's validating webhook says when it refuses a TrainJob whose runtime
/// it has not seen: it reads runtimes from its informer's cache, which lags the
/// apiserver, so a runtime copy created a moment before may not be there yet (seen on
/// the real control plane under a hundred Starts in a row).
pub const TRAINER_RUNTIME_NOT_SEEN: &str = "must be created before the TrainJob is created";

/// What Kueue's TrainJob webhook (`vtrainjob.kb.io`, v0.17 and v0.19, with topology-aware
/// scheduling on, its default) says in the same case: it too reads the runtime from its
/// cache. The runtime's name stands between the two parts.
pub const KUEUE_RUNTIME_NOT_SEEN: [&str; 2] = ["runtime '", "' not found"];

/// Whether a webhook's words say it has not seen the TrainJob's runtime (the Trainer's
/// or Kueue's): right after the runtime copy's create, a cache that lags.
pub fn says_runtime_not_seen(message: &str) -> bool {
    message.contains(TRAINER_RUNTIME_NOT_SEEN)
        || KUEUE_RUNTIME_NOT_SEEN.iter().all(|part| message.contains(part))
}

/// Words of the Trainer's TrainJob webhook (v2.2 and v2.3, `plugins/jobset`) when it
/// refuses a `spec.runtimePatches` change because the JobSet still counts active Jobs,
/// which it does for a while after the pods have gone.
pub const TRAINER_JOBSET_STILL_ACTIVE: &str =
    "RuntimePatches cannot be modified when the JobSet's ReplicatedJob";

/// The environment variables dispatch adds, in the order it adds them.
pub mod env {
    /// The JobId.
    pub(crate) const JOB_ID: &str = "DISPATCH_JOB_ID";
    /// The submission N.
    pub(crate) const SUBMISSION: &str = "DISPATCH_SUBMISSION";
    /// The attempt.
    pub(crate) const ATTEMPT: &str = "DISPATCH_ATTEMPT";
    /// G × 10^6 + N.
    pub(crate) const EPOCH_PREFIX: &str = "DISPATCH_K8S_EPOCH_PREFIX";
    /// The pod's admission count A, from the downward API.
    pub(crate) const ADMISSION: &str = "DISPATCH_K8S_ADMISSION";
    /// The pod's restart attempt J, from the downward API.
    pub(crate) const RESTART_ATTEMPT: &str = "DISPATCH_K8S_RESTART_ATTEMPT";
    /// The working directory, only when the job sets one.
    pub const WORKDIR: &str = "DISPATCH_K8S_WORKDIR";
}

/// The extension naming the runtime a job runs on (`kubeflow/RuntimeRef`).
pub const EXT_RUNTIME_REF: &str = "kubeflow/RuntimeRef";
/// The TrainingRuntime kind: a namespaced runtime.
pub const KIND_TRAINING_RUNTIME: &str = "TrainingRuntime";
/// The ClusterTrainingRuntime kind: a cluster-wide runtime.
pub const KIND_CLUSTER_TRAINING_RUNTIME: &str = "ClusterTrainingRuntime";
/// The TrainJob kind.
pub const KIND_TRAIN_JOB: &str = "TrainJob";
/// The extended resource GPUs are asked for under, unless the settings say otherwise.
pub(crate) const DEFAULT_GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The `$0` the prologue runs as, and the prefix of its messages.
pub(crate) const PROLOGUE_NAME: &str = "dispatch-prologue";
/// The preflight probe's image: a reference no registry serves.
pub(crate) const PROBE_IMAGE: &str = "dispatch.invalid/never:probe";

/// The label and annotation keys the model reads (classification, the ranks of an
/// execution in `ranks`, the mode of a TrainJob read without settings in
/// `Mode::of_train_job`, and the preflight probe's mark in `probe::abandoned`): the
/// dump reader keeps no others (`lenient::StrMap`), so an object's other labels cost
/// nothing.
pub(crate) const READ_BY_THE_MODEL: [&str; 16] = [
    LABEL_JOB_ID,
    LABEL_SUBMISSION,
    JOBSET_NAME,
    JOBSET_UID,
    JOBSET_RESTART_ATTEMPT,
    JOBSET_JOB_INDEX,
    JOB_COMPLETION_INDEX,
    KUEUE_JOB_UID,
    ANN_ADMISSION,
    ANN_HOLD_INSTANCE,
    ANN_ENDED,
    KUEUE_ADMISSION_GATED_BY,
    KUEUE_QUEUE_NAME,
    LABEL_PURPOSE,
    ANN_PROBE_EXPIRES,
    ANN_RUNTIME_SOURCE,
];
