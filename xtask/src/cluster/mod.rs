//! `cargo xtask cluster up|gate|events|down|build`: a real Kubernetes control plane on
//! localhost, built from upstream's Go modules at the versions of one stack
//! (`versions.rs`, `--stack`, `current` by default): etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler, kwok playing the nodes' kubelets, and the
//! JobSet, Trainer and (with `--kueue`) Kueue controllers with their CRDs and webhooks.
//! docs/dev/real-cluster.md says what runs, how to start it and where its logs are.

mod build;
mod components;
mod files;
mod manifests;
mod pki;
mod process;
mod versions;

pub(crate) use build::cache_dir;
pub(crate) use versions::{
    COMMON_KUEUE_FEATURE_GATES, STACKS, Stack, Support, default_stack, stack, take_stack,
};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::run;

use components::KUBECONFIG_NAME;

/// What `cluster up` was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Options {
    /// The versions to run, and what they need.
    pub(crate) stack: &'static Stack,
    /// Install Kueue, its queues and the readmission AdmissionCheck.
    pub(crate) kueue: bool,
    /// How many kwok nodes.
    pub(crate) nodes: u32,
    /// GPUs (`nvidia.com/gpu`) per node.
    pub(crate) gpus: u32,
    /// Where to copy the admin kubeconfig.
    pub(crate) kubeconfig_out: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options { stack: default_stack(), kueue: false, nodes: 4, gpus: 8, kubeconfig_out: None }
    }
}

const USAGE: &str = "usage: cargo xtask cluster <up [--stack NAME] [--kueue] [--nodes N] [--gpus G] [--kubeconfig-out FILE] | gate | events | down | build [--stack NAME] | kill|stop|freeze|thaw|restart PROCESS>";

/// `cargo xtask cluster ...`.
pub(crate) fn run(args: &[String]) -> run::Result {
    match (args.first().map(String::as_str), &args.get(1..).unwrap_or_default()) {
        (Some("up"), rest) => up(&parse_up(rest)?).map(|_| ()),
        (Some("down"), []) => down(),
        (Some("gate"), []) => GATE.start(),
        (Some("events"), []) => EVENTS.start(),
        (Some("build"), rest) => build::build_missing(parse_build(rest)?),
        (Some(verb), [name]) => match Fault::named(verb) {
            Some(fault) => fault.inflict(name),
            None => Err(USAGE.to_owned()),
        },
        _ => Err(USAGE.to_owned()),
    }
}

/// What can be done to one process of the running control plane (by the name it was
/// started as: `kube-apiserver`, `etcd`, `trainer`, `dispatch-kf-gate`, ...; its pid
/// file in `run/pids` names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// SIGKILL to its process group; it stays down.
    Kill,
    /// SIGTERM, as a rolling update stops a pod, and waited for until it has exited
    /// (SIGKILL after 15 s); it stays down.
    Stop,
    /// SIGSTOP: it holds its connections and answers nothing.
    Freeze,
    /// SIGCONT after a freeze.
    Thaw,
    /// Killed and started again as it was first started, and waited for until ready.
    Restart,
}

impl Fault {
    const NAMES: [(&str, Fault); 5] = [
        ("kill", Fault::Kill),
        ("stop", Fault::Stop),
        ("freeze", Fault::Freeze),
        ("thaw", Fault::Thaw),
        ("restart", Fault::Restart),
    ];

    fn named(verb: &str) -> Option<Fault> {
        Self::NAMES.iter().find(|(name, _)| *name == verb).map(|(_, fault)| *fault)
    }

    /// Does it to the process `name`.
    pub(crate) fn inflict(self, name: &str) -> run::Result {
        let dir = run_dir();
        match self {
            Fault::Kill => process::signal_named(&dir, name, "KILL").map(drop),
            Fault::Stop => match process::pid_of(&dir, name) {
                Some(pid) if process::alive(pid) => {
                    process::stop_one(&dir, name, Duration::from_secs(15));
                    Ok(())
                }
                _ => Err(format!("{name} is not running on this control plane")),
            },
            Fault::Freeze => process::signal_named(&dir, name, "STOP").map(drop),
            Fault::Thaw => process::signal_named(&dir, name, "CONT").map(drop),
            Fault::Restart => components::restart(&dir, name).map(drop),
        }
    }
}

/// The stack of `build [--stack NAME]`.
fn parse_build(args: &[String]) -> Result<&'static Stack, String> {
    match take_stack(args)? {
        (stack, rest) if rest.is_empty() => Ok(stack.unwrap_or_else(default_stack)),
        (_, rest) => Err(format!("unknown argument {:?}\n{USAGE}", rest[0])),
    }
}

fn parse_up(args: &[String]) -> Result<Options, String> {
    let (stack, args) = take_stack(args).map_err(|e| format!("{e}\n{USAGE}"))?;
    let mut options = Options { stack: stack.unwrap_or_else(default_stack), ..Options::default() };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| rest.next().cloned())
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        let number = |v: String| {
            v.parse::<u32>().map_err(|_| format!("{flag} takes a whole number, not {v:?}"))
        };
        match flag {
            "--kueue" if inline.is_none() => options.kueue = true,
            "--nodes" => options.nodes = number(value()?)?,
            "--gpus" => options.gpus = number(value()?)?,
            "--kubeconfig-out" => options.kubeconfig_out = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument {arg:?}\n{USAGE}")),
        }
    }
    if options.nodes < 3 {
        // With every node lost, the node lifecycle controller stops evicting; a node-loss
        // test needs healthy nodes beside the lost one (docs/dev/real-cluster.md).
        return Err("--nodes must be at least 3, so that one node can be lost while the others stay healthy".into());
    }
    Ok(options)
}

/// Where the running cluster keeps its certificates, pids, logs and etcd data.
pub(crate) fn run_dir() -> PathBuf {
    build::cache_dir().join("run")
}

/// The admin kubeconfig of the running control plane.
pub(crate) fn admin_kubeconfig() -> PathBuf {
    run_dir().join(KUBECONFIG_NAME)
}

/// The file in the run folder that names the stack the cluster runs.
const STACK_FILE: &str = "stack";

/// The stack of the running cluster, as `up` recorded it.
pub(crate) fn running_stack() -> Result<&'static Stack, String> {
    let file = run_dir().join(STACK_FILE);
    let name = std::fs::read_to_string(&file).map_err(|_| {
        format!(
            "no control plane is running ({} is missing): start one with cargo xtask cluster up",
            file.display()
        )
    })?;
    stack(name.trim())
}

/// Builds what is missing, starts the control plane and returns its admin kubeconfig.
pub(crate) fn up(options: &Options) -> Result<PathBuf, String> {
    let started = Instant::now();
    build::build_missing(options.stack)?;
    down()?;
    let dir = run_dir();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stack_file = dir.join(STACK_FILE);
    std::fs::write(&stack_file, format!("{}\n", options.stack.name))
        .map_err(|e| format!("{}: {e}", stack_file.display()))?;
    let kubeconfig = components::start_all(&dir, options)?;
    if let Some(out) = &options.kubeconfig_out {
        std::fs::copy(&kubeconfig, out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let shown = options.kubeconfig_out.as_deref().unwrap_or(&kubeconfig);
    eprintln!(
        "xtask: the control plane of stack {} is up in {:.0?}{}; kubeconfig {}; logs in {}",
        options.stack.name,
        started.elapsed(),
        if options.kueue { " with Kueue" } else { "" },
        shown.display(),
        dir.join("logs").display()
    );
    Ok(kubeconfig)
}

/// Stops every process `up` started and checks none is left.
pub(crate) fn down() -> run::Result {
    let killed = process::stop_all(&run_dir(), Duration::from_secs(15))?;
    if !killed.is_empty() {
        eprintln!("xtask: had to kill {} after 15 s", killed.join(", "));
    }
    // Nothing runs now; the rest of the run folder stays for a reader of its logs.
    let _ = std::fs::remove_file(run_dir().join(STACK_FILE));
    Ok(())
}

/// A controller of dispatch as this control plane runs it: built from its crate and
/// started as one more of its processes (so `down` stops it too), with a token of its
/// ServiceAccount and only the permissions its `deploy/` grants, which this applies
/// first (its namespace, ServiceAccount and RBAC; the rest of its kustomization is its
/// Deployment, which runs here as a local process). The e2e suite thereby proves they
/// are enough.
#[derive(Debug)]
pub(crate) struct Controller {
    /// Its crate and binary, and the process name of its first replica.
    pub(crate) binary: &'static str,
    /// Its kustomization's folder.
    deploy: &'static str,
    /// Its ServiceAccount's namespace (its Lease's too) and name.
    account: (&'static str, &'static str),
    /// The Lease its replicas campaign for.
    lease: &'static str,
    /// The identity of its first replica (`-2`, `-3` ... follow).
    identity: &'static str,
}

/// The readmission gate (Kueue mode).
pub(crate) const GATE: Controller = Controller {
    binary: "dispatch-kf-gate",
    deploy: "crates/dispatch-kf-gate/deploy",
    account: ("dispatch-system", "dispatch-kf-gate"),
    lease: "dispatch-readmission-gate",
    identity: "xtask-gate",
};

/// The cause controller (both modes).
pub(crate) const EVENTS: Controller = Controller {
    binary: "dispatch-kf-events",
    deploy: "crates/dispatch-kf-events/deploy",
    account: ("dispatch-system", "dispatch-kf-events"),
    lease: "dispatch-events",
    identity: "xtask-events",
};

/// The files of a controller's kustomization that `start` applies.
const RBAC_FILES: [&str; 3] = ["namespace.yaml", "serviceaccount.yaml", "rbac.yaml"];

/// How a controller is built before it is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Build {
    /// A debug build, quick to make (the tests).
    Debug,
    /// With optimizations, as a deployment runs it (the benches).
    Release,
}

impl Controller {
    /// Starts one replica, a debug build (`cargo xtask cluster gate|events`).
    pub(crate) fn start(&self) -> run::Result {
        self.start_replicas(1, Build::Debug)
    }

    /// Starts `replicas` replicas electing a leader, built as `build` says: `<binary>`
    /// (the identity `<identity>`, which leads), then `<binary>-2` and on
    /// (`<identity>-2` ..., which follow). Replicas already running are stopped first.
    pub(crate) fn start_replicas(&self, replicas: u32, build: Build) -> run::Result {
        let stack = running_stack()?;
        eprintln!(
            "xtask: starting {replicas} {} replica(s) on the control plane of stack {}",
            self.binary, stack.name
        );
        let (optimized, profile): (&[&str], &str) = match build {
            Build::Debug => (&[], "debug"),
            Build::Release => (&["--release"], "release"),
        };
        run::cargo(&[&["build"], optimized, &["-p", self.binary, "--locked"]].concat())?;
        let kubeconfig = self.kubeconfig()?;
        for replica in 1..=replicas {
            let suffix = if replica == 1 { String::new() } else { format!("-{replica}") };
            let (name, identity) =
                (format!("{}{suffix}", self.binary), format!("{}{suffix}", self.identity));
            let _killed = process::stop_one(&run_dir(), &name, Duration::from_secs(10));
            let binary = run::target_dir().join(profile).join(self.binary);
            let mut command = std::process::Command::new(binary);
            command.arg("--kubeconfig").arg(&kubeconfig).args([
                "--lease-namespace",
                self.account.0,
                "--lease-name",
                self.lease,
                "--identity",
                &identity,
                // Any free port: the probe server must not collide with the machine's others.
                "--probe-address",
                "127.0.0.1:0",
            ]);
            let pid = process::spawn(&run_dir(), &name, command, process::Ready::Running)?;
            // The first is ready when its Lease names it; the others follow it.
            if replica == 1 {
                process::wait_ready(&run_dir(), &name, pid, Duration::from_secs(60), || {
                    let lease = ["-n", self.account.0, "get", "lease", self.lease];
                    let holder = [&lease[..], &["-o", "jsonpath={.spec.holderIdentity}"]].concat();
                    admin_kubectl(&holder).is_ok_and(|holder| holder == identity)
                })?;
            }
        }
        Ok(())
    }

    /// Applies the controller's RBAC and writes a kubeconfig with a day's token of its
    /// ServiceAccount into the run folder.
    fn kubeconfig(&self) -> Result<PathBuf, String> {
        for file in RBAC_FILES {
            let file = run::project_root().join(self.deploy).join(file);
            admin_kubectl(&["apply", "-f", files::path(&file)])?;
        }
        let (namespace, account) = self.account;
        let token =
            admin_kubectl(&["-n", namespace, "create", "token", account, "--duration=24h"])?;
        let pki = pki::Pki { dir: run_dir().join("pki") };
        let text = components::token_kubeconfig(&pki, account, token.trim())?;
        let file = run_dir().join(format!("{}.kubeconfig", self.binary));
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(file)
    }
}

/// Runs kubectl as the cluster's admin.
fn admin_kubectl(args: &[&str]) -> Result<String, String> {
    components::kubectl(&admin_kubeconfig(), args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::args;

    #[test]
    fn up_takes_its_flags_in_either_spelling() {
        let options =
            parse_up(&args(&["--kueue", "--nodes", "5", "--gpus=2", "--kubeconfig-out", "k.yaml"]))
                .unwrap();
        assert_eq!(
            options,
            Options {
                stack: default_stack(),
                kueue: true,
                nodes: 5,
                gpus: 2,
                kubeconfig_out: Some("k.yaml".into())
            }
        );
        assert_eq!(parse_up(&[]).unwrap(), Options::default());
        assert_eq!(parse_up(&[]).unwrap().stack.name, "current");
    }

    #[test]
    fn up_and_build_take_a_stack() {
        let options = parse_up(&args(&["--kueue", "--stack", "oldest"])).unwrap();
        assert_eq!((options.stack.name, options.kueue), ("oldest", true));
        assert_eq!(parse_up(&args(&["--stack=newest"])).unwrap().stack.name, "newest");
        assert_eq!(parse_build(&args(&["--stack", "oldest"])).unwrap().name, "oldest");
        assert_eq!(parse_build(&[]).unwrap().name, "current");
        for bad in [&["--stack", "nope"][..], &["--stack"], &["--kueue"]] {
            assert!(parse_build(&args(bad)).is_err(), "{bad:?}");
        }
        let err = parse_up(&args(&["--stack", "nope"])).unwrap_err();
        assert!(err.contains("oldest") && err.contains("newest"), "{err}");
    }

    #[test]
    fn up_refuses_what_it_cannot_do() {
        for bad in
            [&["--nodes", "2"][..], &["--nodes", "x"], &["--gpus"], &["--what"], &["--kueue=yes"]]
        {
            assert!(parse_up(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
