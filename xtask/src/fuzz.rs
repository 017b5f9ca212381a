//! `cargo xtask fuzz [SECONDS]`: every `cargo fuzz` target of `fuzz/`, briefly
//! (`docs/dev/fuzzing.md`).
//!
//! Each target runs for SECONDS (30 by default, libFuzzer's `-max_total_time`), one job,
//! one target after another, on nightly, from `fuzz/`. The committed seeds
//! (`fuzz/corpus/<target>/`) are read and never written: what the fuzzer finds goes to a
//! scratch corpus under `fuzz/target/corpus/<target>/`, kept between runs. Any crash
//! fails the command after every target has run, naming the targets. It is not part of
//! `cargo xtask test` or `ci`: it needs nightly and cargo-fuzz, and minutes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run::{self, project_root};

/// How long each target runs when not told.
const DEFAULT_SECONDS: u64 = 30;

/// The sanitizer the targets build with: none. The project's crates forbid unsafe code,
/// and what the targets look for is a panic or a broken assertion, which needs no
/// sanitizer; without one a run makes about twice the executions.
const SANITIZER: &str = "none";

const USAGE: &str = "usage: cargo xtask fuzz [SECONDS]";

/// Runs every target for the seconds in `args` (default 30).
pub(crate) fn run(args: &[String]) -> run::Result {
    let seconds = seconds(args)?;
    let fuzz = project_root().join("fuzz");
    check_tools(&fuzz)?;
    let targets = targets(
        &std::fs::read_to_string(fuzz.join("Cargo.toml"))
            .map_err(|e| format!("cannot read fuzz/Cargo.toml: {e}"))?,
    );
    if targets.is_empty() {
        return Err("fuzz/Cargo.toml declares no fuzz target".into());
    }
    let mut crashed = Vec::new();
    for target in &targets {
        let scratch = fuzz.join("target").join("corpus").join(target);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let args = run_args(target, &scratch, seconds);
        if let Err(e) = nightly_cargo(&fuzz, &args) {
            eprintln!("xtask: fuzz target {target} failed: {e}");
            crashed.push(target.clone());
        }
    }
    if crashed.is_empty() {
        eprintln!("xtask: {} fuzz targets ran {seconds}s each without a crash", targets.len());
        Ok(())
    } else {
        Err(format!(
            "fuzz targets failed: {} (the input that failed is in fuzz/artifacts/<target>/; \
             reproduce with `cargo +nightly fuzz run -s {SANITIZER} <target> <file>` in fuzz/)",
            crashed.join(", ")
        ))
    }
}

/// The seconds each target runs, from the command's arguments.
fn seconds(args: &[String]) -> Result<u64, String> {
    match args {
        [] => Ok(DEFAULT_SECONDS),
        [s] => match s.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{s:?} is not a number of seconds above zero; {USAGE}")),
        },
        _ => Err(USAGE.into()),
    }
}

/// The arguments of `cargo +nightly` that run `target` for `seconds`, growing `scratch`
/// and reading the committed seeds. No `-jobs`: libFuzzer's default is one job in this
/// process (`-jobs=1` would fork a worker that logs to `fuzz-0.log` instead).
fn run_args(target: &str, scratch: &Path, seconds: u64) -> Vec<String> {
    let seeds = PathBuf::from("corpus").join(target);
    [
        "fuzz",
        "run",
        "--sanitizer",
        SANITIZER,
        target,
        &scratch.display().to_string(),
        &seeds.display().to_string(),
        "--",
        &format!("-max_total_time={seconds}"),
        "-print_final_stats=1",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The `[[bin]]` names of the fuzz crate's manifest, in order.
fn targets(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin && let Some(value) = line.strip_prefix("name") {
            let value = value.trim_start().trim_start_matches('=').trim();
            out.push(value.trim_matches('"').to_owned());
        }
    }
    out
}

/// Fails with what to install when nightly or cargo-fuzz is missing.
fn check_tools(fuzz: &Path) -> run::Result {
    let works =
        |args: &[&str]| cargo_command(fuzz).args(args).output().is_ok_and(|o| o.status.success());
    if !works(&["+nightly", "--version"]) {
        return Err("cargo +nightly does not run: cargo fuzz needs a nightly toolchain; \
                    install it with `rustup toolchain install nightly`"
            .into());
    }
    if !works(&["+nightly", "fuzz", "--version"]) {
        return Err("cargo fuzz is not installed: install it with \
                    `cargo install cargo-fuzz --locked`"
            .into());
    }
    Ok(())
}

/// `cargo` through rustup's proxy, so that `+nightly` chooses the toolchain, in `dir`,
/// without what would point the build elsewhere: the fuzz crate builds in `fuzz/target`.
fn cargo_command(dir: &Path) -> Command {
    let mut command = Command::new("cargo");
    command
        .current_dir(dir)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .env_remove("RUSTC")
        .env_remove(run::E2E_KUBECONFIG);
    command
}

/// Runs `cargo +nightly <args>` in `dir`, failing when it fails.
fn nightly_cargo(dir: &Path, args: &[String]) -> run::Result {
    eprintln!("$ cd fuzz && cargo +nightly {}", args.join(" "));
    let status = cargo_command(dir)
        .arg("+nightly")
        .args(args)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{status}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_default_to_thirty_and_refuse_what_is_not_a_positive_number() {
        assert_eq!(seconds(&[]), Ok(30));
        assert_eq!(seconds(&["600".to_owned()]), Ok(600));
        for bad in ["0", "-5", "ten", "1.5"] {
            assert!(seconds(&[bad.to_owned()]).is_err(), "{bad}");
        }
        assert!(seconds(&["1".to_owned(), "2".to_owned()]).is_err());
    }

    #[test]
    fn a_run_is_one_process_for_the_time_given_growing_the_scratch_corpus_only() {
        let args = run_args("dump", Path::new("/tmp/scratch"), 45);
        let at = |s: &str| args.iter().position(|a| a == s).unwrap();
        assert_eq!(&args[..5], ["fuzz", "run", "--sanitizer", "none", "dump"]);
        // libFuzzer writes new inputs to the first corpus directory only.
        assert_eq!(args[5], "/tmp/scratch");
        assert_eq!(args[6], "corpus/dump");
        assert!(at("--") < at("-max_total_time=45"));
        assert!(!args.iter().any(|a| a.starts_with("-jobs") || a.starts_with("-workers")));
    }

    #[test]
    fn targets_are_the_bin_names_of_the_manifest() {
        let manifest = "[package]\nname = \"dispatch-kf-fuzz\"\n\n[[bin]]\nname = \"dump\"\n\
                        path = \"fuzz_targets/dump.rs\"\n\n[dependencies]\nname = \"x\"\n\n\
                        [[bin]]\nname=\"names\"\n";
        assert_eq!(targets(manifest), ["dump", "names"]);
    }

    /// The committed corpora: every target's file is declared, every declared target
    /// has a few small seeds, and nothing else is kept.
    #[test]
    fn every_fuzz_target_is_declared_and_has_a_small_seed_corpus() {
        let fuzz = project_root().join("fuzz");
        let declared = targets(&std::fs::read_to_string(fuzz.join("Cargo.toml")).unwrap());
        let mut files: Vec<String> = std::fs::read_dir(fuzz.join("fuzz_targets"))
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".rs").map(str::to_owned))
            .collect();
        files.sort();
        let mut sorted = declared.clone();
        sorted.sort();
        assert_eq!(files, sorted, "fuzz/fuzz_targets/*.rs and the [[bin]]s of fuzz/Cargo.toml");
        let mut corpora: Vec<String> = std::fs::read_dir(fuzz.join("corpus"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        corpora.sort();
        assert_eq!(corpora, sorted, "one seed corpus per target, and no other");
        for target in &declared {
            let seeds: Vec<u64> = std::fs::read_dir(fuzz.join("corpus").join(target))
                .unwrap()
                .flatten()
                .map(|e| e.metadata().unwrap().len())
                .collect();
            assert!((1..=12).contains(&seeds.len()), "{target}: {} seeds", seeds.len());
            let total: u64 = seeds.iter().sum();
            assert!(total <= 200 * 1024, "{target}: its seeds are {total} bytes");
        }
    }
}
