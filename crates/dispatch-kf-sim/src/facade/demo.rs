//! The demo cluster a `dispatch-kf sim serve` command starts: GPU nodes and the Trainer's
//! `torch-distributed` ClusterTrainingRuntime (its shape from kubeflow/trainer
//! `manifests/base/runtimes/torch_distributed.yaml`, with `restartPolicy: Never` and
//! `backoffLimit: 0` added so it meets dispatch's runtime requirements).

use serde_json::{Value, json};

use crate::facade::sim::{Sim, SimError, SimOptions};

/// The `torch-distributed` ClusterTrainingRuntime the demo installs.
pub fn torch_distributed() -> Value {
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-distributed", "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "replicas": 1,
                "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {
                        "backoffLimit": 0,
                        "template": {"spec": {
                            "restartPolicy": "Never",
                            "containers": [{
                                "name": "node",
                                "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime",
                                "command": ["/bin/bash", "-c", "echo \"Torch Distributed Runtime\"; torchrun /workspace/train.py"]
                            }]
                        }}
                    }
                }
            }]}}
        }
    })
}

/// The Kueue objects the readmission gate needs, one file shared with
/// `cargo xtask cluster up --kueue` (`crates/dispatch-kf-sim/data/kueue-setup.json`): the
/// ResourceFlavor `default-flavor`, the ClusterQueue `gpu` with `quota` GPUs whose
/// admission checks list `dispatch-readmission`, that AdmissionCheck, the namespace of
/// the gate's Lease, and the LocalQueue `team-a` in `default`.
pub fn kueue_setup(quota: u32) -> Vec<Value> {
    const SETUP: &str = include_str!("../../data/kueue-setup.json");
    let text = SETUP.replace("\"$QUOTA\"", &format!("\"{quota}\""));
    serde_json::from_str(&text)
        .expect("crates/dispatch-kf-sim/data/kueue-setup.json is a JSON array")
}

impl Sim {
    /// Installs [`kueue_setup`] with `quota` GPUs.
    pub fn install_kueue(&self, quota: u32) -> Result<(), SimError> {
        self.install_kueue_in(quota, "default")
    }

    /// Installs [`kueue_setup`] with `quota` GPUs, its LocalQueue in `namespace`.
    pub fn install_kueue_in(&self, quota: u32, namespace: &str) -> Result<(), SimError> {
        for mut object in kueue_setup(quota) {
            if object["kind"] == "LocalQueue" {
                object["metadata"]["namespace"] = namespace.into();
            }
            self.apply(object)?;
        }
        Ok(())
    }

    /// Starts a cluster with `nodes` Ready nodes (`gpu-0`, `gpu-1`, ...) of
    /// `gpus_per_node` `nvidia.com/gpu` each, and `torch-distributed` installed. Serve
    /// until dropped; hand out [`Sim::kubeconfig_yaml`].
    pub async fn start_demo(
        opts: SimOptions,
        nodes: u32,
        gpus_per_node: u32,
    ) -> Result<Self, SimError> {
        let sim = Sim::start(opts).await?;
        for i in 0..nodes {
            sim.add_gpu_node(&format!("gpu-{i}"), gpus_per_node);
        }
        sim.apply(torch_distributed())?;
        Ok(sim)
    }
}
