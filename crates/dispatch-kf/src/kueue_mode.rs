//! Kueue mode's reads, proof and waits, apart from the steps they serve: the LocalQueue
//! and its ClusterQueue, the proof of the readmission gate Factory runs, and Start's
//! step 9 (the TrainJob's Workload, gated and checked, and the ClusterQueue's checks
//! applying to it). The rules they apply are the model's (`dispatch_kf_model::internal::kueue`).

use std::time::Duration;

use dispatch_core::{CallContext, Error, Result};
use dispatch_kf_client::Cluster;
use dispatch_kf_client::resources::{ADMISSION_CHECK, CLUSTER_QUEUE, LEASE, LOCAL_QUEUE, WORKLOAD};
use dispatch_kf_model::internal::kueue::{
    self, GateObjects, NotReady, cluster_queue_of, lease_expires, prove_gate,
};
use dispatch_kf_model::{Settings, keys};
use jiff::Timestamp;
use serde_json::Value;

use crate::{Inner, edge};

/// How often Start looks for the TrainJob's Workload in Kueue mode.
const WORKLOAD_POLL: Duration = Duration::from_secs(1);

/// The source of Start's refusal when Kueue made the TrainJob's Workload without the
/// start gate: Factory's probe refuses the cluster on it, where any other failure of
/// the probe leaves the Backend observe-only.
#[derive(Debug)]
pub(crate) struct KueueDoesNotGate;

impl std::fmt::Display for KueueDoesNotGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kueue does not honour kueue.x-k8s.io/admission-gated-by")
    }
}

impl std::error::Error for KueueDoesNotGate {}

impl KueueDoesNotGate {
    /// Whether `error` is Start's refusal for it.
    pub(crate) fn refused(error: &Error) -> bool {
        std::error::Error::source(error).is_some_and(|s| s.is::<KueueDoesNotGate>())
    }
}

/// The LocalQueue `kueue.queue` and its ClusterQueue, each `None` when it does not
/// exist (or the settings name no queue).
pub(crate) async fn read_queues(
    cluster: &Cluster,
    settings: &Settings,
    cx: &CallContext,
) -> Result<(Option<Value>, Option<Value>)> {
    let Some(kueue) = &settings.kueue else { return Ok((None, None)) };
    let ns = &settings.namespace;
    let local_queue = cluster.objects(LOCAL_QUEUE, ns).get_opt(cx, &kueue.queue).await?;
    let cluster_queue = match local_queue.as_ref().and_then(cluster_queue_of) {
        Some(cq) => cluster.objects(CLUSTER_QUEUE, ns).get_opt(cx, cq).await?,
        None => None,
    };
    Ok((local_queue, cluster_queue))
}

/// Reads the LocalQueue, its ClusterQueue, the AdmissionCheck and the Lease, and
/// proves the readmission gate from them; with the proof, when the Lease's last
/// renewal runs out.
pub(crate) async fn prove_readmission_gate(
    cluster: &Cluster,
    settings: &Settings,
    cx: &CallContext,
) -> Result<(Result<(), String>, Option<Timestamp>)> {
    let Some(kueue) = &settings.kueue else {
        return Ok((Err("kueue settings are missing".to_owned()), None));
    };
    let ns = &settings.namespace;
    let (local_queue, cluster_queue) = read_queues(cluster, settings, cx).await?;
    let admission_check =
        cluster.objects(ADMISSION_CHECK, ns).get_opt(cx, &kueue.admission_check).await?;
    let lease =
        cluster.objects(LEASE, &kueue.lease.namespace).get_opt(cx, &kueue.lease.name).await?;
    let objects = GateObjects {
        local_queue: local_queue.as_ref(),
        cluster_queue: cluster_queue.as_ref(),
        admission_check: admission_check.as_ref(),
        lease: lease.as_ref(),
    };
    let proof = prove_gate(&objects, &kueue.queue, &kueue.admission_check, edge::now());
    let expires = lease.as_ref().and_then(lease_expires).filter(|_| proof.is_ok());
    Ok((proof, expires))
}

impl Inner {
    /// Refuses a job whose Workload Kueue would admit without running the ClusterQueue's
    /// admission checks (`kueue::checks_apply`): it would run with no readmission gate
    /// and no admission count. A LocalQueue or ClusterQueue gone since preflight is
    /// refused too.
    pub(crate) async fn refuse_if_kueue_would_not_check(
        &self,
        cx: &CallContext,
        workload: &Value,
    ) -> Result<()> {
        let (queue, check) = match &self.settings.kueue {
            Some(k) => (k.queue.as_str(), k.admission_check.as_str()),
            None => return Err(Error::rejected("kueue settings are missing")),
        };
        let cluster_queue = match read_queues(&self.cluster, &self.settings, cx).await? {
            (_, Some(cq)) => cq,
            (None, _) => return Err(Error::rejected(format!("LocalQueue {queue} does not exist"))),
            (Some(lq), None) => {
                let cq = kueue::cluster_queue_of(&lq).unwrap_or_default();
                return Err(Error::rejected(format!("ClusterQueue {cq} does not exist")));
            }
        };
        kueue::checks_apply(workload, &cluster_queue, check).map_err(Error::rejected)
    }

    /// Waits up to `timeouts.workload`, looking every second, for the TrainJob's
    /// Workload to carry dispatch's gate and list the admission check; returns it. A
    /// Workload made without the gate ends the wait at once: this Kueue does not gate
    /// admission, and the refusal is *unsupported*, its source [`KueueDoesNotGate`].
    pub(crate) async fn await_workload(&self, cx: &CallContext, uid: &str) -> Result<Value> {
        let check =
            self.settings.kueue.as_ref().map(|k| k.admission_check.as_str()).unwrap_or_default();
        let limit = self.settings.timeouts.workload.to_std().unwrap_or_default();
        let workloads = self.cluster.objects(WORKLOAD, &self.settings.namespace);
        let selector = format!("{}={uid}", keys::KUEUE_JOB_UID);
        let started = edge::timer();
        let mut last = "Kueue made no Workload for it".to_owned();
        loop {
            for workload in workloads.list_whole(cx, &selector).await? {
                match kueue::workload_ready(&workload, check) {
                    Ok(()) => return Ok(workload),
                    Err(NotReady::KueueDoesNotGate(why)) => {
                        return Err(Error::unsupported(why).with_source(KueueDoesNotGate));
                    }
                    Err(NotReady::Waiting(why)) => last = why,
                }
            }
            if started.elapsed() >= limit {
                return Err(Error::rejected(format!(
                    "no ready Workload within {}: {last}",
                    self.settings.timeouts.workload
                )));
            }
            tokio::select! {
                () = tokio::time::sleep(WORKLOAD_POLL) => {}
                () = cx.cancelled() => return Err(waiting_ended()),
                () = edge::deadline(cx) => return Err(waiting_ended()),
            }
        }
    }
}

fn waiting_ended() -> Error {
    Error::outcome_unknown(
        "the call ended while Start waited for the Workload: the stop it would attempt cannot be sent either, so the TrainJob may remain",
    )
}
