//! The kinds the adapter reads and writes, one row each: group, version, plural, and
//! whether the kind lives in a namespace.

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
    row("TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs", true);
/// A namespaced Trainer runtime; runtime copies are of this kind.
pub const TRAINING_RUNTIME: Resource =
    row("TrainingRuntime", "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", true);
/// A cluster-wide Trainer runtime.
pub const CLUSTER_TRAINING_RUNTIME: Resource = row(
    "ClusterTrainingRuntime",
    "trainer.kubeflow.org",
    "v1alpha1",
    "clustertrainingruntimes",
    false,
);
/// JobSet, which the Trainer makes for each TrainJob.
pub const JOB_SET: Resource = row("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", true);
/// Kueue's Workload, read at v1beta2.
pub const WORKLOAD: Resource = row("Workload", "kueue.x-k8s.io", "v1beta2", "workloads", true);
/// Kueue's LocalQueue.
pub const LOCAL_QUEUE: Resource =
    row("LocalQueue", "kueue.x-k8s.io", "v1beta2", "localqueues", true);
/// Kueue's ClusterQueue.
pub const CLUSTER_QUEUE: Resource =
    row("ClusterQueue", "kueue.x-k8s.io", "v1beta2", "clusterqueues", false);
/// Kueue's AdmissionCheck.
pub const ADMISSION_CHECK: Resource =
    row("AdmissionCheck", "kueue.x-k8s.io", "v1beta2", "admissionchecks", false);
/// The gate controller's Lease.
pub const LEASE: Resource = row("Lease", "coordination.k8s.io", "v1", "leases", true);
/// Pods.
pub const POD: Resource = row("Pod", "", "v1", "pods", true);
/// Nodes.
pub const NODE: Resource = row("Node", "", "v1", "nodes", false);

/// Every kind, for discovery checks and permissions.
pub const ALL: [Resource; 11] = [
    TRAIN_JOB,
    TRAINING_RUNTIME,
    CLUSTER_TRAINING_RUNTIME,
    JOB_SET,
    WORKLOAD,
    LOCAL_QUEUE,
    CLUSTER_QUEUE,
    ADMISSION_CHECK,
    LEASE,
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
