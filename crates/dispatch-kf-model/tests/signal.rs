//! The moments and Events of the real control plane's dumps (`cluster-current-*.json`):
//! what the cause controller would report of each scenario, from the objects alone.

mod conventions;

use std::collections::BTreeMap;

use conventions::{cluster_dump, options_for};
use dispatch_kf_model::signal::{Moment, Trigger, moments, report};
use dispatch_kf_model::{ClassifyOptions, Detail, Snapshot, classify, dump};
use jiff::Timestamp;
use serde_json::{Value, json};

const NOW: &str = "2026-11-29T12:00:00Z";

fn read(file: &str) -> Snapshot {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps");
    dump::read(file, &std::fs::read(path.join(file)).unwrap()).unwrap()
}

/// The options the cause controller classifies with: the cause's own detail alone.
fn told(file: &str, snapshot: &Snapshot) -> ClassifyOptions {
    ClassifyOptions { detail: Detail::CauseOnly, ..options_for(file, snapshot) }
}

/// What a dump's moments report: the Event's name, reason, type and note, or that
/// nothing is reported.
fn reports(file: &str) -> Vec<Value> {
    let snapshot = read(file);
    let observations = classify(&snapshot, &told(file, &snapshot), NOW.parse().unwrap());
    moments(&snapshot)
        .iter()
        .map(|m| {
            let obs = observations.iter().find(|o| o.object.uid == m.uid).unwrap();
            match report(m, obs) {
                Some(r) => json!({
                    "event": m.event_name(),
                    "reason": r.reason,
                    "type": if r.warning { "Warning" } else { "Normal" },
                    "note": r.note,
                    "cause": r.cause.name(),
                }),
                None => json!({ "event": m.event_name(), "reported": false }),
            }
        })
        .collect()
}

#[test]
fn each_scenario_of_the_real_control_plane_reports_its_moments() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps");
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(("current", scenario)) = cluster_dump(&file) {
            all.insert(scenario.to_owned(), reports(&file));
        }
    }
    assert!(all.len() >= 10, "{:?}", all.keys());
    insta::assert_json_snapshot!(all);
}

#[test]
fn an_ended_moment_is_timed_by_the_train_jobs_condition_not_by_its_evidence() {
    let snapshot = read("cluster-current-oom.json");
    let [m] = moments(&snapshot).try_into().unwrap();
    // The Trainer copies the JobSet's Failed time (17:37:54); the OOM-killed rank
    // finished at 17:37:53, and a read without that pod must name the same moment.
    assert_eq!(m.trigger, Trigger::Ended);
    assert_eq!(m.at, Some("2026-12-03T17:37:54Z".parse::<Timestamp>().unwrap()));
    let mut without_pods = snapshot.clone();
    without_pods.pods.clear();
    assert_eq!(moments(&without_pods), [m]);
}

#[test]
fn a_running_job_shows_no_moment_and_a_kueue_eviction_shows_one() {
    assert_eq!(moments(&read("cluster-current-jobset-restart.json")), Vec::<Moment>::new());
    let evicted = moments(&read("cluster-current-kueue-preempted.json"));
    assert_eq!(evicted.iter().map(|m| m.trigger).collect::<Vec<_>>(), [Trigger::Evicted]);
}

#[test]
fn an_event_about_a_train_job_made_by_hand_says_why_it_stopped_not_whose_it_is() {
    let file = "cluster-current-oom.json";
    let dispatchs = read(file);
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps").join(file),
    )
    .unwrap();
    let by_hand =
        dump::read(file, text.replace("dj-01je2e00000000000000000007-s1", "by-hand").as_bytes())
            .unwrap();
    let now = NOW.parse().unwrap();
    let note = |snapshot: &Snapshot, options: &ClassifyOptions| {
        let [m] = moments(snapshot).try_into().unwrap();
        let obs = classify(snapshot, options, now);
        report(&m, obs.iter().find(|o| o.object.uid == m.uid).unwrap()).unwrap().note
    };
    // explain names what makes the job foreign; the Event says only why it stopped, in
    // the words it would use for dispatch's own job.
    let explained = note(&by_hand, &options_for(file, &by_hand));
    assert!(explained.contains("name by-hand is not one dispatch makes"), "{explained}");
    let told_by_hand = note(&by_hand, &told(file, &by_hand));
    let told_dispatchs = note(&dispatchs, &told(file, &dispatchs));
    assert_eq!(told_by_hand, told_dispatchs.replace("dj-01je2e00000000000000000007-s1", "by-hand"));
    assert!(told_by_hand.contains("exited 137: OOMKilled"), "{told_by_hand}");
}
