//! Ctrl-C ends `watch` cleanly: SIGINT ends the command with status 130, as
//! a shell reports a command that Ctrl-C ended, with no error text and no panic.
//! docs/cli.md names this test; `output::tests` covers the status of each ending.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";

#[test]
fn ctrl_c_during_watch_ends_with_130_and_no_error_text() {
    let served = common::Served::start("interrupt-watch");
    served.start_job(JOB);

    let mut watch = served
        .command("watch")
        .args(["-o", "json", JOB])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first observation is written: the command is watching, its handler is in place.
    // Its reader stays until the end: a watch whose reader has gone ends of itself, with 0.
    let mut first = String::new();
    let mut stdout = BufReader::new(watch.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("\"TrainJob\""), "{first}");
    let sent = std::process::Command::new("kill")
        .args(["-INT", &watch.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = watch.wait_with_output().unwrap();
    drop(stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{:?} stderr: {stderr}", out.status);
    assert!(stderr.is_empty(), "stderr: {stderr}");
}
