//! `cargo xtask e2e --kubeconfig FILE`: the end-to-end suite
//! (`crates/dispatch-kf/tests/e2e.rs`) against a real cluster instead of the simulated
//! one. The kubeconfig is the suite's only cluster-specific input; see `docs/e2e.md`.
//!
//! `cargo xtask e2e --real`: the suite on the real control plane of `cargo xtask
//! cluster`, twice: on `cluster up`, then on `cluster up --kueue` with the readmission
//! gate running; the control plane is stopped at the end, passed or not.

use std::path::{Path, PathBuf};

use crate::{cluster, run};

/// The variable the suite reads to pick a real cluster.
const KUBECONFIG_VAR: &str = run::E2E_KUBECONFIG;
/// The variable naming the folder the suite records each scenario's end into.
const RECORD_VAR: &str = "DISPATCH_KF_E2E_RECORD";

/// Runs the suite against the cluster of the kubeconfig `args` name, or with `--real`
/// on the real control plane in both modes.
pub(crate) fn run(args: &[String]) -> run::Result {
    if let [flag] = args
        && flag == "--real"
    {
        return real();
    }
    suite(&kubeconfig_arg(args)?)
}

/// The suite on `cluster up`, then on `cluster up --kueue` with the gate; always ends
/// with `cluster down`.
fn real() -> run::Result {
    let both = || {
        let plain = cluster::up(&cluster::Options::default())?;
        suite(&plain)?;
        let kueue = cluster::up(&cluster::Options { kueue: true, ..Default::default() })?;
        cluster::start_gate()?;
        suite(&kueue)
    };
    let result = both();
    let stopped = cluster::down();
    result.and(stopped)
}

/// Runs the suite against the cluster of `kubeconfig`.
fn suite(kubeconfig: &Path) -> run::Result {
    run_suite(Some(kubeconfig), None)
}

/// Runs the suite against the cluster of `kubeconfig` (the simulated one without it),
/// each scenario recording how it ended into `record` (`World::record`).
pub(crate) fn suite_recording(kubeconfig: Option<&Path>, record: &Path) -> run::Result {
    run_suite(kubeconfig, Some(record))
}

fn run_suite(kubeconfig: Option<&Path>, record: Option<&Path>) -> run::Result {
    let utf8 = |p: PathBuf| p.to_str().map(str::to_owned).ok_or("a path is not UTF-8".to_owned());
    let mut env = Vec::new();
    if let Some(kubeconfig) = kubeconfig {
        env.push((KUBECONFIG_VAR, utf8(absolute(kubeconfig)?)?));
    }
    if let Some(record) = record {
        std::fs::create_dir_all(record).map_err(|e| format!("{}: {e}", record.display()))?;
        env.push((RECORD_VAR, utf8(absolute(record)?)?));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run::cargo_env(
        &["test", "-p", "dispatch-kf", "--test", "e2e", "--locked", "--", "--test-threads=1"],
        &env,
    )
}

/// The FILE of `--kubeconfig FILE` or `--kubeconfig=FILE`, the only argument.
fn kubeconfig_arg(args: &[String]) -> Result<PathBuf, String> {
    let usage = || format!("usage: cargo xtask e2e --kubeconfig FILE | --real (got {args:?})");
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

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| (*a).to_owned()).collect()
    }

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
    fn a_missing_kubeconfig_is_refused_before_cargo_runs() {
        let err = absolute(Path::new("/nonexistent/kubeconfig.yaml")).unwrap_err();
        assert!(err.contains("/nonexistent/kubeconfig.yaml: cannot be read"), "{err}");
    }
}
