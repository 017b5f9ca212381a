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

/// Runs `cargo <args>` in the project root, failing when it fails.
pub(crate) fn cargo(args: &[&str]) -> Result {
    cargo_env(args, &[])
}

/// Runs `cargo <args>` with extra environment variables.
pub(crate) fn cargo_env(args: &[&str], env: &[(&str, &str)]) -> Result {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(project_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed: {status}", args.join(" ")))
    }
}
