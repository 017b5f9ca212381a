//! One view per kind of what classification reads: [`TrainJob`], [`JobSet`],
//! [`Workload`], [`Pod`], [`Node`] and the runtime copy ([`RuntimeCopy`]), split out of a
//! [`RawObject`] by its `kind`.

use crate::lenient::{Flag, Text};
use crate::object::{
    AdmissionCheck, Condition, ContainerStatus, Meta, RawObject, RuntimeRef, Taint,
};

/// What classification reads of a TrainJob.
#[derive(Clone, Debug, Default)]
pub struct TrainJob {
    /// Its metadata.
    pub meta: Meta,
    /// `spec.suspend`.
    pub suspend: Flag,
    /// `spec.managedBy`.
    pub managed_by: Text,
    /// `spec.runtimeRef`, when it is an object.
    pub runtime_ref: Option<RuntimeRef>,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
}

/// What classification reads of a JobSet.
#[derive(Clone, Debug, Default)]
pub struct JobSet {
    /// Its metadata.
    pub meta: Meta,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
}

/// What classification reads of a Kueue Workload.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    /// Its metadata.
    pub meta: Meta,
    /// `spec.active` (absent means true).
    pub active: Flag,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
    /// `status.admissionChecks`.
    pub admission_checks: Vec<AdmissionCheck>,
}

/// What classification reads of a pod, live or captured.
#[derive(Clone, Debug, Default)]
pub struct Pod {
    /// Its metadata.
    pub meta: Meta,
    /// `spec.nodeName`.
    pub node_name: Text,
    /// `status.phase`.
    pub phase: Text,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
    /// `status.containerStatuses`.
    pub container_statuses: Vec<ContainerStatus>,
}

impl Pod {
    /// Whether the pod has finished (`Succeeded` or `Failed`).
    pub fn is_terminal(&self) -> bool {
        matches!(self.phase.get(), Some("Succeeded" | "Failed"))
    }

    /// The status of the container named `node`, the trainer step's.
    pub fn node_container(&self) -> Option<&ContainerStatus> {
        self.container_statuses.iter().find(|c| c.name.get() == Some(crate::keys::NODE_CONTAINER))
    }
}

/// What classification reads of a Node.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// Its metadata.
    pub meta: Meta,
    /// `spec.taints`.
    pub taints: Vec<Taint>,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
}

/// What classification reads of a runtime copy (a namespaced TrainingRuntime).
#[derive(Clone, Debug, Default)]
pub struct RuntimeCopy {
    /// Its metadata.
    pub meta: Meta,
}

/// One object of a kind classification reads, or another kind it skips.
#[derive(Clone, Debug)]
pub enum View {
    /// A TrainJob.
    TrainJob(TrainJob),
    /// A JobSet.
    JobSet(JobSet),
    /// A Workload.
    Workload(Workload),
    /// A pod.
    Pod(Pod),
    /// A Node.
    Node(Node),
    /// A TrainingRuntime.
    RuntimeCopy(RuntimeCopy),
    /// Any other kind: not read.
    Other,
}

impl From<RawObject> for View {
    fn from(raw: RawObject) -> View {
        let meta = raw.metadata.0.unwrap_or_default();
        let spec = raw.spec.0.unwrap_or_default();
        let status = raw.status.0.unwrap_or_default();
        match raw.kind.get() {
            Some("TrainJob") => View::TrainJob(TrainJob {
                meta,
                suspend: spec.suspend,
                managed_by: spec.managed_by,
                runtime_ref: spec.runtime_ref.0,
                conditions: status.conditions.0,
            }),
            Some("JobSet") => View::JobSet(JobSet { meta, conditions: status.conditions.0 }),
            Some("Workload") => View::Workload(Workload {
                meta,
                active: spec.active,
                conditions: status.conditions.0,
                admission_checks: status.admission_checks.0,
            }),
            Some("Pod") => View::Pod(Pod {
                meta,
                node_name: spec.node_name,
                phase: status.phase,
                conditions: status.conditions.0,
                container_statuses: status.container_statuses.0,
            }),
            Some("Node") => {
                View::Node(Node { meta, taints: spec.taints.0, conditions: status.conditions.0 })
            }
            Some("TrainingRuntime") => View::RuntimeCopy(RuntimeCopy { meta }),
            _ => View::Other,
        }
    }
}

/// The condition of type `kind` (the last one, should there be several).
pub fn condition<'a>(conditions: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    conditions.iter().rev().find(|c| c.type_.get() == Some(kind))
}

/// The condition of type `kind` when its status is `True`.
pub fn true_condition<'a>(conditions: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    condition(conditions, kind).filter(|c| c.is_true())
}
