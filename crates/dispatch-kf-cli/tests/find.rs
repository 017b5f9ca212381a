//! `find`'s machine-readable output has one shape: the object with the
//! job, its `objects` and its `inFlight` mark, whether standard output is not a terminal
//! and no `-o` is given, or `-o json` or `-o yaml` is. docs/cli.md names these tests.

mod common;

use dispatch_core::Discovery;

const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";

fn find(served: &common::Served, format: &[&str]) -> Vec<u8> {
    let out = served.command("find").args(format).arg(JOB).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// A read needs no settings file; the kubeconfig's context is enough.
#[test]
fn find_with_only_a_kubeconfig_reads_the_current_contexts_namespace() {
    let served = common::Served::start("find-kubeconfig-only");
    let out =
        served.command_with_kubeconfig_only("find").args(["-o", "json", JOB]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let found: Discovery = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found.job.as_str(), JOB);
    let bad =
        served.command_with_kubeconfig_only("find").args(["--runtime", "torch", JOB]).output();
    let bad = bad.unwrap();
    assert_eq!(bad.status.code(), Some(3), "a usage the command refuses is Invalid");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--runtime \"torch\" is not KIND/NAME"));
}

#[test]
fn find_off_a_terminal_prints_the_same_object_as_with_o_json() {
    let served = common::Served::start("find-shape");
    let default = find(&served, &[]);
    let json = find(&served, &["-o", "json"]);
    assert_eq!(String::from_utf8_lossy(&default), String::from_utf8_lossy(&json));
    let value: serde_json::Value = serde_json::from_slice(&default).unwrap();
    let mut keys: Vec<&String> =
        value.as_object().expect("an object, not an array").keys().collect();
    keys.sort();
    assert_eq!(keys, ["inFlight", "job", "objects"], "{value}");
    let found: Discovery = serde_json::from_value(value).unwrap();
    let yaml: Discovery = serde_yaml_ng::from_slice(&find(&served, &["-o", "yaml"])).unwrap();
    assert_eq!(found, yaml);
}

/// `-o name` prints a line per object as `kubectl get -o name` does,
/// which kubectl takes back as it is.
#[test]
fn find_o_name_prints_what_kubectl_takes() {
    let served = common::Served::start("find-name");
    let request = served.request(JOB, 1);
    let started =
        served.command("start").args(["-o", "name", "--request", &request]).output().unwrap();
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    let name = "trainjob.trainer.kubeflow.org/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1\n";
    assert_eq!(String::from_utf8_lossy(&started.stdout), name);
    assert_eq!(String::from_utf8_lossy(&find(&served, &["-o", "name"])), name);
}
