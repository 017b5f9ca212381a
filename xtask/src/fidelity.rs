//! `cargo xtask fidelity`: the end-to-end suite on the simulated cluster and on the real
//! control plane, each scenario recording how it ended (`DISPATCH_KF_E2E_RECORD`), then
//! a table, side by side, of what the adapter reported and the conditions each object
//! carried. A difference is a place where the sim is not the real thing
//! (docs/dev/sim.md, "Fidelity").
//!
//! `cargo xtask fidelity --stack NAME` takes the real control plane at that stack's
//! versions (`current` by default); `cargo xtask fidelity --compare` prints the table
//! from the last records without running anything.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dispatch_kf_model::names;
use serde_json::Value;

use crate::{cluster, e2e, run};

/// Where each target's records are kept.
pub(crate) fn records(target: &str) -> PathBuf {
    cluster::cache_dir().join("fidelity").join(target)
}

const USAGE: &str = "usage: cargo xtask fidelity [--stack NAME] | --compare";

/// What `fidelity` was asked for: run on a stack, or only compare the last records.
fn parse(args: &[String]) -> Result<Option<&'static cluster::Stack>, String> {
    match cluster::take_stack(args)? {
        (stack, rest) if rest.is_empty() => Ok(Some(stack.unwrap_or_else(cluster::default_stack))),
        (None, rest) if rest == ["--compare"] => Ok(None),
        _ => Err(format!("{USAGE} (got {args:?})")),
    }
}

/// Runs both targets (unless `--compare`), then prints the table.
pub(crate) fn run(args: &[String]) -> run::Result {
    if let Some(stack) = parse(args)? {
        for target in ["sim", "real"] {
            let _ = std::fs::remove_dir_all(records(target));
        }
        e2e::suite_recording(None, &records("sim"))?;
        record_real(stack)?;
    }
    print!("{}", table(&records("sim"), &records("real"))?);
    Ok(())
}

/// The suite on the real control plane of `stack` with Kueue and the gate, recording
/// into `records("real")`; the control plane is stopped at the end, passed or not.
pub(crate) fn record_real(stack: &'static cluster::Stack) -> run::Result {
    let _ = std::fs::remove_dir_all(records("real"));
    let record = || {
        let kubeconfig = e2e::up(stack, e2e::Mode::Kueue)?;
        e2e::suite_recording(Some(&kubeconfig), &records("real"))
    };
    let result = record();
    let stopped = cluster::down();
    result.and(stopped)
}

/// `cargo xtask fixtures cluster [--stack NAME] [--from-records]`: the dump each scenario
/// of the suite ended with on the real control plane at a stack's versions (`current`
/// by default), kept as `fixtures/dumps/cluster-<stack>-<scenario>.json` (their
/// snapshots are then reviewed like any other, and `cluster_dumps` checks that each
/// scenario classifies alike on every stack); with `--from-records`, from the last
/// records instead of a new run (the caller vouches they are that stack's).
pub(crate) fn fixtures(args: &[String]) -> run::Result {
    const USAGE: &str = "usage: cargo xtask fixtures cluster [--stack NAME] [--from-records]";
    let (stack, rest) = cluster::take_stack(args)?;
    let stack = stack.unwrap_or_else(cluster::default_stack);
    match rest.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["cluster"] => record_real(stack)?,
        ["cluster", "--from-records"] => {}
        _ => return Err(format!("{USAGE} (got {args:?})")),
    }
    let dumps = crate::run::project_root().join("fixtures").join("dumps");
    let found = scenarios(&records("real"));
    if found.is_empty() {
        return Err(format!("no records in {}", records("real").display()));
    }
    for scenario in found {
        let from = records("real").join(format!("{scenario}.dump.json"));
        let to = dumps.join(format!("cluster-{}-{scenario}.json", stack.name));
        std::fs::copy(&from, &to)
            .map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))?;
        eprintln!("xtask: wrote {}", to.display());
    }
    Ok(())
}

/// The scenarios recorded in `dir`.
fn scenarios(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return BTreeSet::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".observation.json").map(str::to_owned)
        })
        .collect()
}

fn read(dir: &Path, scenario: &str, what: &str) -> Value {
    let path = dir.join(format!("{scenario}.{what}.json"));
    std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

/// The markdown table: per scenario, the adapter's report, then each kind's conditions.
pub(crate) fn table(sim: &Path, real: &Path) -> Result<String, String> {
    let all: BTreeSet<String> = scenarios(sim).union(&scenarios(real)).cloned().collect();
    if all.is_empty() {
        return Err(format!("no records in {} or {}", sim.display(), real.display()));
    }
    let mut out = String::from("| scenario | what | sim | real | same |\n|---|---|---|---|---|\n");
    for scenario in &all {
        let rows = [(
            "adapter",
            report(&read(sim, scenario, "observation")),
            report(&read(real, scenario, "observation")),
        )];
        let (sim_dump, real_dump) = (read(sim, scenario, "dump"), read(real, scenario, "dump"));
        let kinds = ["TrainJob", "JobSet", "Job", "Pod", "Workload", "Node"];
        let conditions = kinds
            .iter()
            .map(|kind| (*kind, conditions_of(&sim_dump, kind), conditions_of(&real_dump, kind)));
        for (what, a, b) in rows.into_iter().chain(conditions) {
            if a.is_empty() && b.is_empty() {
                continue;
            }
            let same = if a == b { "yes" } else { "**no**" };
            out.push_str(&format!(
                "| {scenario} | {what} | {} | {} | {same} |\n",
                cell(&a),
                cell(&b)
            ));
        }
    }
    Ok(out)
}

fn cell(text: &str) -> String {
    if text.is_empty() { "(none)".to_owned() } else { text.replace('|', "\\|").replace('\n', " ") }
}

/// What the adapter reported: state, cause, provenance, execution, exit code, detail.
fn report(observation: &Value) -> String {
    if observation.is_null() {
        return String::new();
    }
    let text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
    let cause = &observation["cause"];
    let execution = &observation["execution"];
    format!(
        "{}; {}; {}; exit {}; execution {}+{}; {}",
        text(&observation["state"]),
        text(&cause["kind"]),
        text(&cause["provenance"]),
        text(&cause["exitCode"]),
        text(&execution["admission"]),
        text(&execution["restartAttempt"]),
        normalize(&text(&cause["detail"])),
    )
}

/// The distinct conditions (type=status reason: message) of a kind's objects in a dump,
/// with pods' terminated container states; names of generated objects are normalized so
/// the two targets compare.
fn conditions_of(dump: &Value, kind: &str) -> String {
    let items = dump["items"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut seen = BTreeSet::new();
    for item in items.iter().filter(|i| i["kind"] == kind) {
        let conditions =
            item["status"]["conditions"].as_array().map(Vec::as_slice).unwrap_or_default();
        for c in conditions {
            let message = c["message"].as_str().unwrap_or_default();
            let reason = c["reason"].as_str().unwrap_or_default();
            seen.insert(format!(
                "{}={} {reason}: {}",
                c["type"].as_str().unwrap_or_default(),
                c["status"].as_str().unwrap_or_default(),
                normalize(message)
            ));
        }
        let statuses =
            item["status"]["containerStatuses"].as_array().map(Vec::as_slice).unwrap_or_default();
        for s in statuses {
            let t = &s["state"]["terminated"];
            if !t.is_null() {
                seen.insert(format!(
                    "{} terminated {} {}: {}",
                    s["name"].as_str().unwrap_or_default(),
                    t["exitCode"],
                    t["reason"].as_str().unwrap_or_default(),
                    normalize(t["message"].as_str().unwrap_or_default().trim())
                ));
            }
        }
        if kind == "Pod" {
            seen.insert(format!("phase {}", item["status"]["phase"].as_str().unwrap_or_default()));
        }
    }
    seen.into_iter().collect::<Vec<_>>().join("; ")
}

/// Replaces what differs by construction between two runs: generated name suffixes,
/// UIDs and times.
fn normalize(text: &str) -> String {
    let mut out = Vec::new();
    for word in text.split(' ') {
        let trimmed = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-');
        let uid_like = trimmed.len() == 36 && trimmed.matches('-').count() == 4;
        let time_like = trimmed.len() >= 20 && trimmed.contains('T') && trimmed.ends_with('Z');
        let pod_like = names::parse_prefix(trimmed).is_some()
            && trimmed.rsplit('-').next().is_some_and(|s| s.len() == 5);
        out.push(if uid_like {
            word.replace(trimmed, "<uid>")
        } else if time_like {
            word.replace(trimmed, "<time>")
        } else if pod_like {
            let (stem, _) = trimmed.rsplit_once('-').expect("checked");
            word.replace(trimmed, &format!("{stem}-<x>"))
        } else {
            word.to_owned()
        });
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::args;
    use serde_json::json;

    #[test]
    fn fidelity_runs_on_a_stack_or_only_compares() {
        let name = |given: &[&str]| parse(&args(given)).map(|s| s.map(|s| s.name));
        assert_eq!(name(&[]), Ok(Some("current")));
        assert_eq!(name(&["--stack", "oldest"]), Ok(Some("oldest")));
        assert_eq!(name(&["--compare"]), Ok(None));
        for bad in [&["--compare", "--stack", "oldest"][..], &["--stack", "nope"], &["--what"]] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn generated_names_uids_and_times_compare_equal() {
        assert_eq!(
            normalize(
                "pod dj-01je2e00000000000000000005-s1-node-0-0-x7k2p: uid 0b7e0a3c-1c0e-4a50-9f0e-7a1e2d3c4b5a at 2026-12-01T14:00:00Z"
            ),
            "pod dj-01je2e00000000000000000005-s1-node-0-0-<x>: uid <uid> at <time>"
        );
    }

    #[test]
    fn a_kinds_conditions_are_listed_once_each() {
        let dump = json!({"items": [
            {"kind": "Pod", "status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}],
             "containerStatuses": [{"name": "node", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}},
            {"kind": "Pod", "status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}]}},
            {"kind": "JobSet", "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
        ]});
        assert_eq!(
            conditions_of(&dump, "Pod"),
            "Ready=False PodFailed: ; node terminated 1 Error: ; phase Failed"
        );
    }
}
