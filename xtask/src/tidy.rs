//! Checks on the codebase itself, run as a test by `cargo xtask test`.
//!
//! The checks of every `.rs` file read `crates/`, `xtask/` and the fuzz targets of
//! `fuzz/` (not its build folder, `fuzz/target`).
//!
//! - every `.rs` file starts with a `//!` doc saying what it holds;
//! - the pure crates (`dispatch-core`, `dispatch-kf-model`) depend on nothing that does
//!   I/O and never read the clock or draw randomness;
//! - `docs/architecture.md` names every crate directory;
//! - no unfinished-work markers anywhere: todo, unimplemented and dbg macros, ignored
//!   tests, or tests that expect a panic;
//! - each rule in one place: dispatch's label and annotation keys are spelled only in
//!   the model's `keys.rs`, and the object-name prefix only in its `names.rs`;
//! - in `dispatch-kf`, only `edge.rs` reads the clock or draws randomness;
//! - `dispatch-kf` reaches the apiserver only through `dispatch-kf-client`: it
//!   depends on no Kubernetes client crate (kube, k8s-openapi, hyper, http);
//! - no `.rs` file and no page a reader is sent to (`README.md`, each crate's, and
//!   `docs/*.md`) cites a reference page kept outside the repository (`seeds/*.txt`,
//!   `spec/*.md`) or one of the project's issues (`issue N`): each says the fact itself,
//!   and reads with the repository alone;
//! - every `docs/<page>.md` or `docs/<page>.md#<anchor>` a `.rs` file or a page cites
//!   names a page of `docs/` and, with an anchor, one of that page's headings as GitHub
//!   slugs it.
//! - every test a page cites exists (`cited_tests`);
//! - no two files import each other (`import_circles`);
//! - every link of a page leads to a file and, with an anchor, a heading (`page_links`).

mod cited_tests;
mod import_circles;
mod page_links;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::run::project_root;

/// Dependencies the pure crates may not have: I/O runtimes, clients, clocks, randomness.
pub(crate) const FORBIDDEN_IN_PURE: [&str; 9] =
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
    rust_files(&root.join("fuzz"), &mut files);
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

/// The names in `krate`'s `[dependencies]` (not its dev-dependencies).
fn dependencies(krate: &str) -> Vec<String> {
    let manifest = project_root().join("crates").join(krate).join("Cargo.toml");
    let text = fs::read_to_string(&manifest).unwrap();
    let deps = text.split("\n[dependencies]").nth(1).unwrap_or("");
    let deps = deps.split("\n[").next().unwrap_or("");
    let names = deps.lines().map(|line| line.split(['=', '.', ' ']).next().unwrap_or("").trim());
    names.filter(|n| !n.is_empty() && !n.starts_with('#')).map(str::to_owned).collect()
}

/// Whether `name` is one of `families`' crates: `tokio-util` is `tokio`.
fn of_family(name: &str, families: &[&str]) -> bool {
    families.iter().any(|f| name == *f || name.strip_prefix(f).is_some_and(|r| r.starts_with('-')))
}

#[test]
fn pure_crates_have_no_io_dependencies() {
    for krate in PURE_CRATES {
        for name in dependencies(krate) {
            let forbidden = of_family(&name, &FORBIDDEN_IN_PURE);
            assert!(!forbidden, "{krate} depends on {name}, which does I/O or reads the clock");
        }
    }
}

/// The Backend talks to the apiserver only through `dispatch-kf-client`, in the model's
/// types: it depends on no Kubernetes client crate and names none in its source.
#[test]
fn the_backend_reaches_the_apiserver_only_through_the_client() {
    const CLIENT_FAMILIES: [&str; 4] = ["kube", "k8s-openapi", "hyper", "http"];
    for name in dependencies("dispatch-kf") {
        assert!(!of_family(&name, &CLIENT_FAMILIES), "dispatch-kf depends on {name}");
    }
    let dir = project_root().join("crates/dispatch-kf/src");
    let named: Vec<String> = library_sources(&dir)
        .into_iter()
        .flat_map(|(path, text)| {
            let lines = code_lines_with(&text, &["kube::", "k8s_openapi::"]);
            lines.into_iter().map(move |l| format!("{}: {l}", shown(&path)))
        })
        .collect();
    assert!(named.is_empty(), "dispatch-kf names a client crate:\n{}", named.join("\n"));
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

/// Where the reference pages outside the repository live, and their extension: source
/// files cite the repository's own `docs/` instead. Split so that this file cites neither.
const OUTSIDE_PAGES: [(&str, &str); 2] =
    [(concat!("seeds", "/"), ".txt"), (concat!("spec", "/"), ".md")];

/// One citation of a page in a source file.
#[derive(Debug, PartialEq)]
struct Citation<'a> {
    /// The line it is on, from 1.
    line: usize,
    /// The citation as written, `<dir><page><ext>` and any `#<anchor>`.
    text: &'a str,
    /// The page's name, a run of lower-case letters, digits, `-` and `/` (a page of a
    /// folder, `dev/sim`).
    page: &'a str,
    /// What follows a `#` right after the extension: letters, digits, `-` and `_`.
    anchor: Option<&'a str>,
}

/// Every citation `<dir><page><ext>` in `text`. With `whole`, only those where `dir`
/// starts a path: not right after a letter, digit, `_`, `-`, `.` or `/`.
fn citations<'a>(text: &'a str, dir: &str, ext: &str, whole: bool) -> Vec<Citation<'a>> {
    let in_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '/';
    let in_anchor = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c);
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        for (start, _) in line.match_indices(dir) {
            let before = line[..start].chars().next_back();
            if whole && before.is_some_and(|c| c.is_ascii_alphanumeric() || "_-./".contains(c)) {
                continue;
            }
            let rest = &line[start + dir.len()..];
            let name = &rest[..rest.find(|c| !in_name(c)).unwrap_or(rest.len())];
            let Some(after) = rest[name.len()..].strip_prefix(ext) else { continue };
            if name.is_empty() {
                continue;
            }
            let anchor = after
                .strip_prefix('#')
                .map(|a| &a[..a.find(|c| !in_anchor(c)).unwrap_or(a.len())])
                .filter(|a| !a.is_empty());
            let end =
                start + dir.len() + name.len() + ext.len() + anchor.map_or(0, |a| a.len() + 1);
            found.push(Citation { line: index + 1, text: &line[start..end], page: name, anchor });
        }
    }
    found
}

/// GitHub's anchor for a heading's text: lower case; every character other than a
/// letter, a digit, a space, `-` or `_` dropped; then each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown page's headings (`#` to `######` at the start of a line,
/// outside fenced code), in order; a slug seen before gets `-1`, `-2`, ... as on GitHub.
fn anchors(markdown: &str) -> Vec<String> {
    let mut anchors: Vec<String> = Vec::new();
    let mut fence: Option<&str> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if let Some(open) = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f)) {
            fence = Some(open);
            continue;
        }
        let level = line.len() - line.trim_start_matches('#').len();
        let Some(text) = line[level..].strip_prefix(' ') else { continue };
        if !(1..=6).contains(&level) {
            continue;
        }
        let base = slug(text.trim_end().trim_end_matches('#'));
        let mut anchor = base.clone();
        let mut seen = 0;
        while anchors.contains(&anchor) {
            seen += 1;
            anchor = format!("{base}-{seen}");
        }
        anchors.push(anchor);
    }
    anchors
}

/// The lines of a markdown page outside fenced code, numbered from 1: where its prose,
/// its links and its backticked names are.
fn prose_lines(markdown: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    markdown.lines().enumerate().filter_map(move |(index, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((index + 1, line))
    })
}

/// A source file's path from the project's root, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(project_root()).unwrap_or(path).display().to_string()
}

/// The pages a reader is sent to: the repository's `README.md`, each crate's, and every
/// page of `docs/` and of its maintainers' folder `docs/dev/`.
fn markdown_pages() -> Vec<PathBuf> {
    let root = project_root();
    let mut pages = vec![root.join("README.md")];
    for dir in [root.join("docs"), root.join("docs/dev"), root.join("crates")] {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            } else if path.join("README.md").is_file() {
                pages.push(path.join("README.md"));
            }
        }
    }
    pages.sort();
    pages
}

/// The word that names one of the project's issues. Split so that this file names none.
const ISSUE: &str = concat!("iss", "ue");

/// Every reference to one of the project's issues in `text`, with the line it is on,
/// from 1: the word or its plural, in any case and after no letter or digit, then a
/// space, an optional `#` and a number.
fn issue_references(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        for (start, _) in lower.match_indices(ISSUE) {
            if line[..start].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric()) {
                continue;
            }
            let rest = &line[start + ISSUE.len()..];
            let rest = rest.strip_prefix('s').unwrap_or(rest);
            let Some(rest) = rest.strip_prefix(' ') else { continue };
            let rest = rest.strip_prefix('#').unwrap_or(rest);
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits > 0 {
                let end = line.len() - rest.len() + digits;
                found.push((index + 1, &line[start..end]));
            }
        }
    }
    found
}

#[test]
fn no_source_or_page_cites_an_outside_page_or_an_issue() {
    let mut found = Vec::new();
    for file in workspace_rust_files().into_iter().chain(markdown_pages()) {
        let text = fs::read_to_string(&file).unwrap();
        for (dir, ext) in OUTSIDE_PAGES {
            for citation in citations(&text, dir, ext, false) {
                found.push(format!("{}:{}: {}", shown(&file), citation.line, citation.text));
            }
        }
        for (line, reference) in issue_references(&text) {
            found.push(format!("{}:{line}: {reference}", shown(&file)));
        }
    }
    assert!(
        found.is_empty(),
        "say the fact itself, citing the repository's docs/<page>.md#<anchor> where a \
         page says more, instead of:\n{}",
        found.join("\n")
    );
}

#[test]
fn issue_references_are_found_in_any_case_with_or_without_a_hash() {
    let text = concat!(
        "x\n// Iss",
        "ue 19, item 1: ... (iss",
        "ue #4); iss",
        "ues 15 and 16.\n",
        "no tiss",
        "ue 3, no iss",
        "ue N, no iss",
        "ue: 5\n"
    );
    let found: Vec<(usize, &str)> = issue_references(text);
    let expected =
        [(2, concat!("Iss", "ue 19")), (2, concat!("iss", "ue #4")), (2, concat!("iss", "ues 15"))];
    assert_eq!(found, expected);
}

/// The files that cite pages by their path from the project's root: every `.rs` file,
/// every page a reader is sent to, and the notes beside the fixtures.
fn files_citing_docs() -> Vec<PathBuf> {
    let mut files = workspace_rust_files();
    files.extend(markdown_pages());
    let fixtures = project_root().join("fixtures");
    for entry in fs::read_dir(&fixtures).unwrap().flatten() {
        let notes = entry.path().join("SOURCES.md");
        if notes.is_file() {
            files.push(notes);
        }
    }
    files
}

#[test]
fn docs_citations_name_a_page_and_one_of_its_headings() {
    let docs = project_root().join("docs");
    let mut pages: HashMap<String, Option<Vec<String>>> = HashMap::new();
    let mut found = Vec::new();
    for file in files_citing_docs() {
        let text = fs::read_to_string(&file).unwrap();
        for citation in citations(&text, "docs/", ".md", true) {
            let page = pages.entry(citation.page.to_owned()).or_insert_with(|| {
                let markdown = fs::read_to_string(docs.join(format!("{}.md", citation.page)));
                markdown.ok().map(|m| anchors(&m))
            });
            let problem = match (page, citation.anchor) {
                (None, _) => "there is no such page in docs/".to_owned(),
                (Some(anchors), Some(anchor)) if !anchors.iter().any(|a| a == anchor) => {
                    format!("no heading of docs/{}.md has the anchor #{anchor}", citation.page)
                }
                _ => continue,
            };
            found.push(format!("{}:{}: {}: {problem}", shown(&file), citation.line, citation.text));
        }
    }
    assert!(found.is_empty(), "citations of docs that lead nowhere:\n{}", found.join("\n"));
}

#[test]
fn slugs_are_githubs_anchors_for_real_headings() {
    assert_eq!(slug("Pod findings (`classify/findings.rs`)"), "pod-findings-classifyfindingsrs");
    assert_eq!(
        slug("Unknown TrainJob conditions (`classify/unknown_condition.rs`)"),
        "unknown-trainjob-conditions-classifyunknown_conditionrs"
    );
    assert_eq!(slug("The adapter's own refusals"), "the-adapters-own-refusals");
    assert_eq!(
        slug("Offline classification: `cargo xtask bench classify`"),
        "offline-classification-cargo-xtask-bench-classify"
    );
    assert_eq!(
        slug("Runtime rules (Unsupported, every broken rule named)"),
        "runtime-rules-unsupported-every-broken-rule-named"
    );
}

#[test]
fn anchors_skip_fenced_code_and_number_repeated_headings() {
    let page = "# Title\n\n## Tests\n\n```sh\n# on a real cluster\n```\n\n### Tests\n#no-space\n";
    assert_eq!(anchors(page), ["title", "tests", "tests-1"]);
}

#[test]
fn citations_are_read_with_their_page_and_anchor() {
    let text = concat!(
        "x\n//! (`",
        "docs",
        "/render.md#the-request`; ",
        "docs",
        "/start-gate-and-holds.md).\n"
    );
    let found = citations(text, "docs/", ".md", true);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].line, found[0].page, found[0].anchor), (2, "render", Some("the-request")));
    assert_eq!(
        (found[1].text, found[1].anchor),
        (concat!("docs", "/start-gate-and-holds.md"), None)
    );
    assert!(citations(concat!("crates/x/", "docs", "/a.md"), "docs/", ".md", true).is_empty());
    let in_folder = citations(concat!("(", "docs", "/dev/sim.md#code-map)"), "docs/", ".md", true);
    assert_eq!((in_folder[0].page, in_folder[0].anchor), ("dev/sim", Some("code-map")));
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
    let root = project_root();
    let sources = library_sources(&root.join("crates"))
        .into_iter()
        .chain(library_sources(&root.join("xtask/src")))
        .chain(library_sources(&root.join("fuzz/fuzz_targets")));
    for (path, code) in sources {
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
