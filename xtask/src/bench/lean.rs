//! The lean dump: each object carries the fields classification reads and little
//! else, so reading it is nearly all keeping. 2,000 TrainJobs, each with its JobSet
//! and 8 pods, and 500 Nodes: about 28 MB at 1x. One job in ten has failed (one rank
//! OOMKilled, the others exit 1), one in ten has completed, the rest run.

use std::path::Path;

use dispatch_kf_model::keys;

use super::list::{ListWriter, fake_uid, job_id, job_name};
use super::{BASE_JOBS, BASE_NODES, PODS_PER_JOB};

/// Writes the lean dump of `scale` times the base size; returns its size in bytes.
pub(crate) fn generate(path: &Path, scale: usize) -> std::io::Result<u64> {
    let mut list = ListWriter::create(path)?;
    let nodes = BASE_NODES * scale;
    for j in 0..BASE_JOBS * scale {
        let (name, uid) = (job_name(j), fake_uid(j as u64, 1));
        list.item(&train_job(j, &name, &uid))?;
        list.item(&job_set(j, &name, &uid))?;
        for rank in 0..PODS_PER_JOB {
            list.item(&pod(j, &name, rank, (j * PODS_PER_JOB + rank) % nodes))?;
        }
    }
    for n in 0..nodes {
        list.item(&node(n))?;
    }
    list.finish(path)
}

/// How job `j` ends: failed, complete, or still running.
fn outcome(j: usize) -> &'static str {
    match j % 10 {
        0 => "Failed",
        1 => "Complete",
        _ => "Running",
    }
}

fn labels(j: usize) -> String {
    format!("\"{}\": \"{}\", \"{}\": \"1\"", keys::LABEL_JOB_ID, job_id(j), keys::LABEL_SUBMISSION)
}

fn controller(kind: &str, name: &str, uid: &str) -> String {
    format!(
        "[{{\"controller\": true, \"kind\": \"{kind}\", \"name\": \"{name}\", \"uid\": \"{uid}\"}}]"
    )
}

fn conditions(j: usize) -> &'static str {
    match outcome(j) {
        "Failed" => {
            "[{\"lastTransitionTime\": \"2026-11-29T10:30:05Z\", \"message\": \"jobset failed due \
             to one or more job failures\", \"reason\": \"FailedJobs\", \"status\": \"True\", \
             \"type\": \"Failed\"}]"
        }
        "Complete" => {
            "[{\"lastTransitionTime\": \"2026-11-29T11:00:00Z\", \"message\": \"jobset completed \
             successfully\", \"reason\": \"AllJobsCompleted\", \"status\": \"True\", \"type\": \
             \"Complete\"}]"
        }
        _ => "[]",
    }
}

fn train_job(j: usize, name: &str, uid: &str) -> String {
    format!(
        "{{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"TrainJob\", \"metadata\": {{\
         \"labels\": {{{labels}}}, \"managedFields\": [{{\"fieldsV1\": {{\"f:spec\": {{\"f:suspend\": {{}}}}}}, \
         \"manager\": \"dispatch-kf\", \"time\": \"2026-11-29T10:00:05Z\"}}], \"name\": \"{name}\", \
         \"namespace\": \"team-a\", \"uid\": \"{uid}\"}}, \"spec\": {{\"managedBy\": \
         \"trainer.kubeflow.org/trainjob-controller\", \"runtimeRef\": {{\"kind\": \"ClusterTrainingRuntime\", \
         \"name\": \"torch-distributed\"}}, \"suspend\": false}}, \"status\": {{\"conditions\": {conditions}}}}}",
        labels = labels(j),
        conditions = conditions(j),
    )
}

fn job_set(j: usize, name: &str, owner_uid: &str) -> String {
    format!(
        "{{\"apiVersion\": \"jobset.x-k8s.io/v1alpha2\", \"kind\": \"JobSet\", \"metadata\": {{\"labels\": \
         {{{labels}}}, \"name\": \"{name}\", \"namespace\": \"team-a\", \"ownerReferences\": {owner}, \
         \"uid\": \"{uid}\"}}, \"status\": {{\"conditions\": {conditions}}}}}",
        labels = labels(j),
        owner = controller("TrainJob", name, owner_uid),
        uid = fake_uid(j as u64, 2),
        conditions = conditions(j),
    )
}

fn pod(j: usize, js: &str, rank: usize, node: usize) -> String {
    let (phase, state) = match outcome(j) {
        "Failed" if rank == 3 => (
            "Failed",
            "{\"terminated\": {\"exitCode\": 137, \"finishedAt\": \"2026-11-29T10:30:00Z\", \
             \"reason\": \"OOMKilled\"}}"
                .to_owned(),
        ),
        "Failed" => (
            "Failed",
            format!(
                "{{\"terminated\": {{\"exitCode\": 1, \"finishedAt\": \"2026-11-29T10:30:0{rank}Z\", \
                 \"message\": \"NCCL error: remote process exited\", \"reason\": \"Error\"}}}}"
            ),
        ),
        "Complete" => (
            "Succeeded",
            "{\"terminated\": {\"exitCode\": 0, \"finishedAt\": \"2026-11-29T10:59:58Z\", \
             \"reason\": \"Completed\"}}"
                .to_owned(),
        ),
        _ => ("Running", "{\"running\": {\"startedAt\": \"2026-11-29T10:01:19Z\"}}".to_owned()),
    };
    format!(
        "{{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {{\"annotations\": \
         {{\"batch.kubernetes.io/job-completion-index\": \"{rank}\", \"{admission}\": \"1\"}}, \
         \"labels\": {{{labels}, \"batch.kubernetes.io/job-completion-index\": \"{rank}\", \
         \"jobset.sigs.k8s.io/job-index\": \"0\", \"jobset.sigs.k8s.io/jobset-name\": \"{js}\", \
         \"jobset.sigs.k8s.io/restart-attempt\": \"0\"}}, \"name\": \"{js}-node-0-{rank}-x7k2p\", \
         \"namespace\": \"team-a\", \"ownerReferences\": {owner}, \"uid\": \"{uid}\"}}, \"spec\": \
         {{\"nodeName\": \"gpu-node-{node}\"}}, \"status\": {{\"conditions\": [{{\"lastTransitionTime\": \
         \"2026-11-29T10:01:20Z\", \"status\": \"True\", \"type\": \"Ready\"}}, {{\"lastTransitionTime\": \
         \"2026-11-29T10:01:01Z\", \"status\": \"True\", \"type\": \"PodScheduled\"}}], \"containerStatuses\": \
         [{{\"name\": \"node\", \"state\": {state}}}], \"phase\": \"{phase}\"}}}}",
        labels = labels(j),
        admission = keys::ANN_ADMISSION,
        owner = controller("Job", &format!("{js}-node-0"), &fake_uid(j as u64, 4)),
        uid = fake_uid(j as u64, 100 + rank as u64),
    )
}

fn node(n: usize) -> String {
    format!(
        "{{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {{\"name\": \"gpu-node-{n}\", \
         \"uid\": \"{uid}\"}}, \"spec\": {{}}, \"status\": {{\"conditions\": [{{\"lastTransitionTime\": \
         \"2026-11-29T09:00:00Z\", \"message\": \"kubelet is posting ready status\", \"reason\": \
         \"KubeletReady\", \"status\": \"True\", \"type\": \"Ready\"}}]}}}}",
        uid = fake_uid(n as u64, 9),
    )
}
