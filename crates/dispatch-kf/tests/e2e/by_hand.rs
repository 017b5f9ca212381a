//! TrainJobs a Kubeflow user makes by hand (`kubectl apply`), not through dispatch: made
//! on one of the suite's runtimes, explained as `dispatch-kf explain` explains them, and
//! deleted with their pods, so that no later scenario meets them.

use dispatch_core::{Kind as Sentinel, ObjectObs};
use dispatch_kf::{Explain, ModeChoice, explain};
use dispatch_kf_client::{Cluster, Scope};
use dispatch_kf_model::keys;
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::json;

use super::suite::{self, BackendOnTarget, Kind, Program, Runtime, patient_cx};

/// One TrainJob made by hand in the suite's namespace.
pub(crate) struct ByHand<'a> {
    w: &'a BackendOnTarget,
    name: &'static str,
    cluster: Cluster,
}

impl<'a> ByHand<'a> {
    /// Makes the TrainJob `name` on `runtime`, of `nodes` ranks of `gpus` GPUs each,
    /// running `program`; what an interrupted earlier run left of it goes first.
    pub(crate) async fn make(
        w: &'a BackendOnTarget,
        name: &'static str,
        runtime: Runtime,
        program: Program,
        shape: (u32, u32),
    ) -> ByHand<'a> {
        Self::make_in(w, name, runtime, program, shape, None).await
    }

    /// [`ByHand::make`], in the LocalQueue `queue` when one is named (its
    /// `kueue.x-k8s.io/queue-name` label), as a Kueue user makes one.
    pub(crate) async fn make_in(
        w: &'a BackendOnTarget,
        name: &'static str,
        runtime: Runtime,
        program: Program,
        (nodes, gpus): (u32, u32),
        queue: Option<&str>,
    ) -> ByHand<'a> {
        let cluster =
            Cluster::from_kube_config(w.target.config().await, std::time::Duration::from_secs(30))
                .unwrap();
        let made = ByHand { w, name, cluster };
        made.delete().await;
        let mut trainer = json!({"numNodes": nodes, "command": program.command()});
        if gpus > 0 {
            trainer["resourcesPerNode"] = json!({"limits": {"nvidia.com/gpu": gpus}});
        }
        let labels = match queue {
            Some(queue) => json!({keys::KUEUE_QUEUE_NAME: queue}),
            None => json!({}),
        };
        let train_job = json!({
            "apiVersion": keys::TRAINER_API_VERSION, "kind": "TrainJob",
            "metadata": {"name": name, "namespace": suite::NAMESPACE, "labels": labels},
            "spec": {"runtimeRef": {"apiGroup": keys::TRAINER_GROUP,
                                    "kind": keys::KIND_TRAINING_RUNTIME, "name": runtime.name()},
                     "trainer": trainer},
        });
        let train_job = serde_json::from_value(train_job).unwrap();
        let train_jobs = w.objects(Kind::TrainJob);
        train_jobs.create(&PostParams::default(), &train_job).await.expect("the TrainJob by hand");
        made
    }

    /// The cluster `explain` reads, as a user's kubeconfig gives it.
    pub(crate) fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// What `explain` says of it.
    async fn explained(&self) -> dispatch_core::Result<Vec<ObjectObs>> {
        let named = Explain {
            scope: Scope::Named { namespace: suite::NAMESPACE, name: self.name },
            mode: ModeChoice::Auto,
            backend: "kubeflow-e2e",
        };
        explain(&self.cluster, &patient_cx(), named).await
    }

    /// Waits until `explain` says what `wanted` looks for.
    pub(crate) async fn until(&self, what: &str, wanted: impl Fn(&ObjectObs) -> bool) -> ObjectObs {
        self.w
            .target
            .until(what, async || match self.explained().await.map_err(|e| e.to_string())? {
                obs if obs.len() == 1 && wanted(&obs[0]) => Ok(obs[0].clone()),
                other => Err(format!("{other:#?}")),
            })
            .await
    }

    /// The names of its pods, and the node of each.
    async fn pods(&self) -> Vec<(String, String)> {
        let of_it = ListParams::default().labels(&format!("{}={}", keys::JOBSET_NAME, self.name));
        let pods = self.w.objects(Kind::Pod).list(&of_it).await.unwrap().items;
        pods.into_iter()
            .map(|p| {
                let node = p.data["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
                (p.metadata.name.unwrap_or_default(), node)
            })
            .collect()
    }

    /// Waits until `count` pods of it run, their containers started (on the real
    /// control plane, once kwok has played the pod's ready stage, which would overwrite
    /// a status written before it); their names and nodes.
    pub(crate) async fn until_pods_run(&self, count: usize) -> Vec<(String, String)> {
        let of_it = ListParams::default().labels(&format!("{}={}", keys::JOBSET_NAME, self.name));
        let pods = self.w.objects(Kind::Pod);
        self.w
            .target
            .until(&format!("{count} pods of {} running", self.name), async || {
                let listed = pods.list(&of_it).await.map_err(|e| e.to_string())?.items;
                let started = |p: &kube::api::DynamicObject| {
                    let statuses = p.data["status"]["containerStatuses"].as_array();
                    p.data["status"]["phase"] == "Running"
                        && statuses.is_some_and(|s| {
                            !s.is_empty() && s.iter().all(|c| c["state"]["running"].is_object())
                        })
                };
                let running: Vec<(String, String)> = listed
                    .iter()
                    .filter(|p| started(p))
                    .map(|p| {
                        let node = p.data["spec"]["nodeName"].as_str().unwrap_or_default();
                        (p.metadata.name.clone().unwrap_or_default(), node.to_owned())
                    })
                    .collect();
                if running.len() == count { Ok(running) } else { Err(format!("{running:?}")) }
            })
            .await
    }

    /// Deletes it, then waits until `explain` no longer finds it and its pods are gone.
    pub(crate) async fn delete(&self) {
        let _ = self.w.objects(Kind::TrainJob).delete(self.name, &DeleteParams::background()).await;
        let target = &self.w.target;
        target
            .until(&format!("{} gone", self.name), async || match self.explained().await {
                Err(e) if e.is(Sentinel::NotFound) => Ok(()),
                other => Err(format!("{other:#?}")),
            })
            .await;
        target
            .until(&format!("the pods of {} gone", self.name), async || {
                let left = self.pods().await;
                if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
            })
            .await;
    }
}
