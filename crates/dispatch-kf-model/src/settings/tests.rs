//! Tests of the settings reader: a file that sets every key of `docs/settings.md`, the
//! defaults, and one test per refusal, each asserting the sentinel and the key path in
//! the message.

use super::*;
use dispatch_core::Kind;
use serde_json::json;

fn minimal() -> Value {
    json!({"name": "kubeflow-prod", "namespace": "training",
           "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}]})
}

fn refused(doc: Value) -> String {
    let err = Settings::from_value(&doc).unwrap_err();
    assert!(err.is(Kind::Invalid), "{err:?}");
    err.message().to_owned()
}

#[test]
fn the_example_of_names_md_reads() {
    let yaml = br#"
name: kubeflow-prod
namespace: training
kubeconfig: {path: "~/.kube/config", context: prod}
readOnly: false
mode: kueue
runtimes: [{kind: ClusterTrainingRuntime, name: torch-distributed}]
probeRuntime: {kind: ClusterTrainingRuntime, name: torch-distributed}
gpuResource: nvidia.com/gpu
kueue: {queue: team-a, admissionCheck: dispatch-readmission,
        lease: {namespace: dispatch-system, name: dispatch-readmission-gate}}
timeouts: {request: 30s, workload: 60s, stopJob: 5m, callBound: 90s}
nodeLossWindow: 10m
"#;
    let s = Settings::read(yaml).unwrap();
    assert_eq!(s.mode, Mode::Kueue);
    assert_eq!(s.kueue.as_ref().unwrap().queue, "team-a");
    assert_eq!(s.timeouts.stop_job, Timespan::from_secs(300));
    assert_eq!(s.kubeconfig.unwrap().context.as_deref(), Some("prod"));
}

#[test]
fn left_out_keys_take_their_defaults() {
    let s = Settings::from_value(&minimal()).unwrap();
    assert_eq!(s.mode, Mode::Plain);
    assert!(!s.read_only && s.kubeconfig.is_none() && s.kueue.is_none());
    assert_eq!(s.probe_runtime, s.runtimes[0]);
    assert_eq!(s.gpu_resource, "nvidia.com/gpu");
    assert_eq!(s.timeouts.request, defaults::REQUEST);
    assert_eq!(s.timeouts.call_bound, defaults::CALL_BOUND);
    assert_eq!(s.node_loss_window, defaults::NODE_LOSS_WINDOW);
}

#[test]
fn unknown_null_and_wrong_types_are_invalid_naming_the_key() {
    let mut doc = minimal();
    doc["timeouts"] = json!({"requset": "1s"});
    assert!(refused(doc).starts_with("settings key `timeouts.requset` is not known"));
    let mut doc = minimal();
    doc["gpuResource"] = Value::Null;
    assert!(refused(doc).starts_with("settings key `gpuResource` is null"));
    let mut doc = minimal();
    doc["readOnly"] = json!("no");
    assert_eq!(refused(doc), "settings key `readOnly` is a string: want true or false");
    assert_eq!(refused(json!([1])), "settings is a list: want an object");
}

#[test]
fn required_keys_and_names_are_checked() {
    let mut doc = minimal();
    doc.as_object_mut().unwrap().remove("namespace");
    assert_eq!(refused(doc), "settings key `namespace` is missing");
    let mut doc = minimal();
    doc["namespace"] = json!("Training");
    assert!(
        refused(doc)
            .starts_with("settings key `namespace` is \"Training\": want an RFC 1123 label")
    );
    let mut doc = minimal();
    doc["runtimes"] = json!([]);
    assert_eq!(refused(doc), "settings key `runtimes` is empty: want at least one runtime");
    let mut doc = minimal();
    let first = doc["runtimes"][0].clone();
    doc["runtimes"].as_array_mut().unwrap().push(first);
    assert!(refused(doc).starts_with("settings key `runtimes[1]` repeats"));
    let mut doc = minimal();
    doc["runtimes"][0]["kind"] = json!("Runtime");
    assert!(refused(doc).starts_with("settings key `runtimes[0].kind` is \"Runtime\""));
}

#[test]
fn probe_runtime_must_be_one_of_runtimes() {
    let mut doc = minimal();
    doc["probeRuntime"] = json!({"kind": "TrainingRuntime", "name": "torch-distributed"});
    assert_eq!(
        refused(doc),
        "settings key `probeRuntime` is TrainingRuntime/torch-distributed: want one of runtimes"
    );
}

#[test]
fn kueue_is_required_in_kueue_mode_and_refused_in_plain() {
    let mut doc = minimal();
    doc["mode"] = json!("kueue");
    assert_eq!(refused(doc.clone()), "settings key `kueue` is missing: kueue mode needs it");
    doc["kueue"] = json!({"queue": "team-a"});
    let s = Settings::from_value(&doc).unwrap();
    let k = s.kueue.unwrap();
    assert_eq!(
        (k.admission_check.as_str(), k.lease.name.as_str()),
        (defaults::ADMISSION_CHECK, defaults::LEASE_NAME)
    );
    doc["mode"] = json!("plain");
    assert!(refused(doc).starts_with("settings key `kueue` is set in plain mode"));
    let mut doc = minimal();
    doc["mode"] = json!("Kueue");
    assert_eq!(refused(doc), "settings key `mode` is \"Kueue\": want plain or kueue");
}

#[test]
fn timeouts_are_positive_durations() {
    let mut doc = minimal();
    doc["timeouts"] = json!({"stopJob": "0s"});
    assert_eq!(refused(doc), "settings key `timeouts.stopJob` is 0s: want a duration above zero");
    let mut doc = minimal();
    doc["nodeLossWindow"] = json!("ten minutes");
    assert!(
        refused(doc)
            .starts_with("settings key `nodeLossWindow` is \"ten minutes\": want a duration")
    );
    let mut doc = minimal();
    doc["timeouts"] = json!({"request": "2m", "callBound": "1m"});
    assert!(refused(doc).starts_with("settings key `timeouts.callBound` is 1m0s, shorter than"));
    let mut doc = minimal();
    doc["timeouts"] = json!({"request": 30});
    assert_eq!(
        refused(doc),
        "settings key `timeouts.request` is a number: want a duration such as 30s, 5m or 1h30m"
    );
}

#[test]
fn gpu_resource_is_an_extended_resource_name() {
    for ok in ["nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi"] {
        assert!(is_extended_resource(ok), "{ok}");
    }
    for bad in ["gpu", "nvidia/gpu", "nvidia.com/", "/gpu", "Nvidia.com/gpu", "nvidia.com/g pu"] {
        assert!(!is_extended_resource(bad), "{bad}");
    }
}
