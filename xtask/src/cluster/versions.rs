//! The one table of versions the real control plane is built from: which upstream
//! module, at which version, gives which command. Everything else (the wrapper
//! `go.mod`s, the cache paths, docs/real-cluster.md's table) follows from it.
//!
//! They are the newest that the Go module proxy serves and that fit together: Trainer
//! v2.3.0, Kueue v0.19.2 and JobSet v0.12.0 are built against the Kubernetes 0.36 client
//! libraries, so the control plane is Kubernetes 1.36.

/// How an upstream command is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recipe {
    /// A wrapper module that requires `k8s.io/kubernetes` and replaces each staging
    /// module (`./staging/src/k8s.io/X`) with its published `v0.Y.Z`, as Go ignores a
    /// dependency's own replace lines.
    Kubernetes,
    /// A wrapper module that requires the module, then `go build` of the package. Not
    /// `go install PACKAGE@VERSION`: it refuses a module with replace lines (etcd's point
    /// at sibling folders), and it reads the module's version list, which the proxy
    /// here does not serve for every module (JobSet's).
    Wrapper,
}

/// One command of the control plane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Component {
    /// The command's name, as it is cached and started.
    pub(crate) command: &'static str,
    /// The Go module that holds it.
    pub(crate) module: &'static str,
    /// The module's version.
    pub(crate) version: &'static str,
    /// The main package.
    pub(crate) package: &'static str,
    /// How it is built.
    pub(crate) recipe: Recipe,
}

/// The Kubernetes release; its staging modules are `v0.<minor>.<patch>`.
pub(crate) const KUBERNETES: &str = "v1.36.3";

const fn kube(command: &'static str, package: &'static str) -> Component {
    Component {
        command,
        module: "k8s.io/kubernetes",
        version: KUBERNETES,
        package,
        recipe: Recipe::Kubernetes,
    }
}

/// Every command, in the order `cluster up` starts them.
pub(crate) const COMPONENTS: [Component; 8] = [
    Component {
        command: "etcd",
        module: "go.etcd.io/etcd/server/v3",
        version: "v3.6.16",
        package: "go.etcd.io/etcd/server/v3",
        recipe: Recipe::Wrapper,
    },
    kube("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
    kube("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    kube("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
    Component {
        command: "kwok",
        module: "sigs.k8s.io/kwok",
        version: "v0.8.0",
        package: "sigs.k8s.io/kwok/cmd/kwok",
        recipe: Recipe::Wrapper,
    },
    Component {
        command: "jobset",
        module: "sigs.k8s.io/jobset",
        version: "v0.12.0",
        package: "sigs.k8s.io/jobset",
        recipe: Recipe::Wrapper,
    },
    Component {
        command: "trainer-controller-manager",
        module: "github.com/kubeflow/trainer/v2",
        version: "v2.3.0",
        package: "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
        recipe: Recipe::Wrapper,
    },
    Component {
        command: "kueue",
        module: "sigs.k8s.io/kueue",
        version: "v0.19.2",
        package: "sigs.k8s.io/kueue/cmd/kueue",
        recipe: Recipe::Wrapper,
    },
];

/// The component that gives `command`.
pub(crate) fn component(command: &str) -> Component {
    COMPONENTS
        .into_iter()
        .find(|c| c.command == command)
        .unwrap_or_else(|| panic!("{command} is not in the versions table"))
}

/// The staging modules' version for a Kubernetes release: `v1.36.3` gives `v0.36.3`.
pub(crate) fn staging_version(kubernetes: &str) -> Option<String> {
    kubernetes.strip_prefix("v1.").map(|rest| format!("v0.{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_modules_follow_the_kubernetes_minor() {
        assert_eq!(staging_version("v1.36.3").as_deref(), Some("v0.36.3"));
        assert_eq!(staging_version("1.36.3"), None);
    }

    #[test]
    fn every_command_is_named_once() {
        for c in COMPONENTS {
            assert_eq!(COMPONENTS.iter().filter(|o| o.command == c.command).count(), 1);
            assert!(c.package.starts_with(c.module), "{c:?}");
        }
    }
}
