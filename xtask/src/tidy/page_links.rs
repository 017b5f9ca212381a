//! Every link of a page leads somewhere: a relative link `[text](path)` or
//! `[text](path#anchor)` names a file or folder of the repository, and, when it names a
//! page with an anchor, one of that page's headings (a link `#anchor` alone, one of its
//! own page's). Links to the web (`http://`, `https://`, `mailto:`) are not followed.

use std::collections::HashMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::{anchors, markdown_pages, prose_lines, shown};
use crate::run::project_root;

/// The targets of a page's inline links outside fenced code, with their line numbers:
/// what is between `](` and the closing `)`.
fn links(markdown: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    for (number, line) in prose_lines(markdown) {
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((number, &after[..end]));
            rest = &after[end..];
        }
    }
    found
}

/// `path` relative to `dir`, with `.` and `..` taken out.
fn joined(dir: &Path, path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in dir.join(path).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with one link of the page at `page`, if anything.
fn broken(
    page: &Path,
    target: &str,
    headings: &mut HashMap<PathBuf, Vec<String>>,
) -> Option<String> {
    if ["http://", "https://", "mailto:"].iter().any(|s| target.starts_with(s)) {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() { page.to_path_buf() } else { joined(page.parent()?, path) };
    if !file.exists() {
        return Some(format!("{} does not exist", shown(&file)));
    }
    let anchor = anchor.filter(|_| file.extension().is_some_and(|e| e == "md"))?;
    let known = headings
        .entry(file.clone())
        .or_insert_with(|| anchors(&fs::read_to_string(&file).unwrap_or_default()));
    if known.iter().any(|a| a == anchor) {
        None
    } else {
        Some(format!("no heading of {} has the anchor #{anchor}", shown(&file)))
    }
}

#[test]
fn every_link_of_a_page_leads_to_a_file_and_heading() {
    let mut headings = HashMap::new();
    let mut found = Vec::new();
    for page in markdown_pages() {
        let markdown = fs::read_to_string(&page).unwrap();
        for (line, target) in links(&markdown) {
            if let Some(problem) = broken(&page, target, &mut headings) {
                found.push(format!("{}:{line}: ({target}): {problem}", shown(&page)));
            }
        }
    }
    assert!(found.is_empty(), "links that lead nowhere:\n{}", found.join("\n"));
}

#[test]
fn links_are_read_outside_code_and_resolved_from_their_page() {
    let page = "[a](x.md#h) and [b](../y.md)\n```\n[c](z.md)\n```\n[d](https://e)";
    assert_eq!(links(page), [(1, "x.md#h"), (1, "../y.md"), (5, "https://e")]);
    let root = project_root();
    assert_eq!(joined(&root.join("docs/dev"), "../cli.md"), root.join("docs/cli.md"));
    let mut headings = HashMap::new();
    let sim = root.join("docs/dev/sim.md");
    assert_eq!(broken(&sim, "../cli.md#explain-any-trainjob", &mut headings), None);
    assert!(broken(&sim, "../cli.md#no-such-heading", &mut headings).is_some());
    assert!(broken(&sim, "cli.md", &mut headings).is_some());
    assert_eq!(broken(&sim, "https://example.com/x", &mut headings), None);
}
