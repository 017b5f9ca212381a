//! The resources the simulated apiserver serves: one row per resource, as the real
//! apiserver's discovery documents list them (core/v1, Trainer v1alpha1, JobSet
//! v1alpha2, Kueue v1beta2, coordination/v1, authorization/v1, batch/v1, events/v1; see
//! `docs/dev/sim.md#the-apiserver`).

/// One served resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// API group; empty for the core group.
    pub group: &'static str,
    /// API version within the group.
    pub version: &'static str,
    /// Plural resource name, as in URLs.
    pub plural: &'static str,
    /// Singular resource name, as discovery lists it.
    pub singular: &'static str,
    /// Object kind.
    pub kind: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether the resource has a `/status` subresource (status ignored on the main
    /// resource, spec ignored on `/status`).
    pub status: bool,
    /// The verbs discovery advertises.
    pub verbs: &'static [&'static str],
}

const ALL: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
/// Namespaces are not served `deletecollection` (the namespace registry has none).
const NO_COLLECTION: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];
const CREATE_ONLY: &[&str] = &["create"];

/// Every served resource. Anything else is answered `404 page not found`.
pub const RESOURCES: &[Resource] = &[
    r("", "v1", "pods", "pod", "Pod", true, true, ALL),
    r("", "v1", "nodes", "node", "Node", false, true, ALL),
    r("", "v1", "namespaces", "namespace", "Namespace", false, true, NO_COLLECTION),
    r("", "v1", "configmaps", "configmap", "ConfigMap", true, false, ALL),
    r("", "v1", "events", "event", "Event", true, false, ALL),
    r("events.k8s.io", "v1", "events", "event", "Event", true, false, ALL),
    r("trainer.kubeflow.org", "v1alpha1", "trainjobs", "trainjob", "TrainJob", true, true, ALL),
    r(
        "trainer.kubeflow.org",
        "v1alpha1",
        "trainingruntimes",
        "trainingruntime",
        "TrainingRuntime",
        true,
        false,
        ALL,
    ),
    r(
        "trainer.kubeflow.org",
        "v1alpha1",
        "clustertrainingruntimes",
        "clustertrainingruntime",
        "ClusterTrainingRuntime",
        false,
        false,
        ALL,
    ),
    r("jobset.x-k8s.io", "v1alpha2", "jobsets", "jobset", "JobSet", true, true, ALL),
    r("kueue.x-k8s.io", "v1beta2", "workloads", "workload", "Workload", true, true, ALL),
    r("kueue.x-k8s.io", "v1beta2", "localqueues", "localqueue", "LocalQueue", true, true, ALL),
    r(
        "kueue.x-k8s.io",
        "v1beta2",
        "clusterqueues",
        "clusterqueue",
        "ClusterQueue",
        false,
        true,
        ALL,
    ),
    r(
        "kueue.x-k8s.io",
        "v1beta2",
        "admissionchecks",
        "admissioncheck",
        "AdmissionCheck",
        false,
        true,
        ALL,
    ),
    r(
        "kueue.x-k8s.io",
        "v1beta2",
        "resourceflavors",
        "resourceflavor",
        "ResourceFlavor",
        false,
        false,
        ALL,
    ),
    r(
        "kueue.x-k8s.io",
        "v1beta2",
        "workloadpriorityclasses",
        "workloadpriorityclass",
        "WorkloadPriorityClass",
        false,
        false,
        ALL,
    ),
    r("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, false, ALL),
    r(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        "SelfSubjectAccessReview",
        false,
        false,
        CREATE_ONLY,
    ),
    r("batch", "v1", "jobs", "job", "Job", true, true, ALL),
];

#[allow(clippy::too_many_arguments)]
const fn r(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    status: bool,
    verbs: &'static [&'static str],
) -> Resource {
    Resource { group, version, plural, singular, kind, namespaced, status, verbs }
}

impl Resource {
    /// `apiVersion` of this resource's objects (`v1` or `group/version`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` (or `plural` for core), as apiserver messages name a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Kind.group` (or `Kind` for core), as "is invalid" messages name a kind.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// The group-version string (`v1` for core, `group/version` otherwise).
    pub fn group_version(&self) -> String {
        self.api_version()
    }
}

/// The index of a resource in [`RESOURCES`].
pub(crate) type ResId = usize;

/// Finds a resource by group, version and plural.
pub(crate) fn find(group: &str, version: &str, plural: &str) -> Option<ResId> {
    RESOURCES.iter().position(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Finds a resource by its plural name alone: plural names are unique here but for
/// `events`, where core's comes first. A real apiserver keeps core and events.k8s.io
/// Events in one store; the sim keeps them apart (nothing it runs reads both).
pub fn by_plural(plural: &str) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.plural == plural)
}

/// Finds a resource by `apiVersion` and kind, as owner references name them.
pub(crate) fn by_kind(api_version: &str, kind: &str) -> Option<ResId> {
    RESOURCES.iter().position(|r| r.kind == kind && r.api_version() == api_version)
}

/// The index of a resource known by plural name; resources here are static, so a
/// missing one is a programming error caught by every test.
pub(crate) fn id(plural: &str) -> ResId {
    RESOURCES.iter().position(|r| r.plural == plural).unwrap_or(0)
}
