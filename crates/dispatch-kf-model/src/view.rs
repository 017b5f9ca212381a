//! One view per kind of what classification reads: [`TrainJob`], [`JobSet`],
//! [`Workload`], [`Pod`], [`Node`] and the runtime copy ([`RuntimeCopy`]), split out of a
//! `RawObject` by its `kind`.

use crate::object::{RawObject, ViewKind};

// What a view is made of: its lenient fields (absent unless the JSON has the right
// shape) and the parts of an object it keeps.
pub use crate::lenient::{Flag, FromJson, Int, List, Obj, Shared, Str, StrMap, Text};
pub use crate::object::{
    AdmissionCheck, Condition, ContainerState, ContainerStatus, JobTracking, LastSetters, Meta,
    OwnerRef, ReplicatedJobStatus, SpecField, Taint, Terminated, TrainJobRuntimeRef, Waiting,
};

/// What classification reads of a TrainJob.
#[derive(Clone, Debug, Default)]
pub struct TrainJob<S = String> {
    /// Its metadata.
    pub meta: Meta<S>,
    /// `spec.suspend`.
    pub suspend: Flag,
    /// `spec.managedBy`.
    pub managed_by: Text<S>,
    /// `spec.runtimeRef`, when it is an object.
    pub runtime_ref: Option<TrainJobRuntimeRef<S>>,
    /// `status.conditions`.
    pub conditions: Box<[Condition<S>]>,
}

/// What classification reads of a JobSet.
#[derive(Clone, Debug, Default)]
pub struct JobSet<S = String> {
    /// Its metadata.
    pub meta: Meta<S>,
    /// `status.conditions`.
    pub conditions: Box<[Condition<S>]>,
    /// `status.replicatedJobsStatus`.
    pub replicated_jobs: Box<[ReplicatedJobStatus<S>]>,
}

/// What classification reads of a Kueue Workload.
#[derive(Clone, Debug, Default)]
pub struct Workload<S = String> {
    /// Its metadata.
    pub meta: Meta<S>,
    /// `spec.active` (absent means true).
    pub active: Flag,
    /// `status.conditions`.
    pub conditions: Box<[Condition<S>]>,
    /// `status.admissionChecks`.
    pub admission_checks: Box<[AdmissionCheck<S>]>,
}

/// What classification reads of a pod, live or captured.
#[derive(Clone, Debug, Default)]
pub struct Pod<S = String> {
    /// Its metadata.
    pub meta: Meta<S>,
    /// `spec.nodeName`.
    pub node_name: Text<S>,
    /// `status.phase`.
    pub phase: Text<S>,
    /// `status.conditions`.
    pub conditions: Box<[Condition<S>]>,
    /// `status.containerStatuses`.
    pub container_statuses: Box<[ContainerStatus<S>]>,
}

impl<S: Str> Pod<S> {
    /// Whether the pod has finished (`Succeeded` or `Failed`).
    pub fn is_terminal(&self) -> bool {
        matches!(self.phase.get(), Some("Succeeded" | "Failed"))
    }

    /// The status of the container named `node`, the trainer step's.
    pub(crate) fn node_container(&self) -> Option<&ContainerStatus<S>> {
        self.container_statuses.iter().find(|c| c.name.get() == Some(crate::keys::NODE_CONTAINER))
    }
}

/// What classification reads of a Node.
#[derive(Clone, Debug, Default)]
pub struct Node<S = String> {
    /// Its metadata.
    pub meta: Meta<S>,
    /// `spec.taints`.
    pub taints: Box<[Taint<S>]>,
    /// `status.conditions`.
    pub conditions: Box<[Condition<S>]>,
}

/// What classification reads of a runtime copy (a namespaced TrainingRuntime).
#[derive(Clone, Debug, Default)]
pub struct RuntimeCopy<S = String> {
    /// Its metadata.
    pub meta: Meta<S>,
}

/// One object of a kind classification reads, or another kind it skips.
#[derive(Clone, Debug)]
pub enum View<S = String> {
    /// A TrainJob.
    TrainJob(TrainJob<S>),
    /// A JobSet.
    JobSet(JobSet<S>),
    /// A Workload.
    Workload(Workload<S>),
    /// A pod.
    Pod(Pod<S>),
    /// A Node.
    Node(Node<S>),
    /// A TrainingRuntime.
    RuntimeCopy(RuntimeCopy<S>),
    /// Any other kind: only its metadata is read.
    Other(Meta<S>),
}

impl<S> View<S> {
    /// The object's metadata.
    pub fn meta(&self) -> &Meta<S> {
        match self {
            View::TrainJob(TrainJob { meta, .. })
            | View::JobSet(JobSet { meta, .. })
            | View::Workload(Workload { meta, .. })
            | View::Pod(Pod { meta, .. })
            | View::Node(Node { meta, .. })
            | View::RuntimeCopy(RuntimeCopy { meta })
            | View::Other(meta) => meta,
        }
    }
}

impl<S: Str> From<RawObject<S>> for View<S> {
    fn from(raw: RawObject<S>) -> View<S> {
        let meta = raw.metadata.0.unwrap_or_default();
        let spec = raw.spec.0.unwrap_or_default();
        let status = raw.status.0.unwrap_or_default();
        match raw.kind {
            ViewKind::TrainJob => View::TrainJob(TrainJob {
                meta,
                suspend: spec.suspend,
                managed_by: spec.managed_by,
                runtime_ref: spec.runtime_ref.0,
                conditions: status.conditions.0,
            }),
            ViewKind::JobSet => View::JobSet(JobSet {
                meta,
                conditions: status.conditions.0,
                replicated_jobs: status.replicated_jobs_status.0,
            }),
            ViewKind::Workload => View::Workload(Workload {
                meta,
                active: spec.active,
                conditions: status.conditions.0,
                admission_checks: status.admission_checks.0,
            }),
            ViewKind::Pod => View::Pod(Pod {
                meta,
                node_name: spec.node_name,
                phase: status.phase,
                conditions: status.conditions.0,
                container_statuses: status.container_statuses.0,
            }),
            ViewKind::Node => {
                View::Node(Node { meta, taints: spec.taints.0, conditions: status.conditions.0 })
            }
            ViewKind::TrainingRuntime => View::RuntimeCopy(RuntimeCopy { meta }),
            ViewKind::Other | ViewKind::Absent => View::Other(meta),
        }
    }
}

/// The condition of type `kind` (the last one, should there be several).
pub(crate) fn condition<'a, S: Str>(
    conditions: &'a [Condition<S>],
    kind: &str,
) -> Option<&'a Condition<S>> {
    conditions.iter().rev().find(|c| c.type_.get() == Some(kind))
}

/// The condition of type `kind` when its status is `True`.
pub(crate) fn true_condition<'a, S: Str>(
    conditions: &'a [Condition<S>],
    kind: &str,
) -> Option<&'a Condition<S>> {
    condition(conditions, kind).filter(|c| c.is_true())
}
