//! Snapshots of what the controllers make of each TrainJob under `fixtures/trainjobs/`
//! on the demo cluster (two 8-GPU nodes, `torch-distributed`): the TrainJob as stored
//! (defaults, webhook time, conditions), its JobSet, its Jobs, and its pods (names,
//! labels, binding or the scheduler's reason). A new fixture file is a new test.

mod common;

use common::*;
use dispatch_kf_sim::{Sim, SimOptions};
use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};

fn pod_view(p: &Value) -> Value {
    json!({
        "name": p["metadata"]["name"],
        "labels": p["metadata"]["labels"],
        "annotations": p["metadata"]["annotations"],
        "nodeName": p["spec"]["nodeName"],
        "nodeSelector": p["spec"]["nodeSelector"],
        "phase": p["status"]["phase"],
        "conditions": p["status"]["conditions"],
    })
}

fn elide(mut v: Value) -> Value {
    v["metadata"]["managedFields"] = json!("(elided)");
    v
}

#[test]
fn trainer_jobset_jobs_and_pods_for_each_fixture() {
    insta::glob!("fixtures/trainjobs/*.json", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let job: DynamicObject = serde_json::from_str(&text).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let view = rt.block_on(async {
            let sim = Sim::start_demo(SimOptions::default(), 2, 8).await.unwrap();
            let name = job.metadata.name.clone().unwrap();
            trainjobs(&client(&sim).await).create(&PostParams::default(), &job).await.unwrap();
            let mut tj = sim.get("trainjobs", "default", &name).unwrap();
            tj["metadata"]["managedFields"] = json!("(elided)");
            let mut js = sim.get("jobsets", "default", &name).unwrap_or(Value::Null);
            if js.is_object() {
                js["metadata"]["managedFields"] = json!("(elided)");
            }
            let jobs: Vec<Value> = sim.list("jobs", "default").into_iter().map(elide).collect();
            let pods: Vec<Value> = sim.list("pods", "default").iter().map(pod_view).collect();
            json!({"trainjob": tj, "jobset": js, "jobs": jobs, "pods": pods})
        });
        insta::assert_json_snapshot!(view);
    });
}

/// The kubeconfig names the HTTPS server, the CA that signed its certificate (made at
/// start, so the snapshot shows it as `<CA>`), the user and the token.
#[test]
fn kubeconfig_names_the_server_its_ca_the_user_and_token() {
    use base64::Engine as _;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (yaml, ca) = rt.block_on(async {
        let sim = Sim::start(SimOptions::default()).await.unwrap();
        let yaml =
            sim.kubeconfig_yaml("admin").unwrap().replace(&sim.url(), "https://127.0.0.1:PORT");
        (yaml, sim.ca_pem().unwrap().to_owned())
    });
    let data = base64::engine::general_purpose::STANDARD.encode(&ca);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    assert!(yaml.contains(&format!("certificate-authority-data: {data}\n")), "{yaml}");
    insta::assert_snapshot!(yaml.replace(&data, "<CA>"));
}
