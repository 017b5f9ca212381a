//! Every dump under `fixtures/dumps/` is a test: its observations, at a fixed `now`,
//! are snapshotted as core.md's JSON. A file name starting `kueue-` is classified in
//! Kueue mode; one ending `-no-nodes.json` without permission to read Nodes.

use dispatch_kf_model::{Mode, Options, classify, dump};
use jiff::Timestamp;

/// The `now` of every fixture.
const NOW: &str = "2026-11-29T12:00:00Z";

/// The options a fixture's file name asks for.
fn options_for(file: &str) -> Options {
    Options {
        mode: if file.starts_with("kueue-") { Mode::Kueue } else { Mode::Plain },
        nodes_readable: !file.ends_with("-no-nodes.json"),
        backend: "kf".to_owned(),
    }
}

#[test]
fn each_dump_classifies_as_its_snapshot_says() {
    insta::glob!("../../../fixtures", "dumps/*.json", |path| {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(path).unwrap();
        let snapshot = dump::read(&file, &bytes).unwrap();
        let obs = classify(&snapshot, &options_for(&file), NOW.parse::<Timestamp>().unwrap());
        insta::assert_json_snapshot!(obs);
    });
}
