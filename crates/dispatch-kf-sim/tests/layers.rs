//! The sim's layers, kept by a test that reads its source (as a tidy test does): every
//! module of `src/` names, through `crate::` and `super::` paths (a `use` read whole,
//! over all its lines), only modules of its own layer or of the layers below it. So
//! nothing below the registry names a controller or an HTTP module, no controller names
//! a request type, and the store names neither; and above the registry nothing writes
//! the store but through it.
//! `docs/dev/sim.md` ("Code map") describes the layers.

use std::path::{Path, PathBuf};

/// Each top-level module of the crate, a folder of `src/`, and its layer, bottom (1) to
/// top (6): `ls src` shows the layers.
const LAYERS: &[(&str, u8)] = &[
    // 1. Plain accessors, keys and leaf types: functions of values, no state.
    ("plain", 1),
    // 2. The store and the state it sits in: objects, journal, indexes, work queues.
    ("store", 2),
    // 3. The registry: every write, from a controller or a handler, goes through it.
    ("registry", 3),
    // 4. The controllers.
    ("controllers", 4),
    // 5. HTTP: routing, request parsing, handlers, the server.
    ("http", 5),
    // 6. The facade and what a test makes happen.
    ("facade", 6),
];

fn layer_of(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The module path of a source file (`controllers/kueue.rs` is `controllers::kueue`,
/// `store/mod.rs` is `store`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        rel.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The heads of a `{...}` group's items, at its top level: `{a, b::{c, d}, e}` gives
/// `a`, `b` and `e`. `group` starts just after the `{`.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut item_start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.push(ident(group[item_start..i].trim()).to_string());
                return heads;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(ident(group[item_start..i].trim()).to_string());
                item_start = i + 1;
            }
            _ => {}
        }
    }
    heads.push(ident(group[item_start..].trim()).to_string());
    heads
}

/// The top-level modules one statement names through `crate::` and `super::` paths.
fn named(module: &[String], line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => out.extend(group_heads(group)),
            None => out.push(ident(rest).to_string()),
        }
    }
    let mut rest = line;
    while let Some(i) = rest.find("super::") {
        let before = &rest[..i];
        let mut up = 1;
        rest = &rest[i + "super::".len()..];
        while let Some(r) = rest.strip_prefix("super::") {
            up += 1;
            rest = r;
        }
        // `use super::*` in a file's test module names the file's own module.
        if before.trim_end().ends_with("use") && rest.starts_with('*') {
            continue;
        }
        let base = module.len().saturating_sub(up);
        out.push(
            module
                .get(..base)
                .and_then(|m| m.first().cloned())
                .unwrap_or_else(|| ident(rest).to_string()),
        );
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// Each `.rs` file of `src/` but `lib.rs`: its path below `src/` and its text.
fn sources(src: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut files = vec![src.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read src") {
                files.push(entry.expect("entry").path());
            }
            continue;
        }
        let rel = path.strip_prefix(src).expect("under src").to_path_buf();
        if rel.extension().is_none_or(|e| e != "rs") || rel == Path::new("lib.rs") {
            continue;
        }
        out.push((rel, std::fs::read_to_string(&path).expect("read file")));
    }
    out
}

/// The lines of `text` that are code, numbered from 1.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
}

/// The code of `text` as statements to read paths in, each with its first line's
/// number: a `use` whole, however many lines rustfmt spreads it over (to its `;`), any
/// other line alone (a path in an expression is never broken across lines).
fn statements(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open_use = false;
    for (n, line) in code_lines(text) {
        let code = line.split(" //").next().unwrap_or(line).trim();
        if open_use {
            let last = out.last_mut().expect("a use is open");
            last.1.push(' ');
            last.1.push_str(code);
        } else {
            out.push((n, code.to_string()));
            let bare = code.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            open_use = bare.starts_with("use ");
        }
        if open_use && code.ends_with(';') {
            open_use = false;
        }
    }
    out
}

/// Every `crate::`/`super::` path in `src/` that names a module above its own layer,
/// or a module the table does not place.
fn violations(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in sources(src) {
        let module = module_of(&rel);
        let Some(own) = layer_of(&module[0]) else {
            found.push(format!("{}: module `{}` has no layer in LAYERS", rel.display(), module[0]));
            continue;
        };
        for (n, line) in statements(&text) {
            for target in named(&module, &line) {
                match layer_of(&target) {
                    Some(layer) if layer <= own => {}
                    Some(layer) => found.push(format!(
                        "{}:{}: layer {own} names `{target}` of layer {layer}: {}",
                        rel.display(),
                        n,
                        line.trim()
                    )),
                    None => found.push(format!(
                        "{}:{}: names `{target}`, which has no layer in LAYERS (a re-export of lib.rs?): {}",
                        rel.display(),
                        n,
                        line.trim()
                    )),
                }
            }
        }
    }
    found.sort();
    found
}

/// The store's writing methods: only the store and the registry call them, so every
/// write meets the registry's rules.
const STORE_WRITES: &[&str] = &["store.put(", "store.remove("];

/// The layer of the registry; above it, nothing writes the store itself.
const REGISTRY: u8 = 3;

fn writes_the_store(line: &str) -> bool {
    STORE_WRITES.iter().any(|w| line.contains(w))
}

/// Every line above the registry that writes the store without it.
fn writes_past_the_registry(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in sources(src) {
        if layer_of(&module_of(&rel)[0]).is_some_and(|l| l <= REGISTRY) {
            continue;
        }
        for (n, line) in code_lines(&text).filter(|(_, l)| writes_the_store(l)) {
            found.push(format!("{}:{n}: {}", rel.display(), line.trim()));
        }
    }
    found.sort();
    found
}

/// Fails listing what `check` finds in the crate's `src/`, under `what`.
fn assert_none_in_src(check: fn(&Path) -> Vec<String>, what: &str) {
    let found = check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(found.is_empty(), "{what}:\n{}", found.join("\n"));
}

#[test]
fn only_the_store_and_the_registry_write_the_store() {
    assert_none_in_src(writes_past_the_registry, "writes that bypass the registry");
}

#[test]
fn a_write_of_the_store_is_told_from_a_read() {
    assert!(writes_the_store("        state.store.put(key.clone(), pod);"));
    assert!(writes_the_store("st.store.remove(&key).is_some()"));
    assert!(!writes_the_store("let pod = state.store.get(&key);"));
    assert!(!writes_the_store("registry::write(state, key, pod, KUBELET);"));
}

#[test]
fn each_module_names_only_its_own_layer_and_the_layers_below() {
    assert_none_in_src(violations, "layer violations");
}

#[test]
fn a_path_is_read_as_the_module_it_names() {
    let kueue = module_of(Path::new("controllers/kueue.rs"));
    assert_eq!(named(&kueue, "use super::wake::{self, Ctl};"), ["controllers"]);
    assert_eq!(named(&kueue, "super::super::http::x()"), ["http"]);
    assert_eq!(named(&kueue, "use crate::{registry, store::Key};"), ["registry", "store"]);
    assert_eq!(named(&kueue, "    use super::*;"), Vec::<String>::new());
    let store = module_of(Path::new("store/mod.rs"));
    assert_eq!(store, ["store"]);
    assert_eq!(named(&store, "use super::controllers::wake;"), ["controllers"]);
    let nested = "use crate::{object::{self, meta}, registry::{self, Write}, store};";
    assert_eq!(named(&kueue, nested), ["object", "registry", "store"]);
}

#[test]
fn a_use_spread_over_lines_is_read_whole() {
    let text = "use crate::{\n    registry,\n    // a comment\n    http::Handler,\n};\nlet x = crate::store::get(); // crate::demo\n";
    let read = statements(text);
    assert_eq!(read[0], (1, "use crate::{ registry, http::Handler, };".to_string()));
    assert_eq!(read[1], (6, "let x = crate::store::get();".to_string()));
    let kueue = module_of(Path::new("controllers/kueue.rs"));
    assert_eq!(named(&kueue, &read[0].1), ["registry", "http"]);
}
