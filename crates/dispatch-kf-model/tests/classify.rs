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

/// `classify_train_jobs` gives each TrainJob of every dump the observation `classify`
/// gives it in the mode it picks (here, by Kueue's queue-name label, as
/// `dispatch-kf explain` picks), and reports no orphans.
#[test]
fn each_train_job_classified_in_its_own_mode_is_as_classify_in_that_mode() {
    use dispatch_core::ObjectKind;
    use dispatch_kf_model::{Mode, classify_train_jobs};
    let now = NOW.parse::<Timestamp>().unwrap();
    let mut queued = 0;
    insta::glob!("../../../fixtures", "dumps/*.json", |path| {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let snapshot = dump::read(&file, &std::fs::read(path).unwrap()).unwrap();
        let options = options_for(&file, &snapshot);
        let mode_of = |tj: &_| Mode::of_train_job(tj, true);
        let explained = classify_train_jobs(&snapshot, &options, mode_of, now);
        assert_eq!(explained.len(), snapshot.train_jobs.len(), "{file}");
        for (obs, tj) in explained.iter().zip(sorted(&snapshot.train_jobs)) {
            let mode = mode_of(tj);
            queued += usize::from(mode == Mode::Kueue);
            let in_mode = dispatch_kf_model::ClassifyOptions { mode, ..options.clone() };
            let whole = classify(&snapshot, &in_mode, now);
            let same = whole
                .iter()
                .find(|o| o.object == obs.object && o.object.kind == ObjectKind::TrainJob);
            assert_eq!(Some(obs), same, "{file}: {}", obs.object.name);
        }
    });
    assert!(queued > 0, "some dump holds a TrainJob with Kueue's queue-name label");
}

/// The TrainJobs in the order observations come: namespace, name, UID.
fn sorted(
    train_jobs: &[dispatch_kf_model::view::TrainJob],
) -> Vec<&dispatch_kf_model::view::TrainJob> {
    let mut out: Vec<_> = train_jobs.iter().collect();
    out.sort_by_key(|tj| (tj.meta.namespace(), tj.meta.name(), tj.meta.uid()));
    out
}

/// A capture of deleted pods with a gap (its watch lost its place and listed anew) is
/// said on an observation the missing pods could change, an ended one or one of
/// unknown cause, and on no other.
#[test]
fn a_gap_in_the_captured_pods_is_said_where_it_could_change_the_answer() {
    let read = |file: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/dumps")
            .join(file);
        dump::read(file, &std::fs::read(path).unwrap()).unwrap()
    };
    let now = NOW.parse::<Timestamp>().unwrap();
    let gap: Timestamp = "2026-11-29T11:00:00Z".parse().unwrap();
    let note = "pods deleted before 2026-11-29T11:00:00Z may be missing from the evidence: \
                the watch of pods lost its place then and listed anew";
    for (file, said) in
        [("cluster-current-node-lost.json", true), ("running-restart-j1.json", false)]
    {
        let mut snapshot = read(file);
        let options = options_for(file, &snapshot);
        let without = classify(&snapshot, &options, now);
        assert!(without.iter().all(|o| !o.cause.detail.contains("may be missing")), "{file}");
        snapshot.evidence_gap = Some(gap);
        let with = classify(&snapshot, &options, now);
        assert_eq!(with[0].cause.detail.contains(note), said, "{file}: {}", with[0].cause.detail);
        assert_eq!((with[0].state, with[0].cause.kind), (without[0].state, without[0].cause.kind));
    }
}
