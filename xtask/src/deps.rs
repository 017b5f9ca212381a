//! The library crates as someone outside the workspace depends on them, run as tests by
//! `cargo xtask test`:
//!
//! - a crate written into a temporary folder that depends, by path, on `dispatch-core`
//!   and `dispatch-kf-model` alone has no I/O runtime, client or server in its
//!   `cargo tree` (tokio, kube, hyper and the rest of `tidy::FORBIDDEN_IN_PURE`), which
//!   `tidy.rs` checks only in the two manifests, not through their dependencies;
//! - every library crate packages (`cargo package --no-verify`: verifying would build
//!   each from its tarball, minutes rather than a second) with its README, and every
//!   other crate is marked `publish = false`.
//!
//! Both run cargo offline: the lock file is the workspace's, trimmed by cargo, so every
//! version is already in the registry cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run::{project_root, target_dir};
use crate::tidy::FORBIDDEN_IN_PURE;

/// The library crates a program outside the workspace may depend on.
const LIBRARIES: [&str; 5] =
    ["dispatch-core", "dispatch-kf-model", "dispatch-kf-client", "dispatch-kf", "dispatch-kf-sim"];

fn cargo(dir: &Path, args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo {}: {e}", args.join(" ")));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo {} failed:\n{stdout}{stderr}", args.join(" "));
    stdout
}

/// A scratch folder of its own, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The package names in `cargo tree --prefix none --format {p}` output.
fn package_names(tree: &str) -> Vec<String> {
    let mut names: Vec<String> =
        tree.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect();
    names.sort();
    names.dedup();
    names
}

/// The names of `packages` that are in a forbidden family (`tokio-util` is `tokio`).
fn forbidden(packages: &[String]) -> Vec<String> {
    let in_family = |name: &str, family: &str| {
        name == family || name.strip_prefix(family).is_some_and(|rest| rest.starts_with('-'))
    };
    packages
        .iter()
        .filter(|p| FORBIDDEN_IN_PURE.iter().any(|family| in_family(p, family)))
        .cloned()
        .collect()
}

#[test]
fn forbidden_families_include_their_crates_and_nothing_else() {
    let names = ["tokio-macros", "tokio", "hyper-util", "kube", "serde", "jiff", "mio"];
    let names: Vec<String> = names.into_iter().map(str::to_owned).collect();
    assert_eq!(forbidden(&names), ["tokio-macros", "tokio", "hyper-util", "kube", "mio"]);
    let tree = "dispatch-core v0.1.0 (/x)\nserde v1.0.0\nserde v1.0.0 (*)\n";
    assert_eq!(package_names(tree), ["dispatch-core", "serde"]);
}

#[test]
fn a_crate_outside_the_workspace_on_the_pure_crates_has_no_runtime_client_or_server() {
    let dir = std::env::temp_dir().join(format!("dispatch-pure-deps-{}", std::process::id()));
    let scratch = Scratch(dir.clone());
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let root = project_root();
    let path = |krate: &str| root.join("crates").join(krate).display().to_string();
    let manifest = format!(
        "[package]\nname = \"pure-deps-probe\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\ndispatch-core = {{ path = {:?} }}\n\
         dispatch-kf-model = {{ path = {:?} }}\n\n[workspace]\n",
        path("dispatch-core"),
        path("dispatch-kf-model"),
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "//! Depends on the pure crates alone.\n\
         pub use dispatch_core::JobId;\npub use dispatch_kf_model::classify;\n",
    )
    .unwrap();
    // The workspace's versions; cargo drops what this crate does not use.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let tree = cargo(
        &dir,
        &["tree", "--offline", "--edges", "normal,build", "--prefix", "none", "--format", "{p}"],
    );
    let packages = package_names(&tree);
    assert!(packages.iter().any(|p| p == "dispatch-kf-model"), "{tree}");
    assert!(packages.iter().any(|p| p == "serde_json"), "the tree is complete:\n{tree}");
    let found = forbidden(&packages);
    assert!(found.is_empty(), "the pure crates pull in {found:?}:\n{tree}");
    drop(scratch);
}

#[test]
fn every_library_crate_packages_with_its_readme() {
    let root = project_root();
    let mut args = vec!["package", "--no-verify", "--offline", "--allow-dirty", "--quiet"];
    for krate in LIBRARIES {
        args.extend(["-p", krate]);
    }
    cargo(&root, &args);
    for krate in LIBRARIES {
        let list = cargo(&root, &["package", "--list", "--offline", "--allow-dirty", "-p", krate]);
        assert!(list.lines().any(|l| l == "README.md"), "{krate} packages no README.md:\n{list}");
        for included in included_files(&root.join("crates").join(krate)) {
            assert!(
                list.lines().any(|l| l == included),
                "{krate} includes {included}, which its package does not hold (keep included \
                 files inside the crate):\n{list}"
            );
        }
        let manifest =
            std::fs::read_to_string(root.join("crates").join(krate).join("Cargo.toml")).unwrap();
        assert!(manifest.contains("readme = \"README.md\""), "{krate}: readme = \"README.md\"");
    }
}

#[test]
fn every_crate_is_a_library_or_not_published() {
    let crates = project_root().join("crates");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap().map(Result::unwrap) {
        let Ok(manifest) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let unpublished = manifest.lines().any(|l| l.trim() == "publish = false");
        if LIBRARIES.contains(&name.as_str()) == unpublished {
            found.push(name);
        }
    }
    found.sort();
    assert!(
        found.is_empty(),
        "a crate is either one of LIBRARIES (packaged, above) or `publish = false`: {found:?}"
    );
}

/// The files a crate's code names in `include_str!` or `include_bytes!`, relative to
/// the crate's folder (`..` resolved), so that a file outside the crate shows as such.
/// Comments are passed over: a doc example may read the workspace's fixtures, since
/// doc tests run in the workspace, not from the package.
fn included_files(krate: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut folders = vec![krate.join("src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let code: Vec<&str> =
                text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
            let text = code.join("\n");
            let here = path.parent().unwrap().strip_prefix(krate).unwrap().to_string_lossy();
            for marker in ["include_str!(\"", "include_bytes!(\""] {
                for rest in text.split(marker).skip(1) {
                    let Some((name, _)) = rest.split_once('"') else { continue };
                    let mut parts: Vec<&str> = here.split('/').collect();
                    for part in name.split('/') {
                        match (part, parts.last()) {
                            ("..", Some(&last)) if last != ".." => drop(parts.pop()),
                            _ => parts.push(part),
                        }
                    }
                    found.push(parts.join("/"));
                }
            }
        }
    }
    found
}
