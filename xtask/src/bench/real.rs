//! The benches on the real control plane, each beside what a user would have instead:
//! `cargo xtask bench job`, one big job (`crates/dispatch-kf-testkit/src/bin/big_job/`),
//! and `cargo xtask bench many-jobs`, a cluster of many TrainJobs
//! (`crates/dispatch-kf-testkit/src/bin/many_jobs.rs`), each step through `dispatch-kf`
//! beside `kubectl`; `cargo xtask bench gate`, the readmission gate under load beside
//! Kueue alone (`crates/dispatch-kf-testkit/src/bin/gate_load/`); `cargo xtask bench
//! events`, the cause controller among many TrainJobs
//! (`crates/dispatch-kf-testkit/src/bin/events_cost.rs`). Each starts the
//! control plane of the stack named (`current` by default) with the 8-GPU kwok nodes it
//! needs, builds what it runs with optimizations, runs the bench, and stops the control
//! plane, measured or not.

use crate::cluster;
use crate::run::{self, target_dir};

/// GPUs on each kwok node.
const GPUS_PER_NODE: u32 = 8;

/// The job's shape as the bench is told it, and the arguments passed on.
#[derive(Debug, PartialEq)]
struct Shape {
    pods: u32,
    gpus_per_pod: u32,
    rest: Vec<String>,
}

impl Shape {
    fn parse(args: &[String]) -> Result<Shape, String> {
        let mut shape = Shape { pods: 1024, gpus_per_pod: 1, rest: Vec::new() };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let field = match arg.as_str() {
                "--pods" => &mut shape.pods,
                "--gpus-per-pod" => &mut shape.gpus_per_pod,
                _ => {
                    shape.rest.push(arg.clone());
                    continue;
                }
            };
            let value = args.next().ok_or(format!("{arg} needs a number"))?;
            *field = value.parse().map_err(|_| format!("{arg}: {value:?} is not a number"))?;
        }
        if shape.gpus_per_pod == 0 || shape.gpus_per_pod > GPUS_PER_NODE {
            return Err(format!("--gpus-per-pod must be 1 to {GPUS_PER_NODE}"));
        }
        Ok(shape)
    }

    /// The kwok nodes the job fills (at least the three `cluster up` asks for).
    fn nodes(&self) -> u32 {
        let per_node = GPUS_PER_NODE / self.gpus_per_pod;
        self.pods.div_ceil(per_node).max(3)
    }
}

/// `cargo xtask bench job`.
pub(crate) fn job(args: &[String]) -> run::Result {
    let (stack, rest) = cluster::take_stack(args)?;
    let shape = Shape::parse(&rest)?;
    let (pods, gpus) = (shape.pods.to_string(), shape.gpus_per_pod.to_string());
    let mut bench = vec!["--pods", &pods, "--gpus-per-pod", &gpus];
    bench.extend(shape.rest.iter().map(String::as_str));
    on_real(stack, Plane::with_cli(shape.nodes()), "big_job", &bench)
}

/// `cargo xtask bench many-jobs`: its arguments go to the bench as they are.
pub(crate) fn many_jobs(args: &[String]) -> run::Result {
    let (stack, rest) = cluster::take_stack(args)?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    on_real(stack, Plane::with_cli(4), "many_jobs", &rest)
}

/// `cargo xtask bench events`: the cause controller, built with optimizations, among
/// many TrainJobs; its arguments go to the bench as they are.
pub(crate) fn events(args: &[String]) -> run::Result {
    let (stack, rest) = cluster::take_stack(args)?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let plane = Plane { nodes: 4, gates: 0, cli: false, controller: true };
    on_real(stack, plane, "events_cost", &rest)
}

/// `cargo xtask bench gate`: Kueue with two gate replicas, nodes for both sets of
/// Workloads (the gated ones and Kueue's alone) running at once.
pub(crate) fn gate(args: &[String]) -> run::Result {
    let (stack, rest) = cluster::take_stack(args)?;
    let workloads = workloads(&rest)?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let nodes = (2 * workloads).div_ceil(GPUS_PER_NODE).max(3);
    let plane = Plane { nodes, gates: 2, cli: false, controller: false };
    let xtask = std::env::current_exe().map_err(|e| format!("this xtask's path: {e}"))?;
    let xtask = xtask.to_str().ok_or("this xtask's path is not UTF-8")?.to_owned();
    on_real(stack, plane, "gate_load", &[&["--xtask", xtask.as_str()], &rest[..]].concat())
}

/// The number after `--workloads` (500 without one): the gate bench's size.
fn workloads(args: &[String]) -> Result<u32, String> {
    match args.iter().position(|a| a == "--workloads") {
        None => Ok(500),
        Some(at) => {
            let value = args.get(at + 1).ok_or("--workloads needs a number")?;
            value.parse().map_err(|_| format!("--workloads: {value:?} is not a number"))
        }
    }
}

/// What a bench needs of the control plane and beside it.
struct Plane {
    /// kwok nodes of [`GPUS_PER_NODE`] GPUs.
    nodes: u32,
    /// With Kueue and this many replicas of the readmission gate (built with
    /// optimizations); none: without Kueue.
    gates: u32,
    /// `dispatch-kf` built with optimizations, its path given as `--cli`.
    cli: bool,
    /// `dispatch-kf-events` built with optimizations, its path given as `--controller`.
    controller: bool,
}

impl Plane {
    fn with_cli(nodes: u32) -> Plane {
        Plane { nodes, gates: 0, cli: true, controller: false }
    }
}

/// Runs the testkit's `bench` with `args`, built with optimizations, on the real
/// control plane of `stack` made as `plane` says.
fn on_real(
    stack: Option<&'static cluster::Stack>,
    plane: Plane,
    bench: &str,
    args: &[&str],
) -> run::Result {
    let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let binaries = [
        (plane.cli, "dispatch-kf-cli", "dispatch-kf", "--cli"),
        (plane.controller, "dispatch-kf-events", "dispatch-kf-events", "--controller"),
    ];
    for (wanted, package, binary, flag) in binaries {
        if !wanted {
            continue;
        }
        run::cargo(&["build", "--release", "--locked", "-p", package, "--bin", binary])?;
        let path = target_dir().join("release").join(binary);
        let path = path.to_str().ok_or("the target folder's path is not UTF-8")?.to_owned();
        args.extend([flag.to_owned(), path]);
    }
    run::cargo(&["build", "--release", "--locked", "-p", "dispatch-kf-testkit", "--bin", bench])?;
    let stack = stack.unwrap_or_else(cluster::default_stack);
    let kueue = plane.gates > 0;
    let options = cluster::Options {
        stack,
        nodes: plane.nodes,
        gpus: GPUS_PER_NODE,
        kueue,
        ..Default::default()
    };
    let measure = || -> run::Result {
        let kubeconfig = cluster::up(&options)?;
        if kueue {
            cluster::GATE.start_replicas(plane.gates, cluster::Build::Release)?;
        }
        let kubeconfig = kubeconfig.to_str().ok_or("the kubeconfig's path is not UTF-8")?;
        let mut cargo = vec!["run", "--release", "--locked", "-p", "dispatch-kf-testkit"];
        cargo.extend(["--bin", bench, "--", "--kubeconfig", kubeconfig]);
        cargo.extend(args.iter().map(String::as_str));
        run::cargo(&cargo)
    };
    let result = measure();
    let stopped = cluster::down();
    result.and(stopped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::args;

    #[test]
    fn the_job_fills_nodes_of_eight_gpus_and_the_rest_goes_to_the_bench() {
        let shape =
            Shape::parse(&args(&["--runs", "1", "--pods", "512", "--gpus-per-pod", "8"])).unwrap();
        assert_eq!((shape.nodes(), shape.rest), (512, args(&["--runs", "1"])));
        assert_eq!(Shape::parse(&[]).unwrap().nodes(), 128);
        assert_eq!(Shape::parse(&args(&["--pods", "8"])).unwrap().nodes(), 3);
    }

    #[test]
    fn the_gate_bench_is_five_hundred_workloads_unless_told() {
        assert_eq!(workloads(&args(&["--runs", "1"])), Ok(500));
        assert_eq!(workloads(&args(&["--workloads", "40", "--runs", "1"])), Ok(40));
        assert!(workloads(&args(&["--workloads"])).is_err());
        assert!(workloads(&args(&["--workloads", "many"])).is_err());
    }

    #[test]
    fn a_pod_wants_one_to_eight_gpus() {
        for bad in [&["--gpus-per-pod", "0"][..], &["--gpus-per-pod", "9"], &["--pods", "x"]] {
            assert!(Shape::parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
