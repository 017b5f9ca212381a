//! The table the real control plane is built from: named stacks, each a set of upstream
//! versions that are released and tested together, with what each needs on top of the
//! common flags (an apiserver flag, a Kueue feature gate). Everything else (the wrapper
//! `go.mod`s, the cache paths, the arguments of each process, the tables of
//! docs/dev/real-cluster.md and docs/compatibility.md) follows from it.
//!
//! `current` is the default everywhere: Trainer v2.3.0, Kueue v0.19.2 and JobSet v0.12.0
//! are built against the Kubernetes 0.36 client libraries, so its control plane is
//! Kubernetes 1.36. `oldest` is the oldest set the adapter supports, `newest` the newest
//! Kubernetes the Go module proxy serves under the current controllers.

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

/// The upstream projects a stack gives a version of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Project {
    Etcd,
    Kubernetes,
    Kwok,
    JobSet,
    Trainer,
    Kueue,
}

/// Where a command of the control plane comes from; its version is the stack's.
#[derive(Clone, Copy, Debug)]
struct Source {
    command: &'static str,
    project: Project,
    module: &'static str,
    package: &'static str,
    recipe: Recipe,
}

const fn kube(command: &'static str, package: &'static str) -> Source {
    Source {
        command,
        project: Project::Kubernetes,
        module: "k8s.io/kubernetes",
        package,
        recipe: Recipe::Kubernetes,
    }
}

const fn wrapped(
    command: &'static str,
    project: Project,
    module: &'static str,
    package: &'static str,
) -> Source {
    Source { command, project, module, package, recipe: Recipe::Wrapper }
}

/// Every command, in the order `cluster up` starts them.
const SOURCES: [Source; 8] = [
    wrapped("etcd", Project::Etcd, "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3"),
    kube("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
    kube("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    kube("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
    wrapped("kwok", Project::Kwok, "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    wrapped("jobset", Project::JobSet, "sigs.k8s.io/jobset", "sigs.k8s.io/jobset"),
    wrapped(
        "trainer-controller-manager",
        Project::Trainer,
        "github.com/kubeflow/trainer/v2",
        "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
    ),
    wrapped("kueue", Project::Kueue, "sigs.k8s.io/kueue", "sigs.k8s.io/kueue/cmd/kueue"),
];

/// One command of a stack's control plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Whether the adapter supports a stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Support {
    /// Supported: `cargo xtask matrix` runs it unless told which stacks to run, and the
    /// e2e suite must pass on it.
    Supported,
    /// Kept to see the adapter refuse it: the matrix runs it only when named, and there
    /// checks that `preflight` and `start` refuse it in one line.
    Refused(Refusal),
}

/// How the adapter refuses a stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// Why, in a few words.
    pub(crate) why: &'static str,
    /// Whether only Kueue mode is refused; plain mode is then a stack of the table.
    pub(crate) kueue_only: bool,
    /// How the refusal's message begins, after `dispatch-kf: unsupported: `.
    pub(crate) words: &'static str,
}

/// A named set of versions, with what it needs beyond the flags every stack gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stack {
    /// The name `--stack` takes.
    pub(crate) name: &'static str,
    /// Why the stack is in the table, in a few words.
    pub(crate) about: &'static str,
    pub(crate) support: Support,
    /// The Kubernetes release; its staging modules are `v0.<minor>.<patch>`.
    pub(crate) kubernetes: &'static str,
    pub(crate) etcd: &'static str,
    pub(crate) kwok: &'static str,
    pub(crate) jobset: &'static str,
    pub(crate) trainer: &'static str,
    pub(crate) kueue: &'static str,
    /// Flags the kube-apiserver gets after the common ones.
    pub(crate) apiserver_flags: &'static [&'static str],
    /// Kueue feature gates (`Name=true`) after [`COMMON_KUEUE_FEATURE_GATES`].
    pub(crate) kueue_feature_gates: &'static [&'static str],
}

/// The JobSet feature gates a stack's JobSet runs with: every alpha restart feature its
/// release has, on, so that a runtime using one would run as a user's cluster with the
/// gate on runs it, and the adapter's refusal of it (runtime rule 8) is what stops it.
/// `InPlaceRestart` from v0.11, `RestartJob` from v0.12.
pub(crate) fn jobset_feature_gates(jobset: &str) -> &'static [&'static str] {
    match jobset {
        v if v.starts_with("v0.11.") => &["InPlaceRestart"],
        v if v.starts_with("v0.1") && !v.starts_with("v0.10.") => &["InPlaceRestart", "RestartJob"],
        _ => &[],
    }
}

/// The Kueue feature gates of every stack: no visibility API server, which would need
/// certificates at a fixed path of its own.
pub(crate) const COMMON_KUEUE_FEATURE_GATES: &[&str] = &["VisibilityOnDemand=false"];

/// The etcd and kwok every stack runs: kubeadm accepts an external etcd from 3.5.24 on
/// for every Kubernetes here (1.34 ships 3.6.5, 1.36 ships 3.6.8, 1.37 ships 3.7.0), and
/// kwok v0.8.0 plays kubelets of 1.34 to 1.37 alike.
const ETCD: &str = "v3.6.16";
const KWOK: &str = "v0.8.0";

/// The oldest releases the adapter supports; `oldest-ungated` is the same without Kueue's
/// feature gate.
const OLDEST: Stack = Stack {
    name: "oldest",
    about: "the oldest releases the adapter supports, as Kueue v0.17 was released with them",
    support: Support::Supported,
    kubernetes: "v1.34.4",
    etcd: ETCD,
    kwok: KWOK,
    jobset: "v0.11.1",
    trainer: "v2.2.1",
    kueue: "v0.17.0",
    apiserver_flags: &[],
    // Alpha and off by default before Kueue v0.19; the gate's admission needs it.
    kueue_feature_gates: &["AdmissionGatedBy=true"],
};

/// Every stack, the default first.
pub(crate) const STACKS: [Stack; 5] = [
    Stack {
        name: "current",
        about: "the newest Trainer, JobSet and Kueue, on the Kubernetes they are built against",
        support: Support::Supported,
        kubernetes: "v1.36.3",
        etcd: ETCD,
        kwok: KWOK,
        jobset: "v0.12.0",
        trainer: "v2.3.0",
        kueue: "v0.19.2",
        apiserver_flags: &[],
        kueue_feature_gates: &[],
    },
    OLDEST,
    Stack {
        name: "newest",
        about: "the newest Kubernetes under the current controllers",
        support: Support::Supported,
        kubernetes: "v1.37.2",
        etcd: ETCD,
        kwok: KWOK,
        jobset: "v0.12.0",
        trainer: "v2.3.0",
        kueue: "v0.19.2",
        // From 1.37 the default endpoint reconciler refuses an advertise address in
        // 127.0.0.0/8; with none, the `kubernetes` Service's endpoints are not kept.
        apiserver_flags: &["--endpoint-reconciler-type=none"],
        kueue_feature_gates: &[],
    },
    Stack {
        name: "trainer-v2.1",
        about: "Trainer v2.1.0 with the JobSet and Kubernetes it is built against",
        support: Support::Refused(Refusal {
            why: "Trainer v2.1's TrainJob has no spec.runtimePatches, which the adapter writes its gate and holds into",
            kueue_only: false,
            words: dispatch_kf_model::internal::served::TRAINER_WITHOUT_RUNTIME_PATCHES,
        }),
        kubernetes: "v1.34.4",
        etcd: ETCD,
        kwok: KWOK,
        jobset: "v0.10.1",
        trainer: "v2.1.0",
        // No Kueue release for Trainer v2.1 (v0.15, v0.16) is served; v0.17 writes
        // runtimePatches, so Kueue mode cannot work here either.
        kueue: "v0.17.0",
        apiserver_flags: &[],
        kueue_feature_gates: &["AdmissionGatedBy=true"],
    },
    Stack {
        name: "oldest-ungated",
        about: "the oldest stack with Kueue's AdmissionGatedBy feature gate off, as Kueue v0.17 is released",
        support: Support::Refused(Refusal {
            why: "Kueue v0.17 and v0.18 honour kueue.x-k8s.io/admission-gated-by only with the AdmissionGatedBy feature gate",
            kueue_only: true,
            words: dispatch_kf_model::internal::kueue::KUEUE_DOES_NOT_GATE,
        }),
        kueue_feature_gates: &[],
        ..OLDEST
    },
];

/// The stack every command runs unless `--stack` says otherwise.
pub(crate) const DEFAULT_STACK: &str = "current";

impl Stack {
    /// The version of `project` in this stack.
    pub(crate) fn version(&self, project: Project) -> &'static str {
        match project {
            Project::Etcd => self.etcd,
            Project::Kubernetes => self.kubernetes,
            Project::Kwok => self.kwok,
            Project::JobSet => self.jobset,
            Project::Trainer => self.trainer,
            Project::Kueue => self.kueue,
        }
    }

    /// Every command of the stack, in the order `cluster up` starts them.
    pub(crate) fn components(&self) -> [Component; 8] {
        SOURCES.map(|s| Component {
            command: s.command,
            module: s.module,
            version: self.version(s.project),
            package: s.package,
            recipe: s.recipe,
        })
    }

    /// The component that gives `command`.
    pub(crate) fn component(&self, command: &str) -> Component {
        self.components()
            .into_iter()
            .find(|c| c.command == command)
            .unwrap_or_else(|| panic!("{command} is not in the versions table"))
    }

    /// The versions, one `project version` a line's worth, as results are recorded
    /// against them: a result of other versions is not this stack's.
    pub(crate) fn versions(&self) -> Vec<String> {
        let projects = [
            ("kubernetes", Project::Kubernetes),
            ("etcd", Project::Etcd),
            ("kwok", Project::Kwok),
            ("jobset", Project::JobSet),
            ("trainer", Project::Trainer),
            ("kueue", Project::Kueue),
        ];
        projects.iter().map(|(name, p)| format!("{name} {}", self.version(*p))).collect()
    }
}

/// The stack called `name`; an unknown name is refused listing the known ones.
pub(crate) fn stack(name: &str) -> Result<&'static Stack, String> {
    STACKS.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = STACKS.iter().map(|s| s.name).collect();
        format!("unknown stack {name:?}; the stacks are {}", known.join(", "))
    })
}

/// The default stack.
pub(crate) fn default_stack() -> &'static Stack {
    stack(DEFAULT_STACK).expect("the default stack is in the table")
}

/// Takes `--stack NAME` (or `--stack=NAME`) out of `args`: the stack named, if one
/// was, and the other arguments in their order.
pub(crate) fn take_stack(args: &[String]) -> Result<(Option<&'static Stack>, Vec<String>), String> {
    let mut found = None;
    let mut rest = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let name = match arg.strip_prefix("--stack") {
            Some("") => args.next().ok_or("--stack needs a stack's name")?.as_str(),
            Some(inline) => match inline.strip_prefix('=') {
                Some(name) => name,
                None => {
                    rest.push(arg.clone());
                    continue;
                }
            },
            None => {
                rest.push(arg.clone());
                continue;
            }
        };
        if found.is_some() {
            return Err("--stack is given twice".into());
        }
        found = Some(stack(name)?);
    }
    Ok((found, rest))
}

/// The staging modules' version for a Kubernetes release: `v1.36.3` gives `v0.36.3`.
pub(crate) fn staging_version(kubernetes: &str) -> Option<String> {
    kubernetes.strip_prefix("v1.").map(|rest| format!("v0.{rest}"))
}

#[cfg(test)]
mod tests {

    #[test]
    fn each_jobset_runs_with_the_restart_features_its_release_has() {
        assert_eq!(jobset_feature_gates("v0.10.1"), [] as [&str; 0]);
        assert_eq!(jobset_feature_gates("v0.11.1"), ["InPlaceRestart"]);
        assert_eq!(jobset_feature_gates("v0.12.0"), ["InPlaceRestart", "RestartJob"]);
    }

    use super::*;
    use crate::run::args;

    #[test]
    fn staging_modules_follow_each_stacks_kubernetes_minor() {
        assert_eq!(staging_version("v1.36.3").as_deref(), Some("v0.36.3"));
        assert_eq!(staging_version("1.36.3"), None);
        for stack in &STACKS {
            let staging = staging_version(stack.kubernetes).expect("v1.Y.Z");
            assert_eq!(
                staging.trim_start_matches("v0."),
                stack.kubernetes.trim_start_matches("v1.")
            );
        }
    }

    #[test]
    fn every_stack_names_each_command_once() {
        for stack in &STACKS {
            let components = stack.components();
            for c in components {
                let same = components.iter().filter(|o| o.command == c.command).count();
                assert_eq!(same, 1, "{}: {c:?}", stack.name);
                assert!(c.package.starts_with(c.module), "{c:?}");
                assert!(c.version.starts_with('v'), "{}: {c:?}", stack.name);
            }
            let kube = components.iter().filter(|c| c.recipe == Recipe::Kubernetes);
            assert!(
                kube.clone().count() == 3 && kube.clone().all(|c| c.version == stack.kubernetes)
            );
        }
    }

    #[test]
    fn stacks_have_distinct_names_and_current_is_the_default() {
        for s in &STACKS {
            assert_eq!(STACKS.iter().filter(|o| o.name == s.name).count(), 1, "{}", s.name);
        }
        assert_eq!(default_stack().name, "current");
        assert_eq!(STACKS[0].name, DEFAULT_STACK, "the default comes first in the docs");
        assert_eq!(default_stack().support, Support::Supported);
    }

    #[test]
    fn an_unknown_stack_is_refused_naming_the_known_ones() {
        let err = stack("bleeding").unwrap_err();
        assert!(err.contains("\"bleeding\""), "{err}");
        for s in &STACKS {
            assert!(err.contains(s.name), "{err}");
        }
    }

    #[test]
    fn stack_is_taken_in_either_spelling_and_the_rest_kept_in_order() {
        let (stack, rest) =
            take_stack(&args(&["--kueue", "--stack", "oldest", "--nodes=4"])).unwrap();
        assert_eq!(stack.map(|s| s.name), Some("oldest"));
        assert_eq!(rest, args(&["--kueue", "--nodes=4"]));
        let (stack, rest) = take_stack(&args(&["--stack=newest"])).unwrap();
        assert_eq!((stack.map(|s| s.name), rest.len()), (Some("newest"), 0));
        let (stack, rest) = take_stack(&args(&["--stacked"])).unwrap();
        assert_eq!((stack, rest), (None, args(&["--stacked"])));
    }

    #[test]
    fn stack_without_a_known_name_or_twice_is_refused() {
        for bad in [&["--stack"][..], &["--stack", "nope"], &["--stack=current", "--stack=oldest"]]
        {
            assert!(take_stack(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
