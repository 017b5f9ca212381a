//! Every dump under `fixtures/dumps/` is a test: its observations, at a fixed `now`,
//! are snapshotted as core.md's JSON, with the options its name asks for
//! (`conventions::options_for`).

mod conventions;

use conventions::options_for;
use dispatch_kf_model::{classify, dump};
use jiff::Timestamp;

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
