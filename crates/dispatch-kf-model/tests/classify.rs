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
