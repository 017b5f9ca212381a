//! The committed dumps under `fixtures/dumps/` are exactly what the generator in
//! `tests/support/` writes. Run with `FIXTURES_UPDATE=1` to rewrite them.

mod support;

use std::collections::BTreeSet;

#[test]
fn generated_dumps_are_up_to_date() {
    let dir = support::dumps_dir();
    let generated = support::generated();
    let names: BTreeSet<&str> = generated.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), generated.len(), "two cases share a file name");
    if std::env::var_os("FIXTURES_UPDATE").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in &generated {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let mut stale = Vec::new();
    for (name, text) in &generated {
        if std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(text.as_str()) {
            stale.push(name.clone());
        }
    }
    assert!(stale.is_empty(), "out of date (run with FIXTURES_UPDATE=1): {stale:?}");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with("hand-"))
        .collect();
    let extra: Vec<&String> = on_disk.iter().filter(|n| !names.contains(n.as_str())).collect();
    assert!(
        extra.is_empty(),
        "dumps the generator does not write (name hand-written ones hand-*.json): {extra:?}"
    );
    assert!(generated.len() >= 40, "fewer than 40 dumps");
}
