//! A closed pipe ends the command quietly: when standard output's reader
//! goes away (`dispatch-kf ... | head`), the command ends with status 0 and nothing on
//! standard error, as ripgrep and kubectl do. docs/cli.md names these tests.

mod common;

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> String {
    format!("{}/../../fixtures/dumps/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// How long a command may run on once its reader is gone before the test gives up on
/// it: a guard against a test that hangs, not a measure of speed.
const GIVE_UP: Duration = Duration::from_secs(60);

/// Runs `cmd` with standard output a pipe whose reader reads `keep` bytes, then closes;
/// a reader that keeps nothing is closed before the command starts, so that its first
/// write is refused whatever the machine's load (closed after the start, it could take
/// a first write into the pipe's buffer). The command must end of itself, also one that
/// never writes again; after [`GIVE_UP`] it is killed and the test fails.
fn run_into_closed_pipe(mut cmd: Command, keep: usize) -> Output {
    let (mut reader, writer) = std::io::pipe().unwrap();
    cmd.stdout(writer).stderr(Stdio::piped());
    if keep == 0 {
        drop(reader);
        return wait_or_give_up(cmd.spawn().unwrap());
    }
    let child = cmd.spawn().unwrap();
    // The command holds the only writer now: ours went with `cmd`.
    drop(cmd);
    let mut first = vec![0; keep];
    reader.read_exact(&mut first).unwrap();
    drop(reader);
    wait_or_give_up(child)
}

/// Waits for `child` to end; after [`GIVE_UP`] kills it and fails the test.
fn wait_or_give_up(mut child: std::process::Child) -> Output {
    let closed = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if closed.elapsed() > GIVE_UP {
            child.kill().unwrap();
            panic!("still running {GIVE_UP:?} after its reader closed the pipe");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn assert_quiet_success(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.is_empty(), "stderr: {stderr}");
}

#[test]
fn demo_into_a_pipe_closed_after_a_few_bytes_ends_with_status_0() {
    let mut cmd = common::bin();
    cmd.args(["demo", "--scenario", "success"]);
    assert_quiet_success(&run_into_closed_pipe(cmd, 16));
}

#[test]
fn classify_into_a_pipe_closed_before_it_writes_ends_with_status_0() {
    let mut cmd = common::bin();
    cmd.args(["classify", "--nodes-readable", "-o", "json"])
        .arg(fixture("running-many-terminating.json"));
    assert_quiet_success(&run_into_closed_pipe(cmd, 0));
}

#[test]
fn sim_serve_whose_kubeconfig_cannot_be_written_ends_with_status_0() {
    // Before a closed pipe ended the command quietly, this panicked ("failed printing to
    // stdout") and exited 101.
    let mut cmd = common::bin();
    cmd.args(["sim", "serve"]);
    assert_quiet_success(&run_into_closed_pipe(cmd, 0));
}

#[test]
fn watch_of_a_quiet_job_ends_with_status_0_once_its_reader_is_gone() {
    // A gated TrainJob does not change: `watch` writes its first observation and then
    // nothing, so it cannot learn from a write that its reader has gone.
    const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";
    let served = common::Served::start("pipe-quiet-watch");
    served.start_job(JOB);
    let mut watch = served.command("watch");
    watch.args(["-o", "json", JOB]);
    assert_quiet_success(&run_into_closed_pipe(watch, 1));
}
