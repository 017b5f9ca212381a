//! Ctrl-C ends `watch` cleanly (issue 19): SIGINT ends the command with status 130, as
//! a shell reports a command that Ctrl-C ended, with no error text and no panic.
//! docs/cli.md names this test; `output::tests` covers the status of each ending.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";

#[test]
fn ctrl_c_during_watch_ends_with_130_and_no_error_text() {
    let served = common::Served::start("interrupt-watch");
    let request = serde_json::json!({
        "job": JOB, "generation": 0, "submission": 1, "attempt": 1,
        "spec": {"command": ["python", "train.py"], "nodes": 1, "gpusPerNode": 8,
          "extensions": {"dispatch/Image": {"ref": "ghcr.io/acme/train:1.4"},
            "kubeflow/RuntimeRef": {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}}}
    });
    let path =
        std::env::temp_dir().join(format!("dispatch-kf-request-{}.json", std::process::id()));
    std::fs::write(&path, request.to_string()).unwrap();
    let started = served.command("start").arg("--request").arg(&path).output().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));

    let mut watch = served
        .command("watch")
        .args(["-o", "json", JOB])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first observation is written: the command is watching, its handler is in place.
    let mut first = String::new();
    BufReader::new(watch.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("\"TrainJob\""), "{first}");
    let sent = std::process::Command::new("kill")
        .args(["-INT", &watch.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = watch.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{:?} stderr: {stderr}", out.status);
    assert!(stderr.is_empty(), "stderr: {stderr}");
}
