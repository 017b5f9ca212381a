//! `cargo xtask dist [--target TRIPLE]...`: the release archives of the kubectl plugin
//! and its krew manifest (docs/install.md).
//!
//! For each target (default: the host's), a build of `kubectl-dispatch` with the release
//! profile, stripped, and without the simulated cluster (the CLI crate's default
//! feature `sim`: `demo` and `sim serve` are the command's, not the plugin's), packed
//! as `target/dist/kubectl-dispatch-v<version>-<target>.tar.gz` holding the binary and
//! `LICENSE` at its top level; then `target/dist/dispatch.yaml`, the krew manifest of
//! `plugins/dispatch.yaml` with each built archive's SHA-256 and only the platforms
//! built. The manifest's names, version, URIs and file list are held to this module's
//! table by the tests below, so the manifest and the archives cannot drift apart.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;

use crate::run::{self, project_root, target_dir};

/// The binary kubectl runs as `kubectl dispatch`, as `crates/dispatch-kf-cli` names it.
pub(crate) const BINARY: &str = "kubectl-dispatch";

/// The cargo profile the plugin is built with: the release profile, stripped
/// (`Cargo.toml`).
pub(crate) const PROFILE: &str = "shipped";

/// What each archive holds, at its top level.
pub(crate) const ARCHIVE_ENTRIES: [&str; 2] = [BINARY, "LICENSE"];

/// The krew manifest, beside the plugin's name.
const MANIFEST: &str = "plugins/dispatch.yaml";

/// One platform krew installs on: the Rust target built for it, and krew's `os` and
/// `arch` selector labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Platform {
    /// The Rust target triple.
    pub(crate) target: &'static str,
    /// krew's `os` label.
    pub(crate) os: &'static str,
    /// krew's `arch` label.
    pub(crate) arch: &'static str,
}

/// Every platform the manifest offers. Windows is not among them: the command's
/// closed-pipe and Ctrl-C handling is written for Unix.
pub(crate) const PLATFORMS: [Platform; 4] = [
    Platform { target: "x86_64-unknown-linux-gnu", os: "linux", arch: "amd64" },
    Platform { target: "aarch64-unknown-linux-gnu", os: "linux", arch: "arm64" },
    Platform { target: "x86_64-apple-darwin", os: "darwin", arch: "amd64" },
    Platform { target: "aarch64-apple-darwin", os: "darwin", arch: "arm64" },
];

/// The archive's file name for `version` (no leading `v`) and `target`.
pub(crate) fn archive_name(version: &str, target: &str) -> String {
    format!("{BINARY}-v{version}-{target}.tar.gz")
}

/// Where a release's archive is downloaded from: the repository's release of the tag
/// `v<version>`.
pub(crate) fn archive_uri(repository: &str, version: &str, target: &str) -> String {
    let name = archive_name(version, target);
    format!("{}/releases/download/v{version}/{name}", repository.trim_end_matches('/'))
}

/// The workspace's `version` and `repository` (`[workspace.package]` of the root
/// manifest).
pub(crate) fn workspace_package() -> Result<(String, String), String> {
    let text = std::fs::read_to_string(project_root().join("Cargo.toml"))
        .map_err(|e| format!("cannot read Cargo.toml: {e}"))?;
    let section = text.split("[workspace.package]").nth(1).unwrap_or("");
    let section = section.split("\n[").next().unwrap_or("");
    let field = |key: &str| {
        section
            .lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().trim_matches('"').to_owned())
            .ok_or_else(|| format!("Cargo.toml: [workspace.package] has no {key}"))
    };
    Ok((field("version")?, field("repository")?))
}

/// Packs `binary` and the workspace's `LICENSE` as `archive` (a tar.gz, both at its top
/// level, the binary named [`BINARY`]).
pub(crate) fn pack(binary: &Path, archive: &Path) -> run::Result {
    let staging = archive.with_extension("staging");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    let copy = |from: &Path, to: &str| {
        std::fs::copy(from, staging.join(to))
            .map(|_| ())
            .map_err(|e| format!("cannot copy {}: {e}", from.display()))
    };
    copy(binary, BINARY)?;
    copy(&project_root().join("LICENSE"), "LICENSE")?;
    let status = Command::new("tar")
        .arg("-czf")
        .arg(archive)
        .arg("-C")
        .arg(&staging)
        .args(ARCHIVE_ENTRIES)
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let _ = std::fs::remove_dir_all(&staging);
    if status.success() { Ok(()) } else { Err(format!("tar failed: {status}")) }
}

/// The SHA-256 of a file, in hex.
pub(crate) fn sha256(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    Ok(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

/// The checked-in krew manifest.
pub(crate) fn manifest() -> Result<Value, String> {
    let text = std::fs::read_to_string(project_root().join(MANIFEST))
        .map_err(|e| format!("cannot read {MANIFEST}: {e}"))?;
    serde_yaml_ng::from_str(&text).map_err(|e| format!("{MANIFEST}: {e}"))
}

/// `manifest` with only the platforms of `built` (target, SHA-256), each with its SHA-256.
pub(crate) fn released(mut manifest: Value, built: &[(&str, String)]) -> Result<Value, String> {
    let platforms = manifest
        .get_mut("spec")
        .and_then(|s| s.get_mut("platforms"))
        .and_then(Value::as_sequence_mut)
        .ok_or_else(|| format!("{MANIFEST} has no spec.platforms"))?;
    let mut kept = Vec::new();
    for mut platform in platforms.drain(..) {
        let target = platform_target(&platform)?;
        if let Some((_, sha)) = built.iter().find(|(t, _)| *t == target.target) {
            platform["sha256"] = Value::String(sha.clone());
            kept.push(platform);
        }
    }
    *platforms = kept;
    Ok(manifest)
}

/// The platform of [`PLATFORMS`] a manifest entry selects.
pub(crate) fn platform_target(platform: &Value) -> Result<Platform, String> {
    let label = |key: &str| platform["selector"]["matchLabels"][key].as_str().unwrap_or("");
    let (os, arch) = (label("os"), label("arch"));
    PLATFORMS
        .into_iter()
        .find(|p| p.os == os && p.arch == arch)
        .ok_or_else(|| format!("{MANIFEST}: no target for os {os:?}, arch {arch:?}"))
}

/// The host's target triple, as rustc reports it.
fn host_target() -> Result<String, String> {
    let out = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned()))
        .arg("-vV")
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| "rustc -vV named no host".to_owned())
}

/// The targets `--target` names, else the host's.
fn targets(args: &[String]) -> Result<Vec<String>, String> {
    let usage = || "usage: cargo xtask dist [--target TRIPLE]...".to_owned();
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--target" => targets.push(args.next().ok_or_else(usage)?.clone()),
            _ => return Err(usage()),
        }
    }
    if targets.is_empty() {
        targets.push(host_target()?);
    }
    Ok(targets)
}

/// `cargo xtask dist`.
pub(crate) fn run(args: &[String]) -> run::Result {
    let targets = targets(args)?;
    let (version, repository) = workspace_package()?;
    let dist = target_dir().join("dist");
    std::fs::create_dir_all(&dist).map_err(|e| format!("{}: {e}", dist.display()))?;
    let mut built = Vec::new();
    for target in &targets {
        let platform = PLATFORMS.iter().find(|p| p.target == target);
        let platform =
            platform.ok_or_else(|| format!("{target} is not a platform of {MANIFEST}"))?;
        run::cargo(&[
            "build",
            "--profile",
            PROFILE,
            "--locked",
            "-p",
            "dispatch-kf-cli",
            "--bin",
            BINARY,
            "--no-default-features",
            "--target",
            target,
        ])?;
        let binary: PathBuf = target_dir().join(target).join(PROFILE).join(BINARY);
        let archive = dist.join(archive_name(&version, target));
        pack(&binary, &archive)?;
        let sha = sha256(&archive)?;
        eprintln!("{}  {sha}", archive.display());
        eprintln!("  to be served at {}", archive_uri(&repository, &version, target));
        built.push((platform.target, sha));
    }
    let manifest = released(manifest()?, &built)?;
    let text = serde_yaml_ng::to_string(&manifest).map_err(|e| e.to_string())?;
    let out = dist.join("dispatch.yaml");
    std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "krew manifest: {} (kubectl krew install --manifest=... --archive=...)",
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SHA-256 the checked-in manifest carries until `dist` computes one.
    const PLACEHOLDER_SHA256: &str =
        "0000000000000000000000000000000000000000000000000000000000000000";

    /// The checked-in manifest names the binary the CLI crate builds, the workspace's
    /// version, every platform of the table once, each with the URI of the archive
    /// `dist` makes for its target, and the files that archive holds.
    #[test]
    fn the_krew_manifest_matches_the_binary_and_the_archives_dist_makes() {
        let manifest = manifest().unwrap();
        let (version, repository) = workspace_package().unwrap();
        assert_eq!(manifest["apiVersion"], "krew.googlecontainertools.github.com/v1alpha2");
        assert_eq!(manifest["kind"], "Plugin");
        assert_eq!(manifest["metadata"]["name"], "dispatch", "kubectl dispatch");
        assert_eq!(manifest["spec"]["version"].as_str(), Some(format!("v{version}").as_str()));
        let cli = std::fs::read_to_string(project_root().join("crates/dispatch-kf-cli/Cargo.toml"));
        assert!(cli.unwrap().contains(&format!("name = \"{BINARY}\"")), "the CLI builds {BINARY}");

        let platforms = manifest["spec"]["platforms"].as_sequence().unwrap();
        let mut seen = Vec::new();
        for platform in platforms {
            let p = platform_target(platform).unwrap();
            seen.push(p.target);
            assert_eq!(
                platform["uri"].as_str(),
                Some(&*archive_uri(&repository, &version, p.target))
            );
            assert_eq!(platform["bin"], BINARY, "{}", p.target);
            assert_eq!(platform["sha256"], PLACEHOLDER_SHA256, "dist fills it in");
            let files: Vec<(&str, &str)> = platform["files"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|f| (f["from"].as_str().unwrap(), f["to"].as_str().unwrap()))
                .collect();
            let want: Vec<(&str, &str)> = ARCHIVE_ENTRIES.iter().map(|e| (*e, ".")).collect();
            assert_eq!(files, want, "{}", p.target);
        }
        let table: Vec<&str> = PLATFORMS.iter().map(|p| p.target).collect();
        assert_eq!(seen, table);
    }

    /// An archive `pack` makes holds the binary and LICENSE at its top level, as the
    /// manifest's `files` take them, and the released manifest carries its SHA-256 for
    /// the platforms built and no others.
    #[test]
    fn an_archive_holds_the_binary_and_license_and_the_released_manifest_its_sha256() {
        let dir = std::env::temp_dir().join(format!("xtask-dist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let binary = dir.join("built");
        std::fs::write(&binary, b"#!/bin/sh\necho dispatch\n").unwrap();
        let archive = dir.join(archive_name("0.1.0", "x86_64-unknown-linux-gnu"));
        pack(&binary, &archive).unwrap();
        let listed = Command::new("tar").arg("-tzf").arg(&archive).output().unwrap();
        let listed = String::from_utf8(listed.stdout).unwrap();
        assert_eq!(listed.lines().collect::<Vec<_>>(), ARCHIVE_ENTRIES);
        let unpacked = dir.join("unpacked");
        std::fs::create_dir_all(&unpacked).unwrap();
        let status =
            Command::new("tar").arg("-xzf").arg(&archive).arg("-C").arg(&unpacked).status();
        assert!(status.unwrap().success());
        assert_eq!(std::fs::read(unpacked.join(BINARY)).unwrap(), b"#!/bin/sh\necho dispatch\n");

        let sha = sha256(&archive).unwrap();
        assert_eq!(sha.len(), 64);
        let released = released(manifest().unwrap(), &[("aarch64-apple-darwin", sha.clone())]);
        let platforms = released.unwrap()["spec"]["platforms"].clone();
        let platforms = platforms.as_sequence().unwrap();
        assert_eq!(platforms.len(), 1);
        assert_eq!(platforms[0]["selector"]["matchLabels"]["os"], "darwin");
        assert_eq!(platforms[0]["sha256"].as_str(), Some(sha.as_str()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sha256_is_the_known_digest() {
        let file = std::env::temp_dir().join(format!("xtask-sha-{}", std::process::id()));
        std::fs::write(&file, b"abc").unwrap();
        let want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256(&file).unwrap(), want);
        std::fs::remove_file(&file).unwrap();
    }
}
