//! A cluster whose releases the adapter cannot drive is refused in one line that says
//! what to install (docs/compatibility.md): `preflight` and `start` exit 4
//! (*unsupported*) and print `dispatch-kf: unsupported: <why>` on standard error and
//! nothing else, having left nothing in the cluster.
//!
//! On the simulated cluster playing each release the adapter refuses, always; and on a
//! real cluster when `DISPATCH_KF_REFUSAL_KUBECONFIG` names one: `cargo xtask matrix`
//! sets it, with `DISPATCH_KF_REFUSAL_MODE` (`plain` or `kueue`) and
//! `DISPATCH_KF_REFUSAL_WORDS` (how the refusal begins), for each stack of the versions
//! table kept to be refused.

mod common;

use std::process::Command;

use dispatch_kf_model::internal::kueue::KUEUE_DOES_NOT_GATE;
use dispatch_kf_model::internal::served::TRAINER_WITHOUT_RUNTIME_PATCHES;
use serde_json::{Value, json};

const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";

/// Kueue-mode settings for the queue `cluster up --kueue` and `sim serve --kueue` make.
fn kueue_mode() -> Value {
    json!({"mode": "kueue", "kueue": {"queue": "team-a"}})
}

/// `preflight`, then `start` of `request`, each made by `command`: each exits 4 with one
/// line on standard error that begins `dispatch-kf: unsupported: <words>`.
fn assert_refused(command: impl Fn(&str) -> Command, request: &str, words: &str) {
    let runs = [("preflight", Vec::new()), ("start", vec!["--request", request])];
    for (subcommand, args) in runs {
        let out = command(subcommand).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{subcommand}: {stderr}");
        assert!(out.stdout.is_empty(), "{subcommand}: {}", String::from_utf8_lossy(&out.stdout));
        let begins = format!("dispatch-kf: unsupported: {words}");
        assert!(stderr.starts_with(&begins), "{subcommand}: want {begins:?}, got {stderr:?}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{subcommand}: one line: {stderr:?}");
    }
}

#[test]
fn a_trainer_without_runtime_patches_is_refused_by_preflight_and_start_in_one_line() {
    let flags = ["--trainer-without-runtime-patches"];
    let served = common::Served::start_with("refusal-trainer", &flags, json!({}));
    let request = served.request(JOB, 1);
    assert_refused(|s| served.command(s), &request, TRAINER_WITHOUT_RUNTIME_PATCHES);
    assert_eq!(served.kubectl(&["get", "trainjobs", "-o", "name"], None).unwrap(), "");
}

#[test]
fn kueue_without_admission_gated_by_is_refused_by_preflight_and_start_in_one_line() {
    let flags = ["--kueue", "--gate", "--kueue-without-admission-gated-by"];
    let served = common::Served::start_with("refusal-kueue", &flags, kueue_mode());
    let request = served.request(JOB, 1);
    let words = format!("{KUEUE_DOES_NOT_GATE}: it made Workload ");
    assert_refused(|s| served.command(s), &request, &words);
    assert_eq!(served.kubectl(&["get", "trainjobs", "-o", "name"], None).unwrap(), "");
}

/// The real cluster `cargo xtask matrix` names, refused as its stack expects; without
/// one, says so and checks nothing (the tests above hold the same story on the
/// simulated cluster).
#[test]
fn a_real_cluster_kept_to_be_refused_is_refused_by_preflight_and_start_in_one_line() {
    let Ok(kubeconfig) = std::env::var("DISPATCH_KF_REFUSAL_KUBECONFIG") else {
        println!(
            "skipped: no real cluster to be refused (DISPATCH_KF_REFUSAL_KUBECONFIG is unset)"
        );
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let (mode, words) = (var("DISPATCH_KF_REFUSAL_MODE"), var("DISPATCH_KF_REFUSAL_WORDS"));
    let dir = std::env::temp_dir().join(format!("dispatch-kf-refusal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut settings = json!({
        "name": "kf-refused", "namespace": "default", "kubeconfig": {"path": kubeconfig},
        "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}]
    });
    if mode == "kueue" {
        settings.as_object_mut().unwrap().extend(kueue_mode().as_object().unwrap().clone());
    }
    let settings_file = dir.join("settings.json");
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let request = common::write_request(&dir, JOB, 1);
    let command = |subcommand: &str| {
        let mut cmd = common::bin();
        cmd.env("XDG_CACHE_HOME", dir.join("cache"));
        cmd.arg(subcommand).arg("--settings").arg(&settings_file);
        cmd
    };
    assert_refused(command, &request, &words);
    std::fs::remove_dir_all(&dir).unwrap();
}
