//! What the client's tests against the simulated cluster share.

use dispatch_kf_client::resources::Resource;

/// ConfigMaps: a kind the adapter never reads, for tests of the client alone.
pub(crate) const CONFIG_MAP: Resource = Resource {
    kind: "ConfigMap",
    group: "",
    version: "v1",
    plural: "configmaps",
    namespaced: true,
};
