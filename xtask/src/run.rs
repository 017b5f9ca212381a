//! Running cargo from the project's root.

use std::path::PathBuf;
use std::process::Command;

/// The result of one workflow step.
pub(crate) type Result = std::result::Result<(), String>;

/// The workspace root, worked out from this crate's manifest directory.
pub(crate) fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Cargo's target folder: `CARGO_TARGET_DIR` when set, else `target` in the root.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_absolute() { dir } else { project_root().join(dir) })
        .unwrap_or_else(|| project_root().join("target"))
}

/// Runs `cargo <args>` in the project root, failing when it fails.
pub(crate) fn cargo(args: &[&str]) -> Result {
    cargo_env(args, &[])
}

/// The variable that points the end-to-end suite at a real cluster. It reaches cargo
/// only when a workflow passes it (`cargo xtask e2e`), never from the caller's shell:
/// `cargo xtask test` must not run against whatever cluster a user last tested.
pub(crate) const E2E_KUBECONFIG: &str = "DISPATCH_KF_E2E_KUBECONFIG";

/// `cargo <args>` in the project root with extra environment variables, announced.
fn cargo_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("$ cargo {}", args.join(" "));
    let mut command = Command::new(cargo);
    command
        .args(args)
        .env_remove(E2E_KUBECONFIG)
        .envs(env.iter().copied())
        .current_dir(project_root());
    command
}

/// Runs `cargo <args>` with extra environment variables.
pub(crate) fn cargo_env(args: &[&str], env: &[(&str, &str)]) -> Result {
    let status = cargo_command(args, env).status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed: {status}", args.join(" ")))
    }
}

/// Runs `cargo <args>` with extra environment variables, passing its standard output
/// on line by line as it comes and keeping it: whether it succeeded, and that output.
pub(crate) fn cargo_env_output(
    args: &[&str],
    env: &[(&str, &str)],
) -> std::result::Result<(bool, String), String> {
    use std::io::{BufRead, Write};
    let mut child = cargo_command(args, env)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut kept = String::new();
    let mut echo = std::io::stdout().lock();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("cargo's output: {e}"))?;
        // The echo is for the reader; a closed terminal must not stop the run.
        let _ = writeln!(echo, "{line}");
        kept.push_str(&line);
        kept.push('\n');
    }
    let status = child.wait().map_err(|e| format!("cargo: {e}"))?;
    Ok((status.success(), kept))
}

/// A command line's arguments, as the parsers take them (tests).
#[cfg(test)]
pub(crate) fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| (*a).to_owned()).collect()
}
