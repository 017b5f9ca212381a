//! `cargo xtask install`: installs the command's two binaries, `dispatch-kf` and the
//! kubectl plugin `kubectl-dispatch`, with `cargo install`, into cargo's bin directory
//! (`~/.cargo/bin`, on the PATH of a usual Rust setup). Then `kubectl dispatch find ...`
//! works as `dispatch-kf find ...` does.

use crate::run;

/// The crate whose binaries are installed, from the project root.
const CLI: &str = "crates/dispatch-kf-cli";

/// The binaries it installs.
pub(crate) const BINARIES: [&str; 2] = ["dispatch-kf", "kubectl-dispatch"];

/// The `cargo install` arguments: both binaries of the CLI crate, from the lock file;
/// extra arguments (`--root DIR`, `--debug`) go to cargo.
fn arguments(extra: &[String]) -> Vec<&str> {
    let mut args = vec!["install", "--path", CLI, "--locked"];
    for binary in BINARIES {
        args.extend(["--bin", binary]);
    }
    args.extend(extra.iter().map(String::as_str));
    args
}

/// Runs `cargo install`, then says how to check it.
pub(crate) fn run(extra: &[String]) -> run::Result {
    run::cargo(&arguments(extra))?;
    eprintln!(
        "xtask: installed {}; try `dispatch-kf demo` or `kubectl dispatch --help`",
        BINARIES.join(" and ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_both_binaries_of_the_cli_crate_from_the_lock_file() {
        let extra = vec!["--root".to_owned(), "/tmp/x".to_owned()];
        assert_eq!(
            arguments(&extra),
            [
                "install",
                "--path",
                "crates/dispatch-kf-cli",
                "--locked",
                "--bin",
                "dispatch-kf",
                "--bin",
                "kubectl-dispatch",
                "--root",
                "/tmp/x"
            ]
        );
    }

    #[test]
    fn the_cli_crate_declares_both_binaries() {
        let manifest =
            std::fs::read_to_string(run::project_root().join(CLI).join("Cargo.toml")).unwrap();
        for binary in BINARIES {
            assert!(manifest.contains(&format!("name = \"{binary}\"")), "{binary}");
        }
    }
}
