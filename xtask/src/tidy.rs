//! Checks on the codebase itself, run as a test by `cargo xtask test`.
//!
//! - every `.rs` file starts with a `//!` doc saying what it holds;
//! - the pure crates (`dispatch-core`, `dispatch-kf-model`) depend on nothing that does
//!   I/O and never read the clock or draw randomness;
//! - `docs/architecture.md` names every crate directory;
//! - no unfinished-work markers anywhere: todo, unimplemented and dbg macros, ignored
//!   tests, or tests that expect a panic;
//! - each rule in one place: dispatch's label and annotation keys are spelled only in
//!   the model's `keys.rs`, and the object-name prefix only in its `names.rs`;
//! - in `dispatch-kf`, only `edge.rs` reads the clock or draws randomness.

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

/// Library source outside test code: not under `tests/`, not a `tests.rs`, and without
/// its `#[cfg(test)]` part.
fn library_sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files
        .into_iter()
        .filter(|p| !p.components().any(|c| c.as_os_str() == "tests") && !p.ends_with("tests.rs"))
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap();
            let code = non_test_source(&text).to_owned();
            (p, code)
        })
        .collect()
}

/// The lines of `code` that contain one of `needles` outside a comment.
fn code_lines_with(code: &str, needles: &[&str]) -> Vec<String> {
    code.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| needles.iter().any(|n| line.contains(n)))
        .map(|(i, line)| format!("{}: {}", i + 1, line.trim()))
        .collect()
}

#[test]
fn dispatch_keys_and_the_name_prefix_are_spelled_in_one_place() {
    let homes = ["crates/dispatch-kf-model/src/keys.rs", "crates/dispatch-kf-model/src/names.rs"];
    let literals = [concat!("\"dispatch.phpboyscout", ".uk"), concat!("\"dj", "-")];
    let mut found = Vec::new();
    for (path, code) in library_sources(&project_root().join("crates")) {
        if homes.iter().any(|home| path.ends_with(home)) {
            continue;
        }
        for line in code_lines_with(&code, &literals) {
            found.push(format!("{}:{line}", path.display()));
        }
    }
    assert!(
        found.is_empty(),
        "spell these with dispatch_kf_model::keys or names instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_backends_edge_reads_the_clock_or_draws_randomness() {
    let src = project_root().join("crates/dispatch-kf/src");
    let mut found = Vec::new();
    for (path, code) in library_sources(&src) {
        if path.ends_with("edge.rs") {
            continue;
        }
        let reads =
            ["Instant::now", "Timestamp::now", "SystemTime::now", "Zoned::now", "getrandom"];
        for line in code_lines_with(&code, &reads) {
            found.push(format!("{}:{line}", path.display()));
        }
    }
    assert!(found.is_empty(), "read the clock through edge.rs:\n{}", found.join("\n"));
}
