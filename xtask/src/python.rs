//! `cargo xtask python [--release | --test]`: the wheel of the Python package `dispatch-kf`
//! (`crates/dispatch-kf-py`), built by maturin into `target/wheels/`; and its tests,
//! which `cargo xtask test` runs when Python 3 is on the machine (docs/python.md).
//!
//! maturin and pytest come from the package registry into a venv kept in the target
//! folder (`target/python/tools`), installed when missing; pytest's own wheels are
//! kept beside it (`target/python/wheelhouse`), so a test run installs the package
//! and pytest into a fresh venv (`target/python/fresh`) without the network. The wheel
//! is built in the target folder the workspace's tests use: the dev profile's wheel
//! (what the tests install) reuses their build of the model.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run::{self, project_root, target_dir};

/// The crate maturin builds.
const MANIFEST: &str = "crates/dispatch-kf-py/Cargo.toml";

/// The Python package's tests.
const TESTS: &str = "crates/dispatch-kf-py/tests";

/// What the tools venv installs from the package registry.
const TOOLS: [&str; 2] = ["maturin>=1.9,<2", "pytest>=7"];

/// The Python the package is built and tested with: `$PYTHON`, else `python3`; `None`
/// when there is none that runs.
fn python() -> Option<String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let version = Command::new(&python).arg("--version").output().ok()?;
    version.status.success().then_some(python)
}

/// Runs `program args`, failing when it fails.
fn sh(program: &Path, args: &[&str]) -> run::Result {
    eprintln!("$ {} {}", program.display(), args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(project_root())
        .env_remove(run::E2E_KUBECONFIG)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} {} failed: {status}", program.display(), args.join(" ")))
    }
}

/// The folder of the Python venvs and wheelhouse, in the target folder.
fn python_dir() -> PathBuf {
    target_dir().join("python")
}

/// A program of a venv.
fn bin(venv: &Path, program: &str) -> PathBuf {
    venv.join("bin").join(program)
}

/// The venv with maturin and pytest, made and filled from the registry when missing.
fn tools(python: &str) -> Result<PathBuf, String> {
    let venv = python_dir().join("tools");
    if !bin(&venv, "maturin").exists() || !bin(&venv, "pytest").exists() {
        sh(Path::new(python), &["-m", "venv", &venv.to_string_lossy()])?;
        let mut args = vec!["-m", "pip", "install", "--quiet"];
        args.extend(TOOLS);
        sh(&bin(&venv, "python"), &args)?;
    }
    Ok(venv)
}

/// Builds the wheel into `target/wheels/`, in release or the dev profile; its path.
fn build(python: &str, release: bool) -> Result<PathBuf, String> {
    let tools = tools(python)?;
    let wheels = target_dir().join("wheels");
    // One wheel of this package in the folder: the one just built.
    for old in wheels_in(&wheels) {
        let _ = std::fs::remove_file(old);
    }
    let out = wheels.to_string_lossy().into_owned();
    let mut args = vec!["build", "--locked", "-m", MANIFEST, "--out", &out, "-i", python];
    if release {
        args.push("--release");
    }
    sh(&bin(&tools, "maturin"), &args)?;
    let built = wheels_in(&wheels);
    match built.as_slice() {
        [wheel] => Ok(wheel.clone()),
        _ => Err(format!("expected one dispatch_kf wheel in {out}, found {built:?}")),
    }
}

/// The package's wheels in `dir`.
fn wheels_in(dir: &Path) -> Vec<PathBuf> {
    wheels_named(dir, "dispatch_kf-")
}

/// `cargo xtask python [--release | --test]`: builds the wheel and says where it is;
/// with `--test`, runs the package's tests as `cargo xtask test` does (the command they
/// compare with must have been built: `cargo build -p dispatch-kf-cli`).
pub(crate) fn run(args: &[String]) -> run::Result {
    let release = match args {
        [] => false,
        [flag] if flag == "--release" => true,
        [flag] if flag == "--test" => return test(),
        _ => return Err("usage: cargo xtask python [--release | --test]".into()),
    };
    let python = python().ok_or("no python3 on PATH (or $PYTHON): cannot build the wheel")?;
    let wheel = build(&python, release)?;
    eprintln!("wheel: {}", wheel.display());
    Ok(())
}

/// The package's tests: a dev-profile wheel installed with pip into a fresh venv, then
/// pytest there, comparing `dispatch_kf.classify` with the built `dispatch-kf classify`
/// on every fixture dump. Skipped, saying so, where there is no Python 3.
pub(crate) fn test() -> run::Result {
    let Some(python) = python() else {
        eprintln!(
            "xtask: skipping the Python package's tests (crates/dispatch-kf-py): no python3 on PATH (or $PYTHON)"
        );
        return Ok(());
    };
    let wheel = build(&python, false)?;
    let tools = tools(&python)?;
    let wheelhouse = python_dir().join("wheelhouse");
    let house = wheelhouse.to_string_lossy().into_owned();
    if wheels_named(&wheelhouse, "pytest-").is_empty() {
        sh(&bin(&tools, "python"), &["-m", "pip", "download", "--quiet", "-d", &house, "pytest"])?;
    }
    let fresh = python_dir().join("fresh");
    sh(Path::new(&python), &["-m", "venv", "--clear", &fresh.to_string_lossy()])?;
    let wheel = wheel.to_string_lossy().into_owned();
    let install = ["-m", "pip", "install", "--quiet", "--no-index", "--find-links", &house];
    sh(&bin(&fresh, "python"), &[&install[..], &[wheel.as_str(), "pytest"]].concat())?;
    let cli = target_dir().join("debug").join("dispatch-kf");
    eprintln!("$ DISPATCH_KF_BIN={} pytest {TESTS}", cli.display());
    let status = Command::new(bin(&fresh, "python"))
        // Nothing written into the source tree: no cache folder, no bytecode.
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", TESTS])
        .env("DISPATCH_KF_BIN", &cli)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(project_root())
        .status()
        .map_err(|e| format!("cannot run pytest: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the Python package's tests failed: {status}"))
    }
}

/// The wheels in `dir` whose names start with `prefix`, sorted.
fn wheels_named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(".whl")
        })
        .collect();
    found.sort();
    found
}
