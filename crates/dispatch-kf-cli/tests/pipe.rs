//! A closed pipe ends the command quietly (issue 19): when standard output's reader
//! goes away (`dispatch-kf ... | head`), the command ends with status 0 and nothing on
//! standard error, as ripgrep and kubectl do. docs/cli.md names these tests.

use std::io::Read;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dispatch-kf"));
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    cmd
}

fn fixture(name: &str) -> String {
    format!("{}/../../fixtures/dumps/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `cmd` with standard output a pipe whose reader reads `keep` bytes, then closes.
fn run_into_closed_pipe(mut cmd: Command, keep: usize) -> Output {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let child = cmd.stdout(writer).spawn().unwrap();
    // The command holds the only writer now: ours went with `cmd`.
    drop(cmd);
    let mut first = vec![0; keep];
    reader.read_exact(&mut first).unwrap();
    drop(reader);
    child.wait_with_output().unwrap()
}

fn assert_quiet_success(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.is_empty(), "stderr: {stderr}");
}

#[test]
fn demo_into_a_pipe_closed_after_a_few_bytes_ends_with_status_0() {
    let mut cmd = bin();
    cmd.args(["demo", "--scenario", "success"]);
    assert_quiet_success(&run_into_closed_pipe(cmd, 16));
}

#[test]
fn classify_into_a_pipe_closed_before_it_writes_ends_with_status_0() {
    let mut cmd = bin();
    cmd.args(["classify", "--nodes-readable", "-o", "json"])
        .arg(fixture("running-many-terminating.json"));
    assert_quiet_success(&run_into_closed_pipe(cmd, 0));
}

#[test]
fn sim_serve_whose_kubeconfig_cannot_be_written_ends_with_status_0() {
    // Until issue 19 this panicked ("failed printing to stdout") and exited 101.
    let mut cmd = bin();
    cmd.args(["sim", "serve"]);
    assert_quiet_success(&run_into_closed_pipe(cmd, 0));
}
