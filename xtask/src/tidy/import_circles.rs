//! No two files import each other. A helper two files share belongs in one of them, or
//! in a third; when each names the other, neither can be read, moved or tested alone.
//! A module and its own parent are not counted: the parent is the module's face (it
//! declares it, re-exports what others use of it, and holds what its children share).
//!
//! Each crate root (`src/lib.rs`, `src/main.rs`, each `src/bin/` program) is a tree of
//! files; a file imports another when one of its `crate::`, `super::` or `self::` paths
//! (in a `use`, whole however many lines it spans, or in an expression) names a module
//! the other file is, or an item in it. Test modules (from `#[cfg(test)]` on) are not
//! read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::{non_test_source, rust_files, shown};
use crate::run::project_root;

/// A module's path in its crate: `["cluster", "files"]` for `cluster/files.rs`; empty
/// for the root.
type ModulePath = Vec<String>;

/// The files of one crate root, by module path.
fn modules(root_dir: &Path, root_file: &Path, files: &[PathBuf]) -> BTreeMap<ModulePath, PathBuf> {
    let mut out = BTreeMap::new();
    out.insert(Vec::new(), root_file.to_path_buf());
    for file in files {
        if file == root_file {
            continue;
        }
        let Ok(rel) = file.strip_prefix(root_dir) else { continue };
        let mut path: ModulePath =
            rel.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if path.last().is_some_and(|p| p == "mod") {
            path.pop();
        }
        out.insert(path, file.clone());
    }
    out
}

/// The crate roots of a package's `src/`: each with its folder and its root file. A
/// `src/bin/` program is a root of its own; the library's or main's tree leaves it out.
fn crate_roots(src: &Path) -> Vec<(PathBuf, PathBuf, Vec<PathBuf>)> {
    let mut all = Vec::new();
    rust_files(src, &mut all);
    let bin = src.join("bin");
    let mut roots = Vec::new();
    let own: Vec<PathBuf> = all.iter().filter(|f| !f.starts_with(&bin)).cloned().collect();
    for root in ["lib.rs", "main.rs"].map(|f| src.join(f)).into_iter().filter(|f| f.is_file()) {
        roots.push((src.to_path_buf(), root, own.clone()));
    }
    for entry in fs::read_dir(&bin).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            let files = all.iter().filter(|f| f.starts_with(&path)).cloned().collect();
            roots.push((path.clone(), path.join("main.rs"), files));
        } else if path.extension().is_some_and(|e| e == "rs") {
            roots.push((bin.clone(), path.clone(), vec![path]));
        }
    }
    roots
}

/// The paths of one source text: each `use` whole (from a line that starts one to its
/// `;`, its groups spread into one path per item), and each `crate::`, `super::` or
/// `self::` path of any other line.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open_use: Option<String> = None;
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or(line).trim();
        let statement = match open_use.take() {
            Some(mut so_far) => {
                so_far.push_str(line);
                so_far
            }
            None => match line.split_once("use ") {
                Some((visibility, tree))
                    if visibility.is_empty() || visibility.starts_with("pub") =>
                {
                    tree.to_owned()
                }
                _ => {
                    out.extend(inline_paths(line));
                    continue;
                }
            },
        };
        match statement.strip_suffix(';') {
            Some(tree) => spread(tree.trim(), &mut out),
            None => open_use = Some(statement),
        }
    }
    out
}

/// `a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e`; `x as y` as `x`.
fn spread(tree: &str, out: &mut Vec<String>) {
    let Some(open) = tree.find('{') else {
        out.push(tree.split(" as ").next().unwrap_or(tree).trim().to_owned());
        return;
    };
    let prefix = &tree[..open];
    let inner = tree[open + 1..].strip_suffix('}').unwrap_or(&tree[open + 1..]);
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                spread(&format!("{prefix}{}", inner[start..i].trim()), out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        spread(&format!("{prefix}{}", inner[start..].trim()), out);
    }
}

/// The `crate::`, `super::` and `self::` paths of code outside a `use`.
fn inline_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for head in ["crate::", "super::", "self::"] {
        for (start, _) in code.match_indices(head) {
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[start..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(rest[..end].trim_end_matches(':').to_owned());
        }
    }
    out
}

/// The file a path from `module` leads to: the deepest module it names that is a file.
fn resolve<'a>(
    module: &[String],
    path: &str,
    files: &'a BTreeMap<ModulePath, PathBuf>,
) -> Option<&'a ModulePath> {
    let mut segments = path.split("::").peekable();
    let mut base: ModulePath = match segments.next() {
        Some("crate") => Vec::new(),
        Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
        Some("self") => module.to_vec(),
        _ => return None,
    };
    while segments.next_if_eq(&"super").is_some() {
        base.pop();
    }
    let mut found = files.get_key_value(&base).map(|(k, _)| k);
    for segment in segments {
        base.push(segment.to_owned());
        match files.get_key_value(&base) {
            Some((key, _)) => found = Some(key),
            None => break,
        }
    }
    found
}

/// Whether one module is the other's parent or child (or the same).
fn related(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The pairs of files of one crate root that import each other.
fn circles(root_dir: &Path, root_file: &Path, files: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    let modules = modules(root_dir, root_file, files);
    let mut imports: BTreeSet<(&ModulePath, &ModulePath)> = BTreeSet::new();
    for (module, file) in &modules {
        let text = fs::read_to_string(file).unwrap();
        for path in paths(non_test_source(&text)) {
            if let Some(target) = resolve(module, &path, &modules)
                && !related(module, target)
            {
                imports.insert((module, target));
            }
        }
    }
    imports
        .iter()
        .filter(|(a, b)| a < b && imports.contains(&(*b, *a)))
        .map(|(a, b)| (modules[*a].clone(), modules[*b].clone()))
        .collect()
}

#[test]
fn no_two_files_import_each_other() {
    let root = project_root();
    let mut packages: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    packages.push(root.join("xtask/src"));
    packages.sort();
    let mut found = Vec::new();
    for src in packages {
        for (dir, root_file, files) in crate_roots(&src) {
            for (a, b) in circles(&dir, &root_file, &files) {
                found.push(format!("{} <-> {}", shown(&a), shown(&b)));
            }
        }
    }
    assert!(found.is_empty(), "files that import each other:\n{}", found.join("\n"));
}

#[test]
fn a_use_is_read_whole_and_spread_into_its_paths() {
    let code = "use crate::{\n    a::{b, c as d},\n    e, // f::g\n};\nfn x() { super::h::i(); }";
    assert_eq!(paths(code), ["crate::a::b", "crate::a::c", "crate::e", "super::h::i"]);
}

#[test]
fn a_path_leads_to_the_deepest_module_that_is_a_file() {
    let files: BTreeMap<ModulePath, PathBuf> = [
        (vec![], "lib.rs"),
        (vec!["store".to_owned()], "store/mod.rs"),
        (vec!["store".to_owned(), "index".to_owned()], "store/index.rs"),
        (vec!["http".to_owned()], "http.rs"),
    ]
    .into_iter()
    .map(|(k, v)| (k, PathBuf::from(v)))
    .collect();
    let index = ["store".to_owned(), "index".to_owned()];
    let at = |module: &[String], path| resolve(module, path, &files).map(|m| m.join("/"));
    assert_eq!(at(&index, "super::Key"), Some("store".to_owned()));
    assert_eq!(at(&index, "super::super::http::serve"), Some("http".to_owned()));
    assert_eq!(at(&index, "crate::store::index::Indexes"), Some("store/index".to_owned()));
    assert_eq!(at(&index, "self::Entry"), Some("store/index".to_owned()));
    assert_eq!(at(&index, "std::fs"), None);
    assert!(related(&index, &["store".to_owned()]) && !related(&index, &["http".to_owned()]));
}
