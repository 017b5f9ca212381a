//! Every test a page cites exists. A page proves what it says by naming tests; a test
//! renamed or removed leaves the page citing nothing, or, worse, an old name that says
//! the opposite of the rule beside it. So every name a page writes in backticks that
//! reads as a test's (snake case of four words or more, alone or after `file.rs::`)
//! must be a `fn` of the workspace's Rust or a `def` of its Python, unless it is a
//! Prometheus series (`SERIES`).
//!
//! And a user's page names its tests in one place, its last section ([`PROOFS`]): its
//! body reads as what the adapter does, not as a list of proofs. The maintainers' pages
//! (`docs/dev/`, `docs/architecture.md`) cite tests where they please.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::{markdown_pages, prose_lines, shown, workspace_rust_files};
use crate::matrix::MARKER;
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
    quoted(markdown)
        .map(|(number, quoted)| (number, name_of(quoted)))
        .filter(|(_, name)| {
            reads_as_a_test(name)
                && !SERIES.iter().any(|s| name.starts_with(s) || name.ends_with(s))
        })
        .collect()
}

/// What a page writes in backticks outside fenced code, with its line numbers: between
/// the odd and even backticks of each line.
fn quoted(markdown: &str) -> impl Iterator<Item = (usize, &str)> {
    prose_lines(markdown)
        .flat_map(|(number, line)| line.split('`').skip(1).step_by(2).map(move |q| (number, q)))
}

/// The function a backticked citation names: `file.rs::name()` is `name`.
fn name_of(quoted: &str) -> &str {
    quoted.rsplit("::").next().unwrap_or(quoted).trim_end_matches("()")
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

/// The workspace's Rust and Python sources, read.
fn sources() -> (Vec<String>, Vec<String>) {
    let rust = workspace_rust_files().iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    let mut python_paths = Vec::new();
    python_files(&project_root().join("crates"), &mut python_paths);
    let python = python_paths.iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    (rust, python)
}

#[test]
fn every_test_a_page_cites_exists() {
    let (rust, python) = sources();
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

/// The heading of a user's page's last section, the one that names the tests proving
/// what the page says.
const PROOFS: &str = "## Tests that prove it";

/// The workspace's tests: a Rust `fn` under an attribute ending in `test` (`#[test]`,
/// `#[tokio::test]`, with or without arguments) among the attributes and comments right
/// above it, and a Python `def test_...`.
fn test_functions<'a>(rust: &'a [String], python: &'a [String]) -> HashSet<&'a str> {
    let mut tests = HashSet::new();
    for text in rust {
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            if !line.contains("fn ") {
                continue;
            }
            let above = lines[..index].iter().rev().map(|l| l.trim_start());
            let mut decorations = above.take_while(|l| l.starts_with("#[") || l.starts_with("//"));
            if decorations
                .any(|l| l.starts_with("#[") && (l.contains("test]") || l.contains("test(")))
            {
                defined(line, "fn ", &mut tests);
            }
        }
    }
    let mut python_defs = HashSet::new();
    python.iter().for_each(|text| defined(text, "def ", &mut python_defs));
    tests.extend(python_defs.into_iter().filter(|name| name.starts_with("test_")));
    tests.remove("");
    tests
}

/// Whether backticked text cites a test: a test's name, or a test file, folder or module.
fn cites_a_test(quoted: &str, tests: &HashSet<&str>) -> bool {
    tests.contains(name_of(quoted))
        || quoted.contains("/tests/")
        || quoted.starts_with("tests/")
        || quoted.ends_with("::tests")
        || quoted.ends_with("tests.rs")
}

/// A page's body: what it says before its last section when that section is
/// [`PROOFS`], and before what `cargo xtask matrix` wrote into it (below its [`MARKER`]).
fn body(markdown: &str) -> &str {
    let written = markdown.split(MARKER).next().unwrap_or(markdown);
    let proofs = format!("\n{PROOFS}\n");
    match written.rfind(&proofs) {
        Some(at) if !written[at + proofs.len()..].lines().any(|l| l.starts_with("## ")) => {
            &written[..at]
        }
        _ => written,
    }
}

/// The pages a user of the adapter reads: `README.md` and `docs/*.md` but the
/// maintainers' (`docs/dev/`, `docs/architecture.md`).
fn user_pages() -> Vec<PathBuf> {
    let docs = project_root().join("docs");
    markdown_pages()
        .into_iter()
        .filter(|page| {
            (page.parent() == Some(docs.as_path()) && !page.ends_with("architecture.md"))
                || page == &project_root().join("README.md")
        })
        .collect()
}

#[test]
fn a_users_page_names_its_tests_only_in_its_last_section() {
    let (rust, python) = sources();
    let tests = test_functions(&rust, &python);
    assert!(tests.len() > 500, "the workspace's tests were not found ({})", tests.len());
    let mut found = Vec::new();
    for page in user_pages() {
        let markdown = fs::read_to_string(&page).unwrap();
        for (line, quoted) in quoted(body(&markdown)) {
            if cites_a_test(quoted, &tests) {
                found.push(format!("{}:{line}: `{quoted}`", shown(&page)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a user's page names tests in its body; name them in its last section, `{PROOFS}` \
         (docs/architecture.md, \"Pages\"):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_pages_body_ends_where_its_last_section_names_its_tests() {
    let page = "# P\n## A\ntext\n## Tests that prove it\n- `t`\n";
    assert_eq!(body(page), "# P\n## A\ntext");
    let not_last = "# P\n## Tests that prove it\n- `t`\n## Decisions\nmore\n";
    assert_eq!(body(not_last), not_last);
    let generated = format!("# P\ntext\n{MARKER}\n`a_test_of_the_suite`\n");
    assert_eq!(body(&generated), "# P\ntext\n");
}

#[test]
fn tests_are_functions_under_a_test_attribute_and_python_test_defs() {
    let rust = ["#[test]\nfn a_b() {}\nfn helper_c() {}\n#[tokio::test(flavor = \"x\")]\n/// doc\nasync fn d_e() {}\n#[cfg(test)]\nfn f_g() {}".to_owned()];
    let python = ["def test_h():\n    pass\ndef helper():\n    pass".to_owned()];
    assert_eq!(test_functions(&rust, &python), HashSet::from(["a_b", "d_e", "test_h"]));
    let tests = HashSet::from(["a_b"]);
    assert!(cites_a_test("x.rs::a_b", &tests));
    assert!(cites_a_test("crates/dispatch-kf/tests/e2e.rs", &tests));
    assert!(cites_a_test("served::tests", &tests));
    assert!(!cites_a_test("crates/dispatch-kf/src/stop.rs", &tests));
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
