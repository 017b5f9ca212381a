//! The benches on the real control plane, each step through `dispatch-kf` beside
//! `kubectl`: `cargo xtask bench job`, one big job
//! (`crates/dispatch-kf-testkit/src/bin/big_job/`), and `cargo xtask bench many-jobs`,
//! a cluster of many TrainJobs (`crates/dispatch-kf-testkit/src/bin/many_jobs.rs`).
//! Each starts the control plane of the stack named (`current` by default) with the
//! 8-GPU kwok nodes it needs, builds `dispatch-kf` and the bench with optimizations,
//! runs the bench, and stops the control plane, measured or not.

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
    on_real(stack, shape.nodes(), "big_job", &bench)
}

/// `cargo xtask bench many-jobs`: its arguments go to the bench as they are.
pub(crate) fn many_jobs(args: &[String]) -> run::Result {
    let (stack, rest) = cluster::take_stack(args)?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    on_real(stack, 4, "many_jobs", &rest)
}

/// Runs the testkit's `bench` with `args` on the real control plane of `stack` with
/// `nodes` kwok nodes, and `dispatch-kf`, both built with optimizations.
fn on_real(
    stack: Option<&'static cluster::Stack>,
    nodes: u32,
    bench: &str,
    args: &[&str],
) -> run::Result {
    run::cargo(&[
        "build",
        "--release",
        "--locked",
        "-p",
        "dispatch-kf-cli",
        "--bin",
        "dispatch-kf",
    ])?;
    run::cargo(&["build", "--release", "--locked", "-p", "dispatch-kf-testkit", "--bin", bench])?;
    let cli = target_dir().join("release/dispatch-kf");
    let cli = cli.to_str().ok_or("the target folder's path is not UTF-8")?.to_owned();
    let stack = stack.unwrap_or_else(cluster::default_stack);
    let options = cluster::Options { stack, nodes, gpus: GPUS_PER_NODE, ..Default::default() };
    let measure = || -> run::Result {
        let kubeconfig = cluster::up(&options)?;
        let kubeconfig = kubeconfig.to_str().ok_or("the kubeconfig's path is not UTF-8")?;
        let mut cargo = vec!["run", "--release", "--locked", "-p", "dispatch-kf-testkit"];
        cargo.extend(["--bin", bench, "--", "--kubeconfig", kubeconfig, "--cli", &cli]);
        cargo.extend(args);
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
    fn a_pod_wants_one_to_eight_gpus() {
        for bad in [&["--gpus-per-pod", "0"][..], &["--gpus-per-pod", "9"], &["--pods", "x"]] {
            assert!(Shape::parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
