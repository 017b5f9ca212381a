//! The kinds the adapter reads and writes, one row each: group, version, plural, and
//! whether the kind lives in a namespace. Groups, versions and the model's kinds are the
//! model's (`dispatch_kf_model::keys`); plurals and scope are the apiserver's concern.

use dispatch_kf_model::keys;
use kube::discovery::ApiResource;

/// One kind of object the adapter talks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource {
    /// The kind, as in `kind:`.
    pub kind: &'static str,
    /// The API group; empty for core.
    pub group: &'static str,
    /// The version the adapter speaks.
    pub version: &'static str,
    /// The resource's plural, as in URLs.
    pub plural: &'static str,
    /// Whether objects of the kind live in a namespace.
    pub namespaced: bool,
}

impl Resource {
    /// `<group>/<version>`, or the version alone for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// kube's description of the kind, for `Api<DynamicObject>`.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            api_version: self.api_version(),
            kind: self.kind.to_owned(),
            plural: self.plural.to_owned(),
        }
    }
}

const fn row(
    kind: &'static str,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> Resource {
    Resource { kind, group, version, plural, namespaced }
}

/// Kubeflow Trainer's TrainJob.
pub const TRAIN_JOB: Resource =
    row(keys::KIND_TRAIN_JOB, keys::TRAINER_GROUP, keys::TRAINER_VERSION, "trainjobs", true);
/// A namespaced Trainer runtime; runtime copies are of this kind.
pub const TRAINING_RUNTIME: Resource = row(
    keys::KIND_TRAINING_RUNTIME,
    keys::TRAINER_GROUP,
    keys::TRAINER_VERSION,
    "trainingruntimes",
    true,
);
/// A cluster-wide Trainer runtime.
pub const CLUSTER_TRAINING_RUNTIME: Resource = row(
    keys::KIND_CLUSTER_TRAINING_RUNTIME,
    keys::TRAINER_GROUP,
    keys::TRAINER_VERSION,
    "clustertrainingruntimes",
    false,
);
/// JobSet, which the Trainer makes for each TrainJob.
pub const JOB_SET: Resource =
    row("JobSet", keys::JOBSET_GROUP, keys::JOBSET_VERSION, "jobsets", true);
/// Kueue's Workload, read at v1beta2.
pub const WORKLOAD: Resource =
    row("Workload", keys::KUEUE_GROUP, keys::KUEUE_VERSION, "workloads", true);
/// Kueue's LocalQueue.
pub const LOCAL_QUEUE: Resource =
    row("LocalQueue", keys::KUEUE_GROUP, keys::KUEUE_VERSION, "localqueues", true);
/// Kueue's ClusterQueue.
pub const CLUSTER_QUEUE: Resource =
    row("ClusterQueue", keys::KUEUE_GROUP, keys::KUEUE_VERSION, "clusterqueues", false);
/// Kueue's AdmissionCheck.
pub const ADMISSION_CHECK: Resource =
    row("AdmissionCheck", keys::KUEUE_GROUP, keys::KUEUE_VERSION, "admissionchecks", false);
/// The gate controller's Lease.
pub const LEASE: Resource = row("Lease", "coordination.k8s.io", "v1", "leases", true);
/// The batch Jobs JobSet makes, one per replicated job replica.
pub const JOB: Resource = row("Job", "batch", "v1", "jobs", true);
/// Pods.
pub const POD: Resource = row("Pod", "", "v1", "pods", true);
/// Nodes.
pub const NODE: Resource = row("Node", "", "v1", "nodes", false);

/// Events, as the cause controller creates them (not in [`ALL`]: the adapter itself
/// neither reads nor writes them).
pub const EVENT: Resource = row("Event", "events.k8s.io", "v1", "events", true);

/// Every kind, for discovery checks and permissions.
pub const ALL: [Resource; 12] = [
    TRAIN_JOB,
    TRAINING_RUNTIME,
    CLUSTER_TRAINING_RUNTIME,
    JOB_SET,
    WORKLOAD,
    LOCAL_QUEUE,
    CLUSTER_QUEUE,
    ADMISSION_CHECK,
    LEASE,
    JOB,
    POD,
    NODE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_are_group_slash_version_or_the_core_version() {
        assert_eq!(TRAIN_JOB.api_version(), "trainer.kubeflow.org/v1alpha1");
        assert_eq!(WORKLOAD.api_version(), "kueue.x-k8s.io/v1beta2");
        assert_eq!(POD.api_version(), "v1");
        assert_eq!(JOB_SET.api_resource().plural, "jobsets");
    }
}
