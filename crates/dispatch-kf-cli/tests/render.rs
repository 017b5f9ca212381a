//! `dispatch-kf render` run as a built binary on the render fixtures: an accepted case
//! prints a v1 List and exits 0; a refused one prints one error line and exits with its
//! sentinel's code.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/render")
}

fn render(case: &str, runtime: Option<&str>, extra: &[&str]) -> Output {
    let dir = fixtures();
    let runtime = runtime.map_or(dir.join("runtime-torch.json"), |r| dir.join(case).join(r));
    Command::new(env!("CARGO_BIN_EXE_dispatch-kf"))
        .arg("render")
        .arg("--settings")
        .arg(dir.join("settings-plain.json"))
        .arg("--runtime")
        .arg(runtime)
        .arg("--request")
        .arg(dir.join(case).join("request.json"))
        .args(extra)
        .output()
        .expect("the binary runs")
}

#[test]
fn render_prints_a_list_of_the_copy_and_the_trainjob() {
    let out = render("accept-minimal-plain", None, &["--token", "0123456789abcdef", "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let kinds: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["TrainingRuntime", "TrainJob"]);
    let job = &list["items"][1];
    assert_eq!(job["metadata"]["name"], "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1");
    assert_eq!(
        job["metadata"]["annotations"]["dispatch.phpboyscout.uk/attempt-token"],
        "1-0123456789abcdef"
    );
    assert_eq!(job["spec"]["suspend"], true);
}

#[test]
fn render_without_token_draws_sixteen_hex() {
    let out = render("accept-minimal-plain", None, &["-o", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let token =
        list["items"][0]["metadata"]["annotations"]["dispatch.phpboyscout.uk/attempt-token"]
            .as_str()
            .unwrap();
    let hex = token.strip_prefix("1-").unwrap();
    assert!(
        hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{token}"
    );
}

#[test]
fn a_refused_render_exits_with_the_sentinels_code() {
    let out = render(
        "refuse-rule3-restart-on-failure",
        Some("runtime.json"),
        &["--token", "0123456789abcdef"],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "dispatch-kf: unsupported: runtime ClusterTrainingRuntime/torch-distributed cannot run the job: \
         replicated job node has restartPolicy \"OnFailure\": want Never, so a failed container is not restarted in place\n"
    );
}

#[test]
fn an_invalid_request_or_token_exits_3() {
    let out = render("refuse-job-id-lower-case", None, &[]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("dispatch-kf: invalid: ") && err.contains("request key `job`"),
        "{err}"
    );
    let out = render("accept-minimal-plain", None, &["--token", "XYZ"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token: attempt token suffix \"XYZ\""));
}
