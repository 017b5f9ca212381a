//! What `cargo xtask matrix` found, as kept in `docs/compatibility.json`: per stack,
//! when and at which commit it ran, the versions it ran, and per mode each scenario's
//! verdict, read from the test harness's own lines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Every stack's last run, by stack name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Results {
    pub(crate) stacks: BTreeMap<String, StackRun>,
}

/// One stack's last run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StackRun {
    /// The day it ran, `YYYY-MM-DD` (UTC).
    pub(crate) date: String,
    /// `git rev-parse HEAD` when it ran.
    pub(crate) commit: String,
    /// Whether the work tree had changes not committed.
    pub(crate) dirty: bool,
    /// The versions it ran (`Stack::versions`): a result of other versions is stale.
    pub(crate) versions: Vec<String>,
    /// By mode name (`plain`, `kueue`).
    pub(crate) modes: BTreeMap<String, ModeRun>,
}

/// One mode of one stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ModeRun {
    /// Why the suite did not run to its end: the cluster did not come up, or cargo
    /// failed before any scenario ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// Each scenario's verdict, by test name.
    pub(crate) scenarios: BTreeMap<String, Verdict>,
}

/// How one scenario ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Pass,
    Fail,
    /// Ignored by the harness, or passed saying `skipped:` (the Kueue scenario on a
    /// cluster without Kueue).
    Skip,
}

impl Results {
    /// The results with `runs` in place of those stacks' earlier runs; the other
    /// stacks' results are kept as they were.
    pub(crate) fn merged(mut self, runs: BTreeMap<String, StackRun>) -> Results {
        self.stacks.extend(runs);
        self
    }
}

impl ModeRun {
    /// Whether every scenario passed or skipped, and the suite ran.
    pub(crate) fn passed(&self) -> bool {
        self.error.is_none()
            && !self.scenarios.is_empty()
            && self.scenarios.values().all(|v| *v != Verdict::Fail)
    }
}

/// The verdicts in the standard output of a libtest harness run with `--show-output`:
/// `test NAME ... ok|FAILED|ignored` (the word may come on a line of its own when
/// the harness said meanwhile that the test runs long), and a passed test whose
/// captured output has a line starting `skipped:` is a skip. A name with a module path
/// (`told::...`) is a unit test of the suite's own helpers, not a scenario, and has no
/// verdict here; if it fails, the harness's exit status fails the run all the same.
pub(crate) fn verdicts(stdout: &str) -> BTreeMap<String, Verdict> {
    let mut found = BTreeMap::new();
    let mut pending: Option<String> = None;
    let mut captured: Option<String> = None;
    let mut skipped = Vec::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, word)) = rest.split_once(" ... ")
        {
            match verdict(word) {
                Some(v) => {
                    found.insert(name.to_owned(), v);
                }
                None => pending = Some(name.to_owned()),
            }
        } else if let Some(v) = verdict(line)
            && let Some(name) = pending.take()
        {
            found.insert(name, v);
        } else if let Some(name) =
            line.strip_prefix("---- ").and_then(|l| l.strip_suffix(" stdout ----"))
        {
            captured = Some(name.to_owned());
        } else if line.starts_with("skipped:")
            && let Some(name) = &captured
        {
            skipped.push(name.clone());
        } else if line == "successes:" || line == "failures:" {
            captured = None;
        }
    }
    for name in skipped {
        if let Some(v @ Verdict::Pass) = found.get_mut(&name) {
            *v = Verdict::Skip;
        }
    }
    found.retain(|name, _| !name.contains("::"));
    found
}

fn verdict(word: &str) -> Option<Verdict> {
    match word.trim_end() {
        "ok" => Some(Verdict::Pass),
        "FAILED" => Some(Verdict::Fail),
        w if w == "ignored" || w.starts_with("ignored,") => Some(Verdict::Skip),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "\
running 4 tests
test a_job_runs ... ok
test a_kueue_job_is_admitted ... ok
test a_lost_node_is_node_lost ... test a_lost_node_is_node_lost has been running for over 60 seconds
FAILED
test not_here ... ignored, needs a GPU

successes:

---- a_job_runs stdout ----
waiting for pods

---- a_kueue_job_is_admitted stdout ----
skipped: the cluster of /k does not serve Kueue's API (404)


successes:
    a_job_runs
    a_kueue_job_is_admitted

failures:

---- a_lost_node_is_node_lost stdout ----
skipped: not really, a failure that says so

failures:
    a_lost_node_is_node_lost

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 200.0s
";

    #[test]
    fn each_scenarios_verdict_is_read_from_the_harness_lines() {
        let found = verdicts(RUN);
        let want = [
            ("a_job_runs", Verdict::Pass),
            ("a_kueue_job_is_admitted", Verdict::Skip),
            ("a_lost_node_is_node_lost", Verdict::Fail),
            ("not_here", Verdict::Skip),
        ];
        assert_eq!(found, want.map(|(n, v)| (n.to_owned(), v)).into_iter().collect());
    }

    #[test]
    fn a_unit_test_of_the_suites_helpers_is_no_scenario() {
        let run = "test told::reads_a_log ... ok\ntest a_job_runs ... ok\n";
        assert_eq!(verdicts(run), BTreeMap::from([("a_job_runs".to_owned(), Verdict::Pass)]));
    }

    #[test]
    fn output_without_test_lines_has_no_verdicts() {
        assert!(verdicts("error[E0425]: cannot find value\ntest result: nothing\n").is_empty());
    }

    #[test]
    fn a_mode_passed_only_if_it_ran_and_nothing_failed() {
        let mut run = ModeRun::default();
        assert!(!run.passed(), "nothing ran");
        run.scenarios.insert("a".into(), Verdict::Pass);
        run.scenarios.insert("b".into(), Verdict::Skip);
        assert!(run.passed());
        run.scenarios.insert("c".into(), Verdict::Fail);
        assert!(!run.passed());
        let up = ModeRun { error: Some("cluster up failed".into()), ..ModeRun::default() };
        assert!(!up.passed());
    }

    #[test]
    fn a_partial_run_replaces_only_its_own_stacks() {
        let run = |date: &str| StackRun {
            date: date.into(),
            commit: "c".into(),
            dirty: false,
            versions: vec![],
            modes: BTreeMap::new(),
        };
        let before = Results {
            stacks: [("current", run("1")), ("oldest", run("1"))]
                .map(|(n, r)| (n.to_owned(), r))
                .into(),
        };
        let after = before.merged([("oldest".to_owned(), run("2"))].into());
        assert_eq!(after.stacks["current"].date, "1");
        assert_eq!(after.stacks["oldest"].date, "2");
    }
}
