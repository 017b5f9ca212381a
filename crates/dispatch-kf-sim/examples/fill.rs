//! Fills a simulated cluster with TrainJobs through the HTTP API and prints where the
//! time goes: `cargo run --release -p dispatch-kf-sim --example fill -- 1000 [4]` (how
//! many TrainJobs, and how many create requests in flight at once, 4 by default).
//!
//! Each TrainJob runs on the demo's `torch-distributed` runtime with 1 or 2 nodes, so
//! the controllers make its runtime snapshot, JobSet, Job and pods. The virtual clock
//! follows the wall clock meanwhile, and running pods write their logs, as under
//! `dispatch-kf sim serve`. Printed: wall time
//! of the creates, of a final settle, of one label-selected list of pods and of one
//! metadata list of the namespace's TrainJobs, and the store's object count.

use std::time::Instant;

use dispatch_kf_sim::{RESOURCES, Sim, SimOptions};
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::json;

const NS: &str = "training";
/// Create requests in flight at once, unless the second argument says otherwise.
const IN_FLIGHT: usize = 4;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let in_flight: usize =
        std::env::args().nth(2).map(|a| a.parse()).transpose()?.unwrap_or(IN_FLIGHT).max(1);
    let sim = Sim::start(SimOptions::default()).await?;
    let _clock = sim.follow_wall_clock();
    sim.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))?;
    sim.apply(dispatch_kf_sim::torch_distributed())?;
    for i in 0..2 {
        sim.apply(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{i}"), "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
            "status": {"capacity": {"cpu": "96", "memory": "1Ti", "pods": "100000"},
                       "allocatable": {"cpu": "96", "memory": "1Ti", "pods": "100000"},
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))?;
    }
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig_yaml("admin")?)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("trainer.kubeflow.org", "v1alpha1", "TrainJob"),
        "trainjobs",
    );
    let trainjobs: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &ar);

    // A few requests in flight, as several clients would send them: the sim serves
    // them one at a time, while the client encodes the next.
    let started = Instant::now();
    let creates: Vec<_> = (0..n)
        .map(|i| {
            let trainjobs = trainjobs.clone();
            async move {
                let tj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                    "metadata": {"name": format!("fill-{i:05}"), "labels": {"fill/batch": (i % 10).to_string()}},
                    "spec": {
                        "runtimeRef": {"name": "torch-distributed"},
                        "trainer": {"numNodes": 1 + (i % 2)},
                    },
                }))?;
                trainjobs.create(&PostParams::default(), &tj).await?;
                Ok::<_, Box<dyn std::error::Error>>(())
            }
        })
        .collect();
    let mut creates = futures::stream::iter(creates).buffer_unordered(in_flight);
    while let Some(done) = creates.next().await {
        done?;
    }
    let creates = started.elapsed();

    // `settle` reconciles every object once more (nothing is left to change).
    let started = Instant::now();
    sim.settle();
    let settle = started.elapsed();

    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), NS);
    let name = format!("fill-{:05}", n / 2);
    let started = Instant::now();
    let selected = pods
        .list(&ListParams::default().labels(&format!("jobset.sigs.k8s.io/jobset-name={name}")))
        .await?;
    let label_list = started.elapsed();

    let started = Instant::now();
    let metadata = trainjobs.list_metadata(&ListParams::default()).await?;
    let metadata_list = started.elapsed();

    let objects: usize = RESOURCES.iter().map(|r| sim.list(r.plural, "").len()).sum();
    println!("trainjobs:      {n} ({in_flight} creates in flight)");
    println!("objects:        {objects}");
    println!("writes:         {} (resourceVersion)", sim.resource_version());
    println!(
        "creates:        {:.2} s ({:.2} ms each)",
        creates.as_secs_f64(),
        creates.as_secs_f64() * 1e3 / n.max(1) as f64
    );
    println!("settle:         {:.3} s (a pass over every object)", settle.as_secs_f64());
    println!(
        "label list:     {:.3} ms ({} pods of {name})",
        label_list.as_secs_f64() * 1e3,
        selected.items.len()
    );
    println!(
        "metadata list:  {:.3} ms ({} trainjobs)",
        metadata_list.as_secs_f64() * 1e3,
        metadata.items.len()
    );
    Ok(())
}
