//! Every test a page cites exists. A page proves what it says by naming tests; a test
//! renamed or removed leaves the page citing nothing, or, worse, an old name that says
//! the opposite of the rule beside it. So every name a page writes in backticks that
//! reads as a test's (snake case of four words or more, alone or after `file.rs::`)
//! must be a `fn` of the workspace's Rust or a `def` of its Python, unless it is a
//! Prometheus series (`SERIES`).

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::{markdown_pages, prose_lines, shown, workspace_rust_files};
use crate::run::project_root;

/// How the series a page names begin or end: the metrics the controllers serve and the
/// upstream ones the pages quote. They are not tests.
const SERIES: [&str; 5] = ["dispatch_", "kueue_", "apiserver_", "_total", "_seconds"];

/// The fewest words of a name read as a test's: shorter snake case names are fields,
/// crates and functions as often as tests.
const TEST_NAME_WORDS: usize = 4;

/// The names a page cites as tests, with their line numbers: backticked snake case of
/// [`TEST_NAME_WORDS`] words or more outside fenced code, a `path::` before it dropped.
fn cited(markdown: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    for (number, line) in prose_lines(markdown) {
        // Between the odd and even backticks of the line.
        for quoted in line.split('`').skip(1).step_by(2) {
            let name = quoted.rsplit("::").next().unwrap_or(quoted).trim_end_matches("()");
            if reads_as_a_test(name)
                && !SERIES.iter().any(|s| name.starts_with(s) || name.ends_with(s))
            {
                found.push((number, name));
            }
        }
    }
    found
}

fn reads_as_a_test(name: &str) -> bool {
    let words: Vec<&str> = name.split('_').collect();
    words.len() >= TEST_NAME_WORDS
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && words.iter().all(|w| {
            !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// The names after `keyword` in `text` (`fn` in Rust, `def` in Python).
fn defined<'a>(text: &'a str, keyword: &str, into: &mut HashSet<&'a str>) {
    for (start, _) in text.match_indices(keyword) {
        let before = text[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = text[start + keyword.len()..].trim_start();
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        into.insert(&rest[..end]);
    }
}

/// The Python files under `dir`, outside build folders.
fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == "target" || name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            python_files(&path, out);
        } else if name.ends_with(".py") {
            out.push(path);
        }
    }
}

#[test]
fn every_test_a_page_cites_exists() {
    let rust: Vec<String> =
        workspace_rust_files().iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    let mut python_paths = Vec::new();
    python_files(&project_root().join("crates"), &mut python_paths);
    let python: Vec<String> = python_paths.iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    let mut names = HashSet::new();
    rust.iter().for_each(|text| defined(text, "fn ", &mut names));
    python.iter().for_each(|text| defined(text, "def ", &mut names));
    assert!(names.len() > 1000, "the workspace's functions were not found ({})", names.len());

    let mut missing = Vec::new();
    for page in markdown_pages() {
        let markdown = fs::read_to_string(&page).unwrap();
        for (line, name) in cited(&markdown) {
            if !names.contains(name) {
                missing.push(format!("{}:{line}: `{name}`", shown(&page)));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "pages cite tests that do not exist (renamed or removed?):\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_cited_test_is_read_from_backticks_alone_or_after_its_file() {
    let page = "See `gate.rs::a_conflict_is_decided_again` and `one_two_three_four()`.\n\
                Not `two_words`, `Upper_Case_Name_Here`, `dispatch_trainjobs_by_state_total`.\n\
                ```\nfn not_this_one_here() {}\n```\n`after_the_fence_ends_here`";
    assert_eq!(
        cited(page),
        [
            (1, "a_conflict_is_decided_again"),
            (1, "one_two_three_four"),
            (6, "after_the_fence_ends_here")
        ]
    );
}

#[test]
fn functions_are_found_by_their_keyword_as_a_word() {
    let mut names = HashSet::new();
    defined("async fn a_b() {}\nfn  c_d<T>()\nlet defn x;", "fn ", &mut names);
    assert_eq!(names, HashSet::from(["a_b", "c_d"]));
}
