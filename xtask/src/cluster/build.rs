//! Building the control plane's commands from their Go modules, once: each lands in the
//! cache as `<command>-<version>`, so a second `cluster up` builds nothing, stacks share
//! the commands they have in common, and a new version in `versions.rs` builds anew
//! beside the old one.
//!
//! Nothing upstream is copied into the repository: the wrapper modules are written into
//! the cache from the versions table, and Go fetches the sources from the module proxy.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::versions::{Component, Recipe, Stack, staging_version};
use crate::run;

/// Where built commands, wrapper modules and the cluster's run state are kept: outside
/// the repository, so a fresh clone on the same machine reuses them.
pub(crate) fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("dispatch-kf").join("cluster")
}

/// The cached binary of `component`.
pub(crate) fn binary(component: &Component) -> PathBuf {
    cache_dir().join("bin").join(format!("{}-{}", component.command, component.version))
}

/// Builds every command of `stack` not yet in the cache, printing what it does; the
/// first build on an empty Go cache takes a while (docs/dev/real-cluster.md has the figures).
pub(crate) fn build_missing(stack: &Stack) -> run::Result {
    let missing: Vec<Component> =
        stack.components().into_iter().filter(|c| !binary(c).exists()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(cache_dir().join("bin")).map_err(|e| format!("cache: {e}"))?;
    let kube: Vec<Component> =
        missing.iter().copied().filter(|c| c.recipe == Recipe::Kubernetes).collect();
    if !kube.is_empty() {
        build_kubernetes(stack.kubernetes, &kube)?;
    }
    for component in missing.iter().filter(|c| c.recipe != Recipe::Kubernetes) {
        build_wrapped(component)?;
    }
    Ok(())
}

/// The flags every build shares: static, reproducible paths, no symbol tables.
fn go(args: &[&str], dir: &Path) -> Command {
    let mut go = Command::new("go");
    go.args(args)
        .current_dir(dir)
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local");
    go
}

fn run_go(mut command: Command, what: &str) -> run::Result {
    eprintln!("xtask: building {what} (once; cached in {})", cache_dir().display());
    let started = std::time::Instant::now();
    let status = command.status().map_err(|e| format!("cannot run go (is Go installed?): {e}"))?;
    if !status.success() {
        return Err(format!("building {what} failed: {status}"));
    }
    eprintln!("xtask: built {what} in {:.0?}", started.elapsed());
    Ok(())
}

/// A fresh folder in the cache for one build's wrapper module or output.
fn work_dir(name: &str) -> Result<PathBuf, String> {
    let dir = cache_dir().join("src").join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn write(path: &Path, text: &str) -> run::Result {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn rename(from: &Path, to: &Path) -> run::Result {
    std::fs::rename(from, to).map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))
}

/// A wrapper module requiring the component's module, then `go build` of its package.
fn build_wrapped(component: &Component) -> run::Result {
    let dir = work_dir(&format!("{}-{}", component.command, component.version))?;
    write(
        &dir.join("go.mod"),
        &format!(
            "module dispatchkf.local/{}\n\ngo 1.26.0\n\nrequire {} {}\n",
            component.command, component.module, component.version
        ),
    )?;
    let out = binary(component);
    let out_arg = out.to_str().ok_or("the cache path is not UTF-8")?;
    let command =
        go(&["build", "-trimpath", "-ldflags=-s -w", "-o", out_arg, component.package], &dir);
    run_go(command, &format!("{} {}", component.command, component.version))
}

/// The Kubernetes commands of release `kubernetes`, from one wrapper module (a folder
/// per release) whose `go.mod` is upstream's own with the module renamed, each staging
/// module replaced by its published version, and `k8s.io/kubernetes` itself required:
/// the same dependency versions upstream builds with.
fn build_kubernetes(kubernetes: &str, commands: &[Component]) -> run::Result {
    let dir = work_dir(&format!("kubernetes-{kubernetes}"))?;
    let upstream = module_file("k8s.io/kubernetes", kubernetes, "GoMod")?;
    let upstream = std::fs::read_to_string(&upstream).map_err(|e| format!("{upstream}: {e}"))?;
    write(&dir.join("go.mod"), &wrapper_go_mod(&upstream, kubernetes)?)?;
    let out = dir.join("out");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (major, minor) = kube_major_minor(kubernetes)?;
    let ldflags = format!(
        "-s -w -X k8s.io/component-base/version.gitVersion={kubernetes} \
         -X k8s.io/component-base/version.gitMajor={major} \
         -X k8s.io/component-base/version.gitMinor={minor}"
    );
    let out_arg = format!("{}/", out.to_str().ok_or("the cache path is not UTF-8")?);
    let mut args =
        vec!["build", "-trimpath", "-tags", "grpcnotrace", "-ldflags", &ldflags, "-o", &out_arg];
    args.extend(commands.iter().map(|c| c.package));
    let names: Vec<&str> = commands.iter().map(|c| c.command).collect();
    run_go(go(&args, &dir), &format!("{} {kubernetes}", names.join(", ")))?;
    for component in commands {
        rename(&out.join(component.command), &binary(component))?;
    }
    Ok(())
}

fn kube_major_minor(kubernetes: &str) -> Result<(String, String), String> {
    let mut parts = kubernetes.trim_start_matches('v').split('.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => Ok((major.to_owned(), minor.to_owned())),
        _ => Err(format!("{kubernetes} is not vMAJOR.MINOR.PATCH")),
    }
}

/// Upstream's `go.mod` made into a wrapper: Go applies only the main module's replace
/// lines, so the staging modules (`=> ./staging/src/k8s.io/X`) must be replaced here,
/// each by its version of the release `kubernetes`.
fn wrapper_go_mod(upstream: &str, kubernetes: &str) -> Result<String, String> {
    let staging = staging_version(kubernetes)
        .ok_or_else(|| format!("the Kubernetes version {kubernetes} is not v1.Y.Z"))?;
    let mut out = String::new();
    for line in upstream.lines() {
        if line.starts_with("module ") {
            out.push_str("module dispatchkf.local/kubernetes\n");
        } else if let Some((left, _)) = line.split_once("=> ./staging/src/") {
            let module = left.trim();
            out.push_str(&format!("\t{module} => {module} {staging}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(&format!("\nrequire k8s.io/kubernetes {kubernetes}\n"));
    Ok(out)
}

/// A file of a module version, as `go mod download -json` names it (`GoMod`, `Dir`).
fn module_file(module: &str, version: &str, field: &str) -> Result<String, String> {
    let output = Command::new("go")
        .args(["mod", "download", "-json", &format!("{module}@{version}")])
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(|e| format!("cannot run go (is Go installed?): {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("go mod download {module}: {e}: {text}"))?;
    if let Some(error) = value["Error"].as_str() {
        return Err(format!("go mod download {module}@{version}: {error}"));
    }
    value[field]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("go mod download {module}@{version} gave no {field}"))
}

/// The folder holding a module's files (CRDs, webhook manifests, runtimes).
pub(crate) fn module_dir(component: &Component) -> Result<PathBuf, String> {
    module_file(component.module, component.version, "Dir").map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::super::versions::STACKS;
    use super::*;

    const UPSTREAM: &str = "module k8s.io/kubernetes\n\ngo 1.26.0\n\nrequire k8s.io/api v0.0.0\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n)\n";

    #[test]
    fn the_wrapper_replaces_every_staging_module_with_its_published_version() {
        let wrapper = wrapper_go_mod(UPSTREAM, "v1.36.3").unwrap();
        assert!(wrapper.starts_with("module dispatchkf.local/kubernetes\n"), "{wrapper}");
        assert!(wrapper.contains("\tk8s.io/api => k8s.io/api v0.36.3\n"), "{wrapper}");
        assert!(wrapper.contains("\tk8s.io/client-go => k8s.io/client-go v0.36.3\n"), "{wrapper}");
        assert!(!wrapper.contains("./staging"), "{wrapper}");
        assert!(wrapper.ends_with("require k8s.io/kubernetes v1.36.3\n"), "{wrapper}");
    }

    #[test]
    fn each_stacks_wrapper_takes_the_staging_versions_of_its_own_kubernetes() {
        for stack in &STACKS {
            let wrapper = wrapper_go_mod(UPSTREAM, stack.kubernetes).unwrap();
            let staging = staging_version(stack.kubernetes).unwrap();
            assert!(
                wrapper.contains(&format!("k8s.io/api => k8s.io/api {staging}\n")),
                "{wrapper}"
            );
            assert!(
                wrapper.ends_with(&format!("require k8s.io/kubernetes {}\n", stack.kubernetes))
            );
            let (major, minor) = kube_major_minor(stack.kubernetes).unwrap();
            assert_eq!(
                format!("v{major}.{minor}."),
                stack.kubernetes[..format!("v{major}.{minor}.").len()]
            );
        }
        assert!(wrapper_go_mod(UPSTREAM, "1.36.3").is_err());
    }
}
