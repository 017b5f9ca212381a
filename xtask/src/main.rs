//! `cargo xtask`: the project's workflows as plain Rust.
//!
//! - `cargo xtask test`: every test of the workspace (what `.ci/run` runs).
//! - `cargo xtask ci [--real]`: formatting, clippy with warnings denied, docs, then the
//!   tests; with `--real`, then the end-to-end suite on the real control plane and a
//!   short chaos run.
//! - `cargo xtask bench classify`: offline classification against a plain JSON parse;
//!   `cargo xtask bench cli`: every command on `sim serve`; `cargo xtask bench job` and
//!   `bench many-jobs`: one big job, and many TrainJobs, on the real control plane beside
//!   kubectl; `cargo xtask bench gate`: the readmission gate under load beside Kueue
//!   alone; `cargo xtask bench scale`: one Backend among many jobs (docs/dev/benchmarks.md).
//! - `cargo xtask e2e --kubeconfig FILE | --real [--stack NAME]`: the end-to-end suite
//!   against a real cluster, or on the real control plane of `cargo xtask cluster` in
//!   both modes.
//! - `cargo xtask cluster up|gate|down|build|kill|freeze|thaw|restart`: the real control
//!   plane at one stack's versions, and faults of its processes (docs/dev/real-cluster.md).
//! - `cargo xtask chaos [--stack NAME] [--mode M] [--seconds S] [--seed N] [--jobs J]`:
//!   random faults on the real control plane under a supervisor's load, checked by an
//!   observer of its own (docs/dev/chaos.md).
//! - `cargo xtask matrix [--stack A,B]`: the suite on every stack in both modes, written
//!   into docs/compatibility.md.
//! - `cargo xtask fidelity`: the suite on the sim and on the real control plane, side by side.
//! - `cargo xtask fixtures cluster [--stack NAME]`: keeps those real dumps as
//!   `fixtures/dumps/cluster-<stack>-<scenario>.json`.
//! - `cargo xtask soak [JOBS] [SEED]`: one Backend through 200 jobs under random faults
//!   on the sim, its invariants checked after every step (docs/dev/benchmarks.md).
//! - `cargo xtask dist [--target TRIPLE]...`: the kubectl plugin's release archives and
//!   their krew manifest (`plugins/dispatch.yaml`), in `target/dist/`.
//! - `cargo xtask python [--release | --test]`: the Python package's wheel, in `target/wheels/`;
//!   `test` runs its tests when Python 3 is there (docs/python.md).
//! - `cargo xtask install`: installs `dispatch-kf` and the kubectl plugin `kubectl-dispatch`.
//! - `cargo xtask fuzz [SECONDS]`: every `cargo fuzz` target of `fuzz/` briefly, on
//!   nightly; not part of `test` or `ci` (docs/dev/fuzzing.md).
//!
//! `tidy.rs` holds checks on the codebase itself, and `deps.rs` checks of the library
//! crates as an outside crate depends on them, both run as tests.

mod bench;
mod chaos;
mod cluster;
#[cfg(test)]
mod deps;
mod dist;
mod e2e;
mod fidelity;
mod fuzz;
mod install;
mod matrix;
mod python;
mod run;
#[cfg(test)]
mod tidy;

use std::process::ExitCode;

const USAGE: &str =
    "usage: cargo xtask <test|ci|bench classify|bench cli|bench job|bench many-jobs|bench gate|bench scale|chaos|e2e|cluster|matrix|fidelity|fixtures|soak|dist|python|install|fuzz>

  test             run every test of the workspace
  ci [--real]      cargo fmt --check, clippy -D warnings, cargo doc, then test; with
                   --real, then the e2e suite on the real control plane (e2e --real)
                   and a short chaos run in both modes (a minute each)
  bench classify   time dispatch-kf classify against serde_json on generated dumps
  bench cli        every command's wall time on sim serve; writing commands within 2x find
  bench job [--stack NAME] [--pods 1024] [--gpus-per-pod 1] [--runs 3]
                   one big job on the real control plane, each step beside kubectl
  bench many-jobs [--stack NAME] [--train-jobs 10000] [--namespaces 100] [--runs 3]
                   explain -A and find among many TrainJobs on the real control plane,
                   beside kubectl get
  bench gate [--stack NAME] [--workloads 500] [--runs 3]
                   Workloads held and released through the readmission gate (two
                   replicas, and across a leader change) beside Kueue alone
  bench scale [--stack NAME | --kubeconfig FILE] [--others 0,1000,10000] [--watched 1,100,1000]
                   one Backend in a namespace of M other TrainJobs watching N jobs: Find's
                   requests, bytes, latency and CPU, watch requests, memory per watched
                   job; on the sim, a cluster, or the real control plane of a stack
  e2e --kubeconfig FILE | --real [--stack NAME]
                   run the end-to-end suite against a real cluster (docs/dev/e2e.md), or on
                   the real control plane in both modes (docs/dev/real-cluster.md)
  cluster up [--stack NAME] [--kueue] [--nodes N] [--gpus G] [--kubeconfig-out FILE]
        | gate | down | build [--stack NAME] | kill|freeze|thaw|restart PROCESS
                   the real control plane on localhost, built from upstream's Go modules
                   at one stack's versions (default current; docs/compatibility.md)
  chaos [--stack NAME] [--mode plain|kueue|both] [--seconds S] [--seed N] [--jobs J]
                   random faults on the real control plane (default: current, both
                   modes, 120 s, seed 1, 20 jobs), checked by an observer; docs/dev/chaos.md
  matrix [--stack NAME,NAME...] | --docs-only
                   the e2e suite on each supported stack (or those named) in both modes,
                   recorded in docs/compatibility.json and written to docs/compatibility.md
  fidelity [--stack NAME] | --compare
                   the e2e suite on the sim and the real control plane, side by side
  fixtures cluster [--stack NAME] [--from-records]
                   keep the dumps the suite ended with on the real control plane
  soak [JOBS] [SEED]
                   one Backend through JOBS jobs (200) under random faults on the sim,
                   checking the supervisor's invariants and memory; non-zero on a violation
  dist [--target TRIPLE]...
                   release archives of kubectl-dispatch (binary and LICENSE, a tar.gz
                   per target; default the host's) and their krew manifest, in target/dist
  python [--release | --test]
                   the wheel of the Python package dispatch-kf (maturin, into
                   target/wheels; maturin comes into a venv in target/python when
                   missing); --test runs its tests, as test does where Python 3 is
  install          cargo install dispatch-kf and the kubectl plugin kubectl-dispatch,
                   with shell completions and man pages
  fuzz [SECONDS]   run every cargo-fuzz target of fuzz/ for SECONDS (default 30) on
                   nightly, one after another; fails on any crash. Not part of test or ci";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("ci") => ci(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("chaos") => chaos::run(&args[1..]),
        Some("e2e") => e2e::run(&args[1..]),
        Some("cluster") => cluster::run(&args[1..]),
        Some("matrix") => matrix::run(&args[1..]),
        Some("fidelity") => fidelity::run(&args[1..]),
        Some("fixtures") => fidelity::fixtures(&args[1..]),
        Some("soak") => soak(&args[1..]),
        Some("dist") => dist::run(&args[1..]),
        Some("python") => python::run(&args[1..]),
        Some("install") => install::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every test of the workspace, then the Python package's where Python 3 is there;
/// extra arguments go to `cargo test`.
fn test(extra: &[String]) -> run::Result {
    let mut args = vec!["test", "--workspace", "--all-targets", "--locked"];
    args.extend(extra.iter().map(String::as_str));
    run::cargo(&args)?;
    run::cargo(&["test", "--workspace", "--doc", "--locked"])?;
    python::test()
}

/// What CI checks beyond the tests: formatting, lints (of the command also without its
/// feature `sim`, as the kubectl plugin is shipped) and docs; with `--real`, then the
/// end-to-end suite on the real control plane in both modes (`cargo xtask e2e --real`)
/// and a short chaos run in both modes (`cargo xtask chaos`, a minute each).
fn ci(args: &[String]) -> run::Result {
    let real = match args {
        [] => false,
        [flag] if flag == "--real" => true,
        _ => return Err("usage: cargo xtask ci [--real]".into()),
    };
    run::cargo(&["fmt", "--all", "--check"])?;
    run::cargo(&["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"])?;
    // The command as the kubectl plugin is shipped: without the simulated cluster.
    let lean = ["-p", "dispatch-kf-cli", "--bins", "--no-default-features", "--locked"];
    run::cargo(&[&["clippy"][..], &lean, &["--", "-D", "warnings"]].concat())?;
    run::cargo_env(
        &["doc", "--workspace", "--no-deps", "--locked"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    test(&[])?;
    if !real {
        return Ok(());
    }
    e2e::run(&["--real".to_owned()])?;
    chaos::chaos(&chaos::Options::ci())
}

/// The soak, built as the tests are (`crates/dispatch-kf-testkit/src/bin/soak.rs`).
fn soak(args: &[String]) -> run::Result {
    let mut cargo = vec!["run", "--locked", "-p", "dispatch-kf-testkit", "--bin", "soak", "--"];
    cargo.extend(args.iter().map(String::as_str));
    run::cargo(&cargo)
}
