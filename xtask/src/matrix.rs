//! `cargo xtask matrix [--stack A,B]`: every stack of the versions table (the supported
//! ones unless named), each on the real control plane twice, as `e2e --real` runs it:
//! `cluster up` and the suite, then `cluster up --kueue`, the gate and the suite. A
//! stack kept to be refused gets, in each mode it is refused in, the CLI's refusal
//! test (`crates/dispatch-kf-cli/tests/refusal.rs`) instead of the suite. Each
//! scenario's verdict is read from the test harness's lines and kept per stack in
//! `docs/compatibility.json`; `docs/compatibility.md` is then written from it and the
//! stacks table. Stacks not run keep their earlier results, so a partial run updates
//! its own columns only; after each stack both files are written, so an interrupted run
//! keeps what it finished.
//!
//! `cargo xtask matrix --docs-only` writes `docs/compatibility.md` from the kept
//! results without running anything (after a change to the stacks table).

mod render;
mod results;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The line of the page below which the matrix writes; the tidy checks read above it.
#[cfg(test)]
pub(crate) use render::MARKER;
use results::{ModeRun, Results, StackRun, Verdict};

use crate::cluster::{self, STACKS, Stack, Support};
use crate::e2e::{self, Mode};
use crate::run;

const USAGE: &str = "usage: cargo xtask matrix [--stack NAME,NAME...] | --docs-only";

/// The results, relative to the project root.
const RESULTS: &str = "docs/compatibility.json";
/// The page written from them.
const PAGE: &str = "docs/compatibility.md";

/// What `matrix` was asked for.
#[derive(Debug, PartialEq)]
enum Request {
    /// Run these stacks, then write the page.
    Run(Vec<&'static Stack>),
    /// Only write the page.
    DocsOnly,
}

fn parse(args: &[String]) -> Result<Request, String> {
    let names = match args {
        [] => {
            return Ok(Request::Run(
                STACKS.iter().filter(|s| s.support == Support::Supported).collect(),
            ));
        }
        [flag] if flag == "--docs-only" => return Ok(Request::DocsOnly),
        [flag, names] if flag == "--stack" => names.as_str(),
        [one] => one.strip_prefix("--stack=").ok_or_else(|| format!("{USAGE} (got {args:?})"))?,
        _ => return Err(format!("{USAGE} (got {args:?})")),
    };
    let mut stacks: Vec<&'static Stack> = Vec::new();
    for name in names.split(',') {
        let stack = cluster::stack(name.trim())?;
        if !stacks.contains(&stack) {
            stacks.push(stack);
        }
    }
    Ok(Request::Run(stacks))
}

/// Runs what `args` asks for; fails naming each supported stack with a failure.
pub(crate) fn run(args: &[String]) -> run::Result {
    let stacks = match parse(args)? {
        Request::DocsOnly => return write(&read_results()?),
        Request::Run(stacks) => stacks,
    };
    let mut results = read_results()?;
    let mut failed = Vec::new();
    for stack in stacks {
        eprintln!("xtask: matrix: stack {}", stack.name);
        let run = run_stack(stack)?;
        if !run.modes.values().all(ModeRun::passed) {
            failed.push(stack.name);
        }
        results = results.merged([(stack.name.to_owned(), run)].into());
        write(&results)?;
    }
    eprintln!("xtask: wrote {RESULTS} and {PAGE}");
    match failed.as_slice() {
        [] => Ok(()),
        names => Err(format!("stacks with failures: {} ({PAGE})", names.join(", "))),
    }
}

/// Both modes of one stack (a stack refused in Kueue mode only, that mode): the e2e
/// suite on a supported stack, the CLI's refusal test on a refused one. A cluster that
/// does not come up is recorded, not returned.
fn run_stack(stack: &'static Stack) -> Result<StackRun, String> {
    let (commit, dirty) = commit()?;
    let mut modes = BTreeMap::new();
    for mode in Mode::BOTH {
        if matches!(stack.support, Support::Refused(r) if r.kueue_only && mode == Mode::Plain) {
            continue;
        }
        let run = match e2e::up(stack, mode) {
            Err(e) => {
                ModeRun { error: Some(format!("cluster up failed: {e}")), ..ModeRun::default() }
            }
            Ok(kubeconfig) => match stack.support {
                Support::Supported => verdicts(e2e::suite_output(&kubeconfig)?),
                Support::Refused(refusal) => {
                    verdicts(e2e::refusal_output(&kubeconfig, mode, refusal.words)?)
                }
            },
        };
        modes.insert(mode.name().to_owned(), run);
    }
    cluster::down()?;
    Ok(StackRun { date: today(), commit, dirty, versions: stack.versions(), modes })
}

/// The verdicts of a test run, read from the harness's standard output.
fn verdicts((succeeded, stdout): (bool, String)) -> ModeRun {
    let scenarios = results::verdicts(&stdout);
    let failures = scenarios.values().any(|v| *v == Verdict::Fail);
    let error = if scenarios.is_empty() {
        Some("the suite did not run: cargo test failed before any scenario ended".to_owned())
    } else if !succeeded && !failures {
        Some("cargo test failed after the scenarios it reports".to_owned())
    } else {
        None
    };
    ModeRun { error, scenarios }
}

fn root_file(relative: &str) -> PathBuf {
    run::project_root().join(relative)
}

/// The kept results; none before the first run.
fn read_results() -> Result<Results, String> {
    let file = root_file(RESULTS);
    match std::fs::read_to_string(&file) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Results::default()),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

/// The page as the results and the stacks table make it.
fn page(results: &Results) -> Result<String, String> {
    let file = root_file(PAGE);
    let existing =
        std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let modes = Mode::BOTH.map(Mode::name);
    render::splice(&existing, &render::generated(results, &STACKS, &modes))
}

/// Writes the results and the page.
fn write(results: &Results) -> run::Result {
    let json = serde_json::to_string_pretty(results).expect("results are JSON") + "\n";
    let page = page(results)?;
    for (relative, text) in [(RESULTS, json), (PAGE, page)] {
        let file = root_file(relative);
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(())
}

/// `git rev-parse HEAD`, and whether the work tree has changes not committed.
fn commit() -> Result<(String, bool), String> {
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .args(args)
            .current_dir(run::project_root())
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        match output.status.success() {
            true => Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned()),
            false => {
                Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr)))
            }
        }
    };
    // The matrix's own outputs, written after each stack, do not make the next dirty.
    let others = [
        "status",
        "--porcelain",
        "--",
        ".",
        ":!docs/compatibility.json",
        ":!docs/compatibility.md",
    ];
    Ok((git(&["rev-parse", "HEAD"])?, !git(&others)?.is_empty()))
}

/// Today, `YYYY-MM-DD` in UTC.
fn today() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    civil_date(seconds / 86_400)
}

/// The calendar date `days` days after 1970-01-01 (the proleptic Gregorian calendar,
/// counted in 400-year eras as in Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> String {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::args;

    fn names(request: Result<Request, String>) -> Vec<&'static str> {
        match request {
            Ok(Request::Run(stacks)) => stacks.iter().map(|s| s.name).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_matrix_runs_every_supported_stack_or_those_named() {
        assert_eq!(names(parse(&[])), ["current", "oldest", "newest"]);
        assert_eq!(names(parse(&args(&["--stack", "oldest,newest,oldest"]))), ["oldest", "newest"]);
        assert_eq!(names(parse(&args(&["--stack=trainer-v2.1"]))), ["trainer-v2.1"]);
        assert_eq!(parse(&args(&["--docs-only"])), Ok(Request::DocsOnly));
    }

    #[test]
    fn the_matrix_refuses_an_unknown_stack_naming_the_known_ones() {
        let err = parse(&args(&["--stack", "current,nope"])).unwrap_err();
        assert!(err.contains("\"nope\"") && err.contains("oldest"), "{err}");
        for bad in [&["--stack"][..], &["--docs-only", "--stack", "oldest"], &["--what"]] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn days_since_1970_are_calendar_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_790), "2026-12-03");
    }

    #[test]
    fn compatibility_md_is_written_from_its_results_and_the_stacks_table() {
        let results = read_results().unwrap();
        let written = std::fs::read_to_string(root_file(PAGE)).unwrap();
        assert!(
            written == page(&results).unwrap(),
            "{PAGE} is not what its results and the stacks table make: run cargo xtask matrix --docs-only"
        );
    }
}
