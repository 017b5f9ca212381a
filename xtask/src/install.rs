//! `cargo xtask install`: installs the command's two binaries, `dispatch-kf` and the
//! kubectl plugin `kubectl-dispatch`, with `cargo install`, into cargo's bin directory
//! (`~/.cargo/bin`, on the PATH of a usual Rust setup). Then `kubectl dispatch find ...`
//! works as `dispatch-kf find ...` does. It then writes the shell completions (bash,
//! zsh, fish) and the man pages that the installed `dispatch-kf` makes into the share
//! folders beside that bin directory, and says where they went.

use std::path::{Path, PathBuf};

use crate::run;

/// The crate whose binaries are installed, from the project root.
const CLI: &str = "crates/dispatch-kf-cli";

/// The binaries it installs, each with the features it is built with: the command with
/// all of them, the kubectl plugin without the simulated cluster (`demo` and `sim
/// serve` are the command's), as `cargo xtask dist` ships it.
pub(crate) const BINARIES: [(&str, &[&str]); 2] =
    [("dispatch-kf", &[]), ("kubectl-dispatch", &["--no-default-features"])];

/// The `cargo install` arguments of each binary of the CLI crate, from the lock file;
/// extra arguments (`--root DIR`, `--debug`) go to cargo.
fn arguments(extra: &[String]) -> Vec<Vec<&str>> {
    BINARIES
        .iter()
        .map(|(binary, features)| {
            let mut args = vec!["install", "--path", CLI, "--locked", "--bin", binary];
            args.extend(features.iter().copied());
            args.extend(extra.iter().map(String::as_str));
            args
        })
        .collect()
}

/// Where each shell's completion script goes, under the install root: the folders
/// bash-completion, zsh (`site-functions`) and fish (`vendor_completions.d`) read.
const COMPLETIONS: [(&str, &str); 3] = [
    ("bash", "share/bash-completion/completions/dispatch-kf"),
    ("zsh", "share/zsh/site-functions/_dispatch-kf"),
    ("fish", "share/fish/vendor_completions.d/dispatch-kf.fish"),
];

/// Where the man pages go, under the install root.
const MAN: &str = "share/man/man1";

/// The install root as cargo picks it: `--root DIR` among the extra arguments, else
/// `$CARGO_INSTALL_ROOT`, else `$CARGO_HOME`, else `~/.cargo`.
fn root(extra: &[String], env: impl Fn(&str) -> Option<String>) -> PathBuf {
    let given = extra.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("--root") {
        Some("") => extra.get(i + 1).cloned(),
        Some(rest) => rest.strip_prefix('=').map(str::to_owned),
        None => None,
    });
    given
        .or_else(|| env("CARGO_INSTALL_ROOT"))
        .or_else(|| env("CARGO_HOME"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env("HOME").unwrap_or_default()).join(".cargo"))
}

/// Runs `cargo install`, writes the completions and man pages, then says how to check it.
pub(crate) fn run(extra: &[String]) -> run::Result {
    for args in arguments(extra) {
        run::cargo(&args)?;
    }
    eprintln!(
        "xtask: installed {}; try `dispatch-kf demo` or `kubectl dispatch --help`",
        BINARIES.map(|(binary, _)| binary).join(" and ")
    );
    shell_files(&root(extra, |k| std::env::var(k).ok()))
}

/// Writes each shell's completion script and the man pages with the installed command.
fn shell_files(root: &Path) -> run::Result {
    let bin = root.join("bin").join("dispatch-kf");
    let command = |args: &[&str]| {
        let out = std::process::Command::new(&bin)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        match out.status.success() {
            true => Ok(out.stdout),
            false => Err(format!("{} {}: {}", bin.display(), args.join(" "), out.status)),
        }
    };
    for (shell, file) in COMPLETIONS {
        let path = root.join(file);
        let script = command(&["completions", shell])?;
        std::fs::create_dir_all(path.parent().unwrap_or(root))
            .and_then(|()| std::fs::write(&path, script))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("xtask: {shell} completions in {}", path.display());
    }
    let man = root.join(MAN);
    command(&["man", &man.display().to_string()])?;
    eprintln!(
        "xtask: man pages in {} (`man dispatch-kf` once its parent share/man is on MANPATH); \
         bash-completion, zsh and fish read the completions when those share folders are \
         on their paths (zsh: fpath; see docs/cli.md)",
        man.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_both_binaries_of_the_cli_crate_from_the_lock_file_the_plugin_without_the_sim() {
        let extra = vec!["--root".to_owned(), "/tmp/x".to_owned()];
        let command = ["install", "--path", "crates/dispatch-kf-cli", "--locked", "--bin"];
        assert_eq!(
            arguments(&extra),
            [
                [&command[..], &["dispatch-kf", "--root", "/tmp/x"]].concat(),
                [&command[..], &["kubectl-dispatch", "--no-default-features", "--root", "/tmp/x"]]
                    .concat(),
            ]
        );
    }

    #[test]
    fn completions_and_man_pages_go_under_the_root_cargo_installs_into() {
        let none = |_: &str| None;
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(root(&args(&["--root", "/opt/x"]), none), PathBuf::from("/opt/x"));
        assert_eq!(root(&args(&["--debug", "--root=/opt/y"]), none), PathBuf::from("/opt/y"));
        let home = |k: &str| (k == "CARGO_HOME").then(|| "/c".to_owned());
        assert_eq!(root(&[], home), PathBuf::from("/c"));
        let user = |k: &str| (k == "HOME").then(|| "/home/u".to_owned());
        assert_eq!(root(&[], user), PathBuf::from("/home/u/.cargo"));
        let shells: Vec<&str> = COMPLETIONS.iter().map(|(shell, _)| *shell).collect();
        assert_eq!(shells, ["bash", "zsh", "fish"]);
    }

    #[test]
    fn the_cli_crate_declares_both_binaries() {
        let manifest =
            std::fs::read_to_string(run::project_root().join(CLI).join("Cargo.toml")).unwrap();
        for (binary, _) in BINARIES {
            assert!(manifest.contains(&format!("name = \"{binary}\"")), "{binary}");
        }
    }
}
