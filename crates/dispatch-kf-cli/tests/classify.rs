//! `dispatch-kf classify` run as a binary: a fixture prints core.md's JSON, a file that
//! is not JSON exits 3 (invalid) with a message naming the file and position, and an
//! input with no Node is classified as without permission to read Nodes unless
//! `--nodes-readable` says otherwise (refinement R6).

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dispatch-kf"))
}

fn fixture(name: &str) -> String {
    format!("{}/../../fixtures/dumps/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn classify_prints_the_observations_as_json() {
    let out = bin()
        .args(["classify", "--now", "2026-11-29T12:00:00Z", "-o", "json"])
        .arg(fixture("failed-jobs-oom.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let obs: Vec<dispatch_core::ObjectObs> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(obs.len(), 1);
    assert_eq!(obs[0].cause.kind, dispatch_core::CauseKind::OutOfMemory);
    assert_eq!(obs[0].cause.exit_code, Some(137));
    assert_eq!(obs[0].object.backend, "kubeflow");
    assert_eq!(obs[0].seen_at.to_string(), "2026-11-29T12:00:00Z");
}

#[test]
fn classify_merges_files_and_prints_a_wide_table() {
    let out = bin()
        .args(["classify", "--now", "2026-11-29T12:00:00Z", "--mode", "kueue", "-o", "wide"])
        .args([fixture("kueue-preempted.json"), fixture("kueue-gated.json")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("KIND"), "{text}");
    assert!(lines[0].contains("PROVENANCE") && lines[0].ends_with("DETAIL"), "{text}");
    assert!(text.contains("preempted") && text.contains("gated"), "{text}");
    assert!(text.contains("waiting for Open"), "{text}");
}

#[test]
fn a_file_that_is_not_json_exits_3_naming_the_file_and_position() {
    let path =
        std::env::temp_dir().join(format!("dispatch-kf-not-json-{}.json", std::process::id()));
    std::fs::write(&path, "apiVersion: v1\nkind: List\n").unwrap();
    let out = bin().args(["classify", "-o", "json"]).arg(&path).output().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("dispatch-kf: invalid: "), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("line 1, column 1"), "{err}");
}

#[test]
fn a_bad_now_is_invalid() {
    let out = bin()
        .args(["classify", "--now", "yesterday", "-o", "json"])
        .arg(fixture("running.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--now yesterday"));
}

/// Runs `classify -o json` on a fixture, piped to standard input as `-`, with `flags`:
/// the cause kinds and standard error.
fn classify_stdin(name: &str, flags: &[&str]) -> (Vec<dispatch_core::CauseKind>, String) {
    use std::io::Write;
    let mut child = bin()
        .args(["classify", "--now", "2026-11-29T12:00:00Z", "-o", "json"])
        .args(flags)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&std::fs::read(fixture(name)).unwrap()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    let obs: Vec<dispatch_core::ObjectObs> = serde_json::from_slice(&out.stdout).unwrap();
    (obs.into_iter().map(|o| o.cause.kind).collect(), err)
}

#[test]
fn an_input_without_nodes_is_read_as_without_permission_and_says_so_once() {
    use dispatch_core::CauseKind::{NodeLost, None as NoCause};
    let (kinds, err) = classify_stdin("real-running-no-nodes.json", &[]);
    assert_eq!(kinds, [NoCause], "running pods are not node-lost for want of Nodes");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("dispatch-kf: the input holds no Node"), "{err}");
    assert!(err.contains("--nodes-readable"), "{err}");

    let (kinds, err) = classify_stdin("real-running-no-nodes.json", &["--nodes-readable"]);
    assert_eq!(kinds, [NodeLost], "--nodes-readable: the Nodes are gone");
    assert_eq!(err, "");

    let (kinds, err) = classify_stdin("real-running-no-nodes.json", &["--nodes-readable=false"]);
    assert_eq!((kinds, err.as_str()), (vec![NoCause], ""), "said, so nothing to say");

    let (kinds, err) = classify_stdin("real-node-ready-unknown.json", &[]);
    assert_eq!((kinds, err.as_str()), (vec![NodeLost], ""), "an input with Nodes reads them");
}
