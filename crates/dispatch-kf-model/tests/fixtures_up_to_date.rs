//! The committed dumps under `fixtures/dumps/` are exactly what the generator in
//! `tests/support/` writes. Run with `FIXTURES_UPDATE=1` to rewrite them. Hand-made
//! dumps (`hand-*.json`, and `real-*.json` built from objects real clusters printed,
//! each named in `fixtures/dumps/SOURCES.md`) are neither checked nor rewritten here,
//! and the generator may not write a name with those prefixes.

mod support;

use std::collections::BTreeSet;

#[test]
fn generated_dumps_are_up_to_date() {
    let dir = support::dumps_dir();
    let generated = support::generated();
    let names: BTreeSet<&str> = generated.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), generated.len(), "two cases share a file name");
    let hand_named: Vec<&str> = names.iter().copied().filter(|n| is_hand_made(n)).collect();
    assert!(hand_named.is_empty(), "generated names a hand-made dump would use: {hand_named:?}");
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
        .filter(|n| n.ends_with(".json") && !is_hand_made(n))
        .collect();
    let extra: Vec<&String> = on_disk.iter().filter(|n| !names.contains(n.as_str())).collect();
    assert!(
        extra.is_empty(),
        "dumps the generator does not write (name hand-made ones hand-*.json or real-*.json): {extra:?}"
    );
    assert!(generated.len() >= 40, "fewer than 40 dumps");
}

/// Whether a dump's name marks it as not the generator's, so that it leaves it alone:
/// hand-made (`hand-`, `real-`) or recorded on the real control plane (`cluster-`,
/// `cargo xtask fixtures cluster`).
fn is_hand_made(name: &str) -> bool {
    ["hand-", "real-", "cluster-"].iter().any(|prefix| name.starts_with(prefix))
}

/// Every `real-*.json` dump has its line in `SOURCES.md`, and every line names a dump
/// that exists: a real fixture says where its objects come from.
#[test]
fn every_real_dump_names_its_source() {
    let dir = support::dumps_dir();
    let sources = std::fs::read_to_string(dir.join("SOURCES.md")).unwrap();
    let real: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("real-") && n.ends_with(".json"))
        .collect();
    assert!(real.len() >= 7, "fewer than one real dump per refinement: {real:?}");
    for name in &real {
        assert!(sources.contains(&format!("`{name}`")), "{name} has no line in SOURCES.md");
    }
    for line in sources.lines().filter(|l| l.starts_with("- `real-")) {
        let name = line.trim_start_matches("- `").split('`').next().unwrap();
        assert!(real.contains(name), "SOURCES.md names {name}, which is not a dump");
    }
}
