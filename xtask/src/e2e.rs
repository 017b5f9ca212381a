//! `cargo xtask e2e --kubeconfig FILE`: the end-to-end suite
//! (`crates/dispatch-kf/tests/e2e.rs`) against a real cluster instead of the simulated
//! one. The kubeconfig is the suite's only cluster-specific input; see `docs/dev/e2e.md`.
//!
//! `cargo xtask e2e --real [--stack NAME]`: the suite on the real control plane of
//! `cargo xtask cluster` at one stack's versions (`current` by default), twice: on
//! `cluster up`, then on `cluster up --kueue` with the readmission gate running, the
//! cause controller running in both; the control plane is stopped at the end, passed
//! or not.

use std::path::{Path, PathBuf};

use crate::{cluster, run};

/// The variable the suite reads to pick a real cluster.
const KUBECONFIG_VAR: &str = run::E2E_KUBECONFIG;
/// The variable naming the xtask executable that controls the control plane's processes.
const CONTROL_VAR: &str = "DISPATCH_KF_E2E_CONTROL";
/// The variable naming the folder the suite records each scenario's end into.
const RECORD_VAR: &str = "DISPATCH_KF_E2E_RECORD";

/// The two ways the suite runs on the real control plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `cluster up`: no Kueue; the Kueue scenario skips.
    Plain,
    /// `cluster up --kueue`, then `cluster gate`.
    Kueue,
}

impl Mode {
    /// Both, in the order they run.
    pub(crate) const BOTH: [Mode; 2] = [Mode::Plain, Mode::Kueue];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Kueue => "kueue",
        }
    }
}

/// Starts the real control plane of `stack` for `mode`, with the cause controller (and
/// the gate in Kueue mode); its admin kubeconfig.
pub(crate) fn up(stack: &'static cluster::Stack, mode: Mode) -> Result<PathBuf, String> {
    let kueue = mode == Mode::Kueue;
    let kubeconfig = cluster::up(&cluster::Options { stack, kueue, ..Default::default() })?;
    if kueue {
        cluster::GATE.start()?;
    }
    cluster::EVENTS.start()?;
    Ok(kubeconfig)
}

/// What `e2e` was asked for.
#[derive(Debug, PartialEq)]
enum Target {
    Kubeconfig(PathBuf),
    Real(&'static cluster::Stack),
}

/// Runs the suite against the cluster of the kubeconfig `args` name, or with `--real`
/// on the real control plane in both modes.
pub(crate) fn run(args: &[String]) -> run::Result {
    match parse(args)? {
        Target::Kubeconfig(file) => suite(&file),
        Target::Real(stack) => real(stack),
    }
}

fn parse(args: &[String]) -> Result<Target, String> {
    let (stack, rest) = cluster::take_stack(args)?;
    match (stack, rest.as_slice()) {
        (stack, [flag]) if flag == "--real" => {
            Ok(Target::Real(stack.unwrap_or_else(cluster::default_stack)))
        }
        (None, _) => kubeconfig_arg(&rest).map(Target::Kubeconfig),
        (Some(_), _) => Err(format!("{USAGE} (--stack goes with --real; got {args:?})")),
    }
}

/// The suite on `cluster up`, then on `cluster up --kueue` with the gate; always ends
/// with `cluster down`.
fn real(stack: &'static cluster::Stack) -> run::Result {
    let both = || Mode::BOTH.into_iter().try_for_each(|mode| suite(&up(stack, mode)?));
    let result = both();
    let stopped = cluster::down();
    result.and(stopped)
}

/// Runs the suite against the cluster of `kubeconfig`.
fn suite(kubeconfig: &Path) -> run::Result {
    let env = suite_env(Some(kubeconfig), None)?;
    run::cargo_env(&suite_args(&[]), &borrowed(&env))
}

/// Runs the suite against the cluster of `kubeconfig` with each passing scenario's
/// captured output shown (a skip says so there): whether it passed, and the harness's
/// standard output.
pub(crate) fn suite_output(kubeconfig: &Path) -> Result<(bool, String), String> {
    let env = suite_env(Some(kubeconfig), None)?;
    run::cargo_env_output(&suite_args(&["--show-output"]), &borrowed(&env))
}

/// The CLI's test of a refused cluster (`crates/dispatch-kf-cli/tests/refusal.rs`).
const REFUSAL_TEST: &str =
    "a_real_cluster_kept_to_be_refused_is_refused_by_preflight_and_start_in_one_line";

/// Runs the CLI's refusal test against the cluster of `kubeconfig` in `mode`, expecting
/// `preflight` and `start` to refuse it with a message that begins with `words`:
/// whether it passed, and the harness's standard output.
pub(crate) fn refusal_output(
    kubeconfig: &Path,
    mode: Mode,
    words: &str,
) -> Result<(bool, String), String> {
    let kubeconfig = utf8(absolute(kubeconfig)?)?;
    let env = [
        ("DISPATCH_KF_REFUSAL_KUBECONFIG", kubeconfig.as_str()),
        ("DISPATCH_KF_REFUSAL_MODE", mode.name()),
        ("DISPATCH_KF_REFUSAL_WORDS", words),
    ];
    let test = ["--test", "refusal", "--locked", "--", "--exact", REFUSAL_TEST, "--show-output"];
    run::cargo_env_output(&[&["test", "-p", "dispatch-kf-cli"][..], &test].concat(), &env)
}

/// Runs the suite against the cluster of `kubeconfig` (the simulated one without it),
/// each scenario recording how it ended into `record` (`BackendOnTarget::record`).
pub(crate) fn suite_recording(kubeconfig: Option<&Path>, record: &Path) -> run::Result {
    let env = suite_env(kubeconfig, Some(record))?;
    run::cargo_env(&suite_args(&[]), &borrowed(&env))
}

/// `cargo test` of the suite, one scenario at a time, with `extra` harness flags.
fn suite_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["test", "-p", "dispatch-kf", "--test", "e2e", "--locked", "--"];
    args.push("--test-threads=1");
    args.extend_from_slice(extra);
    args
}

fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The suite's environment: the kubeconfig of a real cluster, and where to record.
fn suite_env(
    kubeconfig: Option<&Path>,
    record: Option<&Path>,
) -> Result<Vec<(&'static str, String)>, String> {
    let mut env = Vec::new();
    if let Some(kubeconfig) = kubeconfig {
        let kubeconfig = absolute(kubeconfig)?;
        // The control plane this xtask started: the suite may kill and restart its
        // processes through this executable (`cargo xtask cluster kill|restart`).
        if absolute(&cluster::admin_kubeconfig()).is_ok_and(|ours| ours == kubeconfig) {
            let xtask = std::env::current_exe().map_err(|e| format!("this executable: {e}"))?;
            env.push((CONTROL_VAR, utf8(xtask)?));
        }
        env.push((KUBECONFIG_VAR, utf8(kubeconfig)?));
    }
    if let Some(record) = record {
        std::fs::create_dir_all(record).map_err(|e| format!("{}: {e}", record.display()))?;
        env.push((RECORD_VAR, utf8(absolute(record)?)?));
    }
    Ok(env)
}

/// The path as text.
fn utf8(path: PathBuf) -> Result<String, String> {
    path.to_str().map(str::to_owned).ok_or("a path is not UTF-8".to_owned())
}

const USAGE: &str = "usage: cargo xtask e2e --kubeconfig FILE | --real [--stack NAME]";

/// The FILE of `--kubeconfig FILE` or `--kubeconfig=FILE`, the only argument.
fn kubeconfig_arg(args: &[String]) -> Result<PathBuf, String> {
    let usage = || format!("{USAGE} (got {args:?})");
    let file = match args {
        [flag, file] if flag == "--kubeconfig" => file.as_str(),
        [one] => one.strip_prefix("--kubeconfig=").ok_or_else(usage)?,
        _ => return Err(usage()),
    };
    if file.is_empty() {
        return Err(usage());
    }
    Ok(PathBuf::from(file))
}

/// The path made absolute, because cargo runs the suite from the project root; a file
/// that cannot be read is refused here rather than by every test.
fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(path)
        .map_err(|e| format!("the kubeconfig {}: cannot be read: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::args;

    #[test]
    fn the_kubeconfig_is_taken_in_either_spelling() {
        for given in [&["--kubeconfig", "kc.yaml"][..], &["--kubeconfig=kc.yaml"]] {
            assert_eq!(kubeconfig_arg(&args(given)), Ok(PathBuf::from("kc.yaml")));
        }
    }

    #[test]
    fn anything_else_is_a_usage_error() {
        for given in [
            &[][..],
            &["--kubeconfig"],
            &["--kubeconfig="],
            &["kc.yaml"],
            &["--kubeconfig", "kc.yaml", "extra"],
        ] {
            let err = kubeconfig_arg(&args(given)).unwrap_err();
            assert!(err.starts_with("usage: cargo xtask e2e --kubeconfig FILE | --real"), "{err}");
        }
    }

    #[test]
    fn real_takes_a_stack_and_runs_current_without_one() {
        let stack = |given: &[&str]| match parse(&args(given)) {
            Ok(Target::Real(stack)) => stack.name,
            other => panic!("{given:?}: {other:?}"),
        };
        assert_eq!(stack(&["--real"]), "current");
        assert_eq!(stack(&["--real", "--stack", "oldest"]), "oldest");
        assert_eq!(stack(&["--stack=newest", "--real"]), "newest");
        assert_eq!(
            parse(&args(&["--kubeconfig", "k.yaml"])),
            Ok(Target::Kubeconfig(PathBuf::from("k.yaml")))
        );
        for bad in
            [&["--real", "--stack", "nope"][..], &["--kubeconfig", "k.yaml", "--stack", "oldest"]]
        {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_missing_kubeconfig_is_refused_before_cargo_runs() {
        let err = absolute(Path::new("/nonexistent/kubeconfig.yaml")).unwrap_err();
        assert!(err.contains("/nonexistent/kubeconfig.yaml: cannot be read"), "{err}");
    }
}
