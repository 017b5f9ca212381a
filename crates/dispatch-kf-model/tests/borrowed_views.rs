//! The dump read with its text borrowed (`dump::borrow`, what `dispatch-kf classify`
//! uses) classifies exactly as the dump read with its text copied (`dump::read`, what
//! the snapshots and properties use): the views differ in where their text lives, not
//! in what they keep.

mod conventions;

use conventions::options_for;
use dispatch_kf_model::{classify, dump};
use jiff::Timestamp;

#[test]
fn every_dump_classifies_the_same_borrowed_as_copied() {
    let now = "2026-11-29T12:00:00Z".parse::<Timestamp>().unwrap();
    insta::glob!("../../../fixtures", "dumps/*.json", |path| {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(path).unwrap();
        let copied = dump::read(&file, &bytes).unwrap();
        let borrowed = dump::borrow(&file, &bytes).unwrap();
        let options = options_for(&file, &copied);
        assert_eq!(classify(&borrowed, &options, now), classify(&copied, &options, now), "{file}");
    });
}
