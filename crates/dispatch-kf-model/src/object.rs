//! The shapes one Kubernetes object is read into: metadata, conditions, container
//! statuses and the few spec and status fields classification reads.
//!
//! `RawObject` is the union of what any kind needs, because an object's `kind` may
//! come after its `spec` and `status` in the bytes; [`crate::view`] then splits it
//! into one view per kind. Every field is lenient ([`crate::lenient`]).

use serde::Deserialize;

use crate::lenient::{Flag, FromJson, Int, List, Obj, Present, Str, StrMap, Text, unique};

mod job_tracking;
mod last_setters;

pub use job_tracking::JobTracking;
pub use last_setters::LastSetters;

/// One object of any kind, as read from a dump.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub(crate) struct RawObject<S = String> {
    /// `kind`: which view the object reads as (no view reads `apiVersion`).
    pub kind: ViewKind,
    /// `metadata`.
    pub metadata: Obj<Meta<S>>,
    /// `spec`: the union of the fields read of every kind.
    pub spec: Obj<RawSpec<S>>,
    /// `status`: the union of the fields read of every kind.
    pub status: Obj<RawStatus<S>>,
}

/// An object's `kind`, as far as which view it reads as: one of the kinds a view is
/// of, another, or none (`kind` absent or not a string). Read straight from the
/// string: no text of it is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ViewKind {
    /// No string `kind`.
    #[default]
    Absent,
    /// `TrainJob`.
    TrainJob,
    /// `JobSet`.
    JobSet,
    /// `Workload`.
    Workload,
    /// `Pod`.
    Pod,
    /// `Node`.
    Node,
    /// `TrainingRuntime`.
    TrainingRuntime,
    /// Any other kind.
    Other,
}

impl ViewKind {
    /// The kind named `name`.
    pub(crate) fn of(name: &str) -> ViewKind {
        match name {
            "TrainJob" => ViewKind::TrainJob,
            "JobSet" => ViewKind::JobSet,
            "Workload" => ViewKind::Workload,
            "Pod" => ViewKind::Pod,
            "Node" => ViewKind::Node,
            "TrainingRuntime" => ViewKind::TrainingRuntime,
            _ => ViewKind::Other,
        }
    }
}

impl<'de> Deserialize<'de> for ViewKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Text::<Tag>::deserialize(d).map(|text| text.0.map_or(ViewKind::Absent, |Tag(kind)| kind))
    }
}

/// A `kind` read as [`ViewKind`] through [`Text`]'s leniency.
#[derive(Clone, Debug, Default)]
struct Tag(ViewKind);

impl AsRef<str> for Tag {
    fn as_ref(&self) -> &str {
        ""
    }
}

impl Str for Tag {}

impl FromJson for Tag {
    fn from_json(s: &str) -> Self {
        Tag(ViewKind::of(s))
    }
}

/// The metadata classification reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub struct Meta<S = String> {
    /// The name.
    #[serde(deserialize_with = "unique")]
    pub name: Text<S>,
    /// The namespace (absent on Nodes).
    pub namespace: Text<S>,
    /// The UID.
    #[serde(deserialize_with = "unique")]
    pub uid: Text<S>,
    /// The resource version it was read at (a watch resumes from the last one seen).
    pub resource_version: Text<S>,
    /// The labels.
    pub labels: StrMap<S>,
    /// The annotations.
    pub annotations: StrMap<S>,
    /// The owner references.
    pub owner_references: List<OwnerRef<S>>,
    /// When deletion was requested.
    pub deletion_timestamp: Text<S>,
    /// Where the Job controller's tracking finalizer stands among the finalizers.
    #[serde(rename = "finalizers")]
    pub job_tracking: JobTracking,
    /// Who last set `spec.suspend` and `spec.active` (of managedFields, only that).
    pub managed_fields: LastSetters<S>,
}

impl<S: Str> Meta<S> {
    /// The name, or `""`.
    pub fn name(&self) -> &str {
        self.name.or_empty()
    }

    /// The namespace, or `""`.
    pub fn namespace(&self) -> &str {
        self.namespace.or_empty()
    }

    /// The UID, or `""`.
    pub fn uid(&self) -> &str {
        self.uid.or_empty()
    }

    /// The label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }

    /// The annotation `key`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key)
    }

    /// The owner reference with `controller: true`, if any.
    pub fn controller(&self) -> Option<&OwnerRef<S>> {
        self.owner_references.0.iter().find(|o| o.controller.is_true())
    }

    /// The manager of the latest managedFields entry that owns `spec.<field>`: `field`
    /// is `suspend` or `active`. Entries without a time count as oldest; on equal times
    /// the later entry wins.
    pub(crate) fn last_setter_of(&self, field: SpecField) -> Option<&str> {
        self.managed_fields.of(field)
    }
}

/// A field of `spec` whose last setter classification reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecField {
    /// `spec.suspend` (TrainJob).
    Suspend,
    /// `spec.active` (Workload).
    Active,
}

/// One owner reference: classification reads whose it is by UID alone.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "S: FromJson"))]
pub struct OwnerRef<S = String> {
    /// The owner's UID.
    pub uid: Text<S>,
    /// Whether it is the controller.
    pub controller: Flag,
}

/// One managedFields entry, read only for `spec.suspend` and `spec.active`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub(crate) struct ManagedFields<S = String> {
    /// The field manager.
    pub manager: Text<S>,
    /// When it last wrote.
    pub time: Text<S>,
    /// The fields it owns.
    #[serde(rename = "fieldsV1")]
    pub fields_v1: Obj<FieldsV1>,
}

/// `fieldsV1`, as far as `f:spec` goes.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FieldsV1 {
    /// `f:spec`.
    #[serde(rename = "f:spec")]
    pub spec: Obj<SpecFields>,
}

/// `f:spec`'s entries that classification asks about.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SpecFields {
    /// `f:suspend`.
    #[serde(rename = "f:suspend")]
    pub suspend: Present,
    /// `f:active`.
    #[serde(rename = "f:active")]
    pub active: Present,
}

/// The union of the spec fields classification reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub(crate) struct RawSpec<S = String> {
    /// TrainJob: `spec.suspend`.
    pub suspend: Flag,
    /// TrainJob: `spec.managedBy`.
    pub managed_by: Text<S>,
    /// TrainJob: `spec.runtimeRef`.
    pub runtime_ref: Obj<TrainJobRuntimeRef<S>>,
    /// Workload: `spec.active`.
    pub active: Flag,
    /// Pod: `spec.nodeName`.
    pub node_name: Text<S>,
    /// Node: `spec.taints`.
    pub taints: List<Taint<S>>,
}

/// A TrainJob's `spec.runtimeRef`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "S: FromJson"))]
pub struct TrainJobRuntimeRef<S = String> {
    /// The runtime's kind (the API's default is `ClusterTrainingRuntime`).
    pub kind: Text<S>,
    /// The runtime's name.
    pub name: Text<S>,
}

/// A Node's taint.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub struct Taint<S = String> {
    /// The key.
    pub key: Text<S>,
    /// The effect.
    pub effect: Text<S>,
    /// When it was added.
    pub time_added: Text<S>,
}

/// The union of the status fields classification reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub(crate) struct RawStatus<S = String> {
    /// Every kind: `status.conditions`.
    pub conditions: List<Condition<S>>,
    /// Pod: `status.phase`.
    pub phase: Text<S>,
    /// Pod: `status.containerStatuses`.
    pub container_statuses: List<ContainerStatus<S>>,
    /// Workload: `status.admissionChecks`.
    pub admission_checks: List<AdmissionCheck<S>>,
    /// JobSet: `status.replicatedJobsStatus`.
    pub replicated_jobs_status: List<ReplicatedJobStatus<S>>,
}

/// One condition of any kind.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub struct Condition<S = String> {
    /// The type.
    #[serde(rename = "type")]
    pub type_: Text<S>,
    /// `True`, `False` or `Unknown`.
    pub status: Text<S>,
    /// The reason.
    pub reason: Text<S>,
    /// The message.
    pub message: Text<S>,
    /// When the status last changed.
    pub last_transition_time: Text<S>,
}

impl<S: Str> Condition<S> {
    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status.get() == Some("True")
    }
}

/// One container's status.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub struct ContainerStatus<S = String> {
    /// The container's name.
    pub name: Text<S>,
    /// Its current state: held inline (two pointers), the waiting and terminated
    /// states within boxed, as most containers run and a termination held inline would
    /// cost every one of them its size.
    pub state: Obj<ContainerState<S>>,
    /// Its previous state.
    pub last_state: Obj<ContainerState<S>>,
}

/// A container state: waiting, running or terminated.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "S: FromJson"))]
pub struct ContainerState<S = String> {
    /// Waiting, with why.
    pub waiting: Obj<Box<Waiting<S>>>,
    /// Terminated, with how.
    pub terminated: Obj<Box<Terminated<S>>>,
}

/// `state.waiting`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "S: FromJson"))]
pub struct Waiting<S = String> {
    /// Why it waits.
    pub reason: Text<S>,
    /// More words.
    pub message: Text<S>,
}

/// `state.terminated`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson"))]
pub struct Terminated<S = String> {
    /// The exit code.
    pub exit_code: Int,
    /// The reason (`OOMKilled`, `Error`, `StartError`, ...).
    pub reason: Text<S>,
    /// The message.
    pub message: Text<S>,
    /// When it finished.
    pub finished_at: Text<S>,
}

/// One entry of a JobSet's `status.replicatedJobsStatus`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "S: FromJson"))]
pub struct ReplicatedJobStatus<S = String> {
    /// The ReplicatedJob's name.
    pub name: Text<S>,
    /// How many of its Jobs JobSet counts active (lagging the pods' going).
    pub active: Int,
}

/// One entry of a Workload's `status.admissionChecks`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "S: FromJson"))]
pub struct AdmissionCheck<S = String> {
    /// The check's name.
    pub name: Text<S>,
    /// `Pending`, `Ready`, `Retry` or `Rejected`.
    pub state: Text<S>,
    /// The controller's words.
    pub message: Text<S>,
}
