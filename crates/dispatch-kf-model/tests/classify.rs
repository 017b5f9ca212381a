//! Every dump under `fixtures/dumps/` is a test: its observations, at a fixed `now`,
//! are snapshotted as core.md's JSON, with the options its name asks for
//! (`conventions::options_for`).

mod conventions;

use std::collections::BTreeMap;

use conventions::{cluster_dump, options_for};
use dispatch_kf_model::{classify, dump};
use jiff::Timestamp;
use serde_json::{Value, json};

/// The `now` of every fixture.
const NOW: &str = "2026-11-29T12:00:00Z";

#[test]
fn each_dump_classifies_as_its_snapshot_says() {
    insta::glob!("../../../fixtures", "dumps/*.json", |path| {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(path).unwrap();
        let snapshot = dump::read(&file, &bytes).unwrap();
        let obs =
            classify(&snapshot, &options_for(&file, &snapshot), NOW.parse::<Timestamp>().unwrap());
        insta::assert_json_snapshot!(obs);
    });
}

/// The scenarios whose cluster itself behaves otherwise from one release to another,
/// and why: their dumps are not compared across stacks.
const RELEASE_DEPENDENT: &[(&str, &str)] = &[(
    "kueue-unguarded",
    "Kueue v0.17 runs a ClusterQueue's admission checks on every Workload, and from v0.18 \
     only for the flavors it assigned: on a queue that stops covering pods, the job runs \
     on admission 1 there, and unguarded (execution unknown, with a note saying why) on \
     the newer ones",
)];

/// The real control plane's dumps of one scenario, taken at each stack's versions
/// (`cluster-<stack>-<scenario>.json`), classify alike: every object the same state and
/// the same cause, by the same source. The cause a user gets must not depend on the
/// versions they run; what does differ between stacks (UIDs, pod names, messages'
/// words, times) is left out, and so are the scenarios of [`RELEASE_DEPENDENT`].
#[test]
fn each_scenario_of_the_real_control_plane_classifies_alike_on_every_stack() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps");
    let mut by_scenario: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some((stack, scenario)) = cluster_dump(&file) else { continue };
        let bytes = std::fs::read(dir.join(&file)).unwrap();
        let snapshot = dump::read(&file, &bytes).unwrap();
        let now = NOW.parse::<Timestamp>().unwrap();
        let seen: Vec<Value> = classify(&snapshot, &options_for(&file, &snapshot), now)
            .iter()
            .map(|o| {
                let o = serde_json::to_value(o).unwrap();
                json!([
                    o["object"]["kind"],
                    o["object"]["name"],
                    o["state"],
                    o["adminHeld"],
                    o["cause"]["kind"],
                    o["cause"]["provenance"],
                    o["execution"]
                ])
            })
            .collect();
        by_scenario.entry(scenario.to_owned()).or_default().push((stack.to_owned(), json!(seen)));
    }
    let mut compared = 0;
    for (scenario, stacks) in &by_scenario {
        if RELEASE_DEPENDENT.iter().any(|(name, _)| name == scenario) {
            continue;
        }
        let (first, expected) = &stacks[0];
        for (stack, seen) in &stacks[1..] {
            assert_eq!(seen, expected, "{scenario}: {stack} against {first}");
            compared += 1;
        }
    }
    assert!(compared > 0, "no scenario has dumps of two stacks: {by_scenario:#?}");
}
