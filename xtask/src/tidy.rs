//! Checks on the codebase itself, run as a test by `cargo xtask test`.
//!
//! - every `.rs` file starts with a `//!` doc saying what it holds;
//! - the pure crates (`dispatch-core`, `dispatch-kf-model`) depend on nothing that does
//!   I/O and never read the clock or draw randomness;
//! - `docs/architecture.md` names every crate directory;
//! - no unfinished-work markers anywhere: todo, unimplemented and dbg macros, ignored
//!   tests, or tests that expect a panic.

use std::fs;
use std::path::{Path, PathBuf};

use crate::run::project_root;

/// Dependencies the pure crates may not have: I/O runtimes, clients, clocks, randomness.
const FORBIDDEN_IN_PURE: [&str; 9] =
    ["tokio", "kube", "hyper", "reqwest", "rand", "getrandom", "chrono", "tower", "mio"];

/// Calls the pure crates may not make.
const FORBIDDEN_CALLS: [&str; 7] = [
    "Timestamp::now",
    "SystemTime::now",
    "Instant::now",
    "Zoned::now",
    "std::env::var",
    "std::fs::",
    "std::net::",
];

const PURE_CRATES: [&str; 2] = ["dispatch-core", "dispatch-kf-model"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with("target-") || name == ".git" {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn workspace_rust_files() -> Vec<PathBuf> {
    let root = project_root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("xtask"), &mut files);
    files.sort();
    files
}

/// Source text without `#[cfg(test)]` modules, which may do I/O to test the library.
fn non_test_source(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let missing: Vec<String> = workspace_rust_files()
        .into_iter()
        .filter(|p| !fs::read_to_string(p).unwrap_or_default().starts_with("//!"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a leading //! doc:\n{}", missing.join("\n"));
}

#[test]
fn pure_crates_have_no_io_dependencies() {
    for krate in PURE_CRATES {
        let manifest = project_root().join("crates").join(krate).join("Cargo.toml");
        let text = fs::read_to_string(&manifest).unwrap();
        let deps = text.split("[dependencies]").nth(1).unwrap_or("");
        let deps = deps.split("\n[").next().unwrap_or("");
        for line in deps.lines() {
            let name = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
            assert!(
                !FORBIDDEN_IN_PURE.contains(&name),
                "{krate} depends on {name}, which does I/O or reads the clock"
            );
        }
    }
}

#[test]
fn pure_crates_read_no_clock_and_do_no_io() {
    let mut found = Vec::new();
    for krate in PURE_CRATES {
        let mut files = Vec::new();
        rust_files(&project_root().join("crates").join(krate).join("src"), &mut files);
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            for call in FORBIDDEN_CALLS {
                if non_test_source(&text).contains(call) {
                    found.push(format!("{}: {call}", file.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "the pure crates must not do this:\n{}", found.join("\n"));
}

#[test]
fn architecture_doc_names_every_crate() {
    let doc = fs::read_to_string(project_root().join("docs/architecture.md")).unwrap();
    let mut missing = Vec::new();
    for entry in fs::read_dir(project_root().join("crates")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !doc.contains(&format!("`{name}`")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "docs/architecture.md does not name: {missing:?}");
}

#[test]
fn no_unfinished_work_markers() {
    let markers = [
        concat!("todo", "!("),
        concat!("unimplemented", "!("),
        concat!("dbg", "!("),
        concat!("#[", "ignore"),
        concat!("#[", "should_panic"),
    ];
    let mut found = Vec::new();
    for file in workspace_rust_files() {
        let text = fs::read_to_string(&file).unwrap();
        for marker in markers {
            if text.contains(marker) {
                found.push(format!("{}: {marker}", file.display()));
            }
        }
    }
    assert!(found.is_empty(), "unfinished work:\n{}", found.join("\n"));
}
