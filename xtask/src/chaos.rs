//! `cargo xtask chaos [--stack NAME] [--mode plain|kueue|both] [--seconds S] [--seed N]
//! [--jobs J]`: random faults on the real control plane, checked by an observer the
//! adapter does not control (docs/dev/chaos.md). For each mode it starts the control plane
//! (eight kwok nodes of eight GPUs; in Kueue mode two gate replicas electing a leader),
//! runs the harness (`crates/dispatch-kf-testkit/src/bin/chaos`) with this executable
//! for the process faults, keeps its report in `target/chaos/<stack>-<mode>.txt`, and
//! stops the control plane whatever happened, failing if any process of it is left.

use std::path::Path;

use crate::{cluster, e2e, run};

const USAGE: &str = "usage: cargo xtask chaos [--stack NAME] [--mode plain|kueue|both] [--seconds S] [--seed N] [--jobs J]";

/// What a chaos run was asked for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Options {
    pub(crate) stack: &'static cluster::Stack,
    pub(crate) modes: Vec<e2e::Mode>,
    pub(crate) seconds: u64,
    pub(crate) seed: u64,
    pub(crate) jobs: u32,
}

impl Options {
    /// The default run: both modes, 90 s each.
    pub(crate) fn short() -> Options {
        Options {
            stack: cluster::default_stack(),
            modes: e2e::Mode::BOTH.to_vec(),
            seconds: 90,
            seed: 1,
            jobs: 20,
        }
    }

    /// CI's run: a minute of load a mode, with two control planes to start and stop
    /// about five minutes in all, as CI's budget allows; a violation fails the build.
    pub(crate) fn ci() -> Options {
        Options { seconds: 60, ..Options::short() }
    }
}

fn parse(args: &[String]) -> Result<Options, String> {
    let (stack, rest) = cluster::take_stack(args)?;
    let mut options =
        Options { stack: stack.unwrap_or_else(cluster::default_stack), ..Options::short() };
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = || {
            value.parse::<u64>().map_err(|_| format!("{flag} takes a whole number, not {value:?}"))
        };
        match flag.as_str() {
            "--mode" => {
                options.modes = match value.as_str() {
                    "both" => e2e::Mode::BOTH.to_vec(),
                    "plain" => vec![e2e::Mode::Plain],
                    "kueue" => vec![e2e::Mode::Kueue],
                    _ => return Err(format!("--mode is plain, kueue or both, not {value:?}")),
                }
            }
            "--seconds" => options.seconds = number()?,
            "--seed" => options.seed = number()?,
            "--jobs" => options.jobs = u32::try_from(number()?).map_err(|e| e.to_string())?,
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    Ok(options)
}

/// `cargo xtask chaos ...`.
pub(crate) fn run(args: &[String]) -> run::Result {
    chaos(&parse(args)?)
}

/// Runs the harness in each mode of `options`; fails if any run found a violation.
pub(crate) fn chaos(options: &Options) -> run::Result {
    run::cargo(&["build", "-p", "dispatch-kf-testkit", "--bin", "chaos", "--locked"])?;
    run::cargo(&["build", "-p", "dispatch-kf-cli", "--bin", "dispatch-kf", "--locked"])?;
    let harness = run::target_dir().join("debug").join("chaos");
    let folder = run::target_dir().join("chaos");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let mut failed = Vec::new();
    for mode in &options.modes {
        let report = folder.join(format!("{}-{}.txt", options.stack.name, mode.name()));
        let result = one(options, *mode, &harness, &report);
        let stopped = cluster::down();
        if let Err(e) = result.and(stopped) {
            failed.push(format!("{}: {e} (report: {})", mode.name(), report.display()));
        }
    }
    if failed.is_empty() { Ok(()) } else { Err(failed.join("\n")) }
}

/// One mode's run on a control plane of its own.
fn one(options: &Options, mode: e2e::Mode, harness: &Path, report: &Path) -> run::Result {
    let cli = harness.with_file_name("dispatch-kf");
    let kueue = mode == e2e::Mode::Kueue;
    let up =
        cluster::Options { stack: options.stack, kueue, nodes: 8, gpus: 8, kubeconfig_out: None };
    let kubeconfig = cluster::up(&up)?;
    if kueue {
        cluster::GATE.start_replicas(2, cluster::Build::Debug)?;
    }
    let xtask = std::env::current_exe().map_err(|e| format!("this executable: {e}"))?;
    let text = |p: &std::path::Path| p.to_str().map(str::to_owned).ok_or("a path is not UTF-8");
    let status = std::process::Command::new(harness)
        .args(["--kubeconfig", &text(&kubeconfig)?, "--xtask", &text(&xtask)?])
        .args(["--cli", &text(&cli)?])
        .args(["--mode", mode.name(), "--report", &text(report)?])
        .args(["--seconds", &options.seconds.to_string(), "--seed", &options.seed.to_string()])
        .args(["--jobs", &options.jobs.to_string()])
        .status()
        .map_err(|e| format!("cannot run {}: {e}", harness.display()))?;
    match status.code() {
        Some(0) => Ok(()),
        _ => Err(format!("the chaos run found violations or failed ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::args;

    #[test]
    fn chaos_takes_its_flags_and_runs_both_modes_for_ninety_seconds_without_them() {
        assert_eq!(parse(&[]).unwrap(), Options::short());
        let options = parse(&args(&[
            "--stack",
            "oldest",
            "--mode",
            "kueue",
            "--seconds",
            "1800",
            "--seed",
            "7",
            "--jobs",
            "24",
        ]))
        .unwrap();
        assert_eq!(options.stack.name, "oldest");
        assert_eq!(options.modes, [e2e::Mode::Kueue]);
        assert_eq!((options.seconds, options.seed, options.jobs), (1800, 7, 24));
        for bad in [&["--mode", "odd"][..], &["--seconds"], &["--seconds", "x"], &["--what", "1"]] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
