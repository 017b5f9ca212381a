//! `cargo xtask e2e --kubeconfig FILE`: the end-to-end suite
//! (`crates/dispatch-kf/tests/e2e.rs`) against a real cluster instead of the simulated
//! one. The kubeconfig is the suite's only cluster-specific input; see `docs/e2e.md`.

use std::path::{Path, PathBuf};

use crate::run;

/// The variable the suite reads to pick a real cluster.
const KUBECONFIG_VAR: &str = run::E2E_KUBECONFIG;

/// Runs the suite against the cluster of the kubeconfig `args` name.
pub(crate) fn run(args: &[String]) -> run::Result {
    let kubeconfig = absolute(&kubeconfig_arg(args)?)?;
    let kubeconfig = kubeconfig.to_str().ok_or("the kubeconfig's path is not UTF-8")?;
    run::cargo_env(
        &["test", "-p", "dispatch-kf", "--test", "e2e", "--locked", "--", "--test-threads=1"],
        &[(KUBECONFIG_VAR, kubeconfig)],
    )
}

/// The FILE of `--kubeconfig FILE` or `--kubeconfig=FILE`, the only argument.
fn kubeconfig_arg(args: &[String]) -> Result<PathBuf, String> {
    let usage = || format!("usage: cargo xtask e2e --kubeconfig FILE (got {args:?})");
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
            assert!(err.starts_with("usage: cargo xtask e2e --kubeconfig FILE"), "{err}");
        }
    }

    #[test]
    fn a_missing_kubeconfig_is_refused_before_cargo_runs() {
        let err = absolute(Path::new("/nonexistent/kubeconfig.yaml")).unwrap_err();
        assert!(err.contains("/nonexistent/kubeconfig.yaml: cannot be read"), "{err}");
    }
}
