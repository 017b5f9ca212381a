//! A TrainJob's current execution as the Backend needs it beyond classification: its
//! rank 0 pod (whose log is the submission's output) and its Nodes with whether each has
//! ceased (`docs/capabilities.md#output-watch-cessation`), and the pods the hold family
//! waits for.
//!
//! The execution is the one classification uses (R = A + J, the higher A on a tie), so
//! Output, Ceased and the observations always agree on which execution is current.

use dispatch_core::NodeState;

use crate::classify::execution;
use crate::classify::instance::Instance;
use crate::keys;
use crate::snapshot::Snapshot;
use crate::view::{Node, Pod, condition};

/// The pods of the JobSet named `train_job` (the TrainJob's name), live then captured,
/// of the TrainJob's instance only (`classify::instance`): pods another TrainJob of
/// that name left are not its.
fn pods_of<'a, 'n>(
    snapshot: &'a Snapshot,
    train_job: &'n str,
) -> impl Iterator<Item = &'a Pod> + use<'a, 'n> {
    let job_set = snapshot.job_sets.iter().find(|js| js.meta.name() == train_job);
    let live = snapshot.train_jobs.iter().find(|tj| tj.meta.name() == train_job);
    let instance = Instance::of(job_set, live.map(|tj| tj.meta.uid()));
    snapshot
        .pods
        .iter()
        .chain(&snapshot.captured_pods)
        .filter(move |p| p.meta.label(keys::JOBSET_NAME) == Some(train_job) && instance.has(p))
}

/// The pods of the TrainJob's current (or last) execution, live and captured.
pub fn current_execution<'a>(snapshot: &'a Snapshot, train_job: &str) -> Vec<&'a Pod> {
    let current = execution::current(pods_of(snapshot, train_job).filter_map(execution::of_pod));
    pods_of(snapshot, train_job)
        .filter(|p| current.is_some() && execution::of_pod(p) == current)
        .collect()
}

/// What of a previous execution remains, sorted: the names of the TrainJob's live pods
/// that have not finished, then each ReplicatedJob in which the JobSet of its name
/// still counts active Jobs (`status.replicatedJobsStatus[].active`, which lags the
/// pods' going, and by which the Trainer's webhook refuses a `runtimePatches` change).
/// What Open and Release wait for before a new execution may start.
pub fn remaining(snapshot: &Snapshot, train_job: &str) -> Vec<String> {
    let mut pods: Vec<String> = snapshot
        .pods
        .iter()
        .filter(|p| p.meta.label(keys::JOBSET_NAME) == Some(train_job) && !p.is_terminal())
        .map(|p| p.meta.name().to_owned())
        .collect();
    pods.sort();
    let job_sets = snapshot.job_sets.iter().filter(|js| js.meta.name() == train_job);
    let active = job_sets.flat_map(|js| js.replicated_jobs.iter()).filter_map(|rj| {
        let n = rj.active.0.filter(|n| *n > 0)?;
        let jobs = if n == 1 { "Job" } else { "Jobs" };
        Some(format!("JobSet {train_job} still counts {n} active {jobs} in {}", rj.name.get()?))
    });
    pods.extend(active);
    pods
}

/// Where a pod's execution stands in the order classification picks the current one
/// by (R, then A: `classify::execution`); `None` for a pod that carries no execution.
pub fn execution_order(pod: &Pod) -> Option<(u64, u64)> {
    execution::of_pod(pod).map(|e| execution::order_key(&e))
}

/// Rank 0 of the current execution: the live trainer pod with job index and
/// completion index 0. `None` when there is none yet (or no more).
pub fn rank_zero<'a>(snapshot: &'a Snapshot, train_job: &str) -> Option<&'a Pod> {
    let live: Vec<&Pod> = current_execution(snapshot, train_job)
        .into_iter()
        .filter(|p| snapshot.pods.iter().any(|l| std::ptr::eq(l, *p)))
        .collect();
    live.into_iter()
        .filter(|p| p.meta.label(keys::LABEL_JOB_ID).is_some())
        .filter(|p| p.meta.label(keys::JOB_COMPLETION_INDEX) == Some("0"))
        .filter(|p| p.meta.label(keys::JOBSET_JOB_INDEX).is_none_or(|i| i == "0"))
        .min_by(|a, b| a.meta.name().cmp(b.meta.name()))
}

/// The Nodes `pods` are bound to, sorted and once each.
pub fn nodes_of(pods: &[&Pod]) -> Vec<String> {
    let mut nodes: Vec<String> =
        pods.iter().filter_map(|p| p.node_name.get().map(str::to_owned)).collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// Whether the Node named `name` (`None`: it no longer exists) can no longer run
/// anything: deleted, or tainted out of service.
pub fn node_state(name: &str, node: Option<&Node>) -> NodeState {
    let Some(node) = node else {
        return NodeState { node: name.to_owned(), ceased: true, state: "deleted".to_owned() };
    };
    if node.taints.iter().any(|t| t.key.get() == Some(keys::TAINT_OUT_OF_SERVICE)) {
        return NodeState {
            node: name.to_owned(),
            ceased: true,
            state: format!("tainted {}", keys::TAINT_OUT_OF_SERVICE),
        };
    }
    let ready =
        condition(&node.conditions, "Ready").and_then(|c| c.status.get()).unwrap_or("unknown");
    NodeState { node: name.to_owned(), ceased: false, state: format!("Ready={ready}") }
}

/// Whether an execution has ceased, from the states of the Nodes its pods were bound
/// to: every one deleted or out of service. With no pod of it known at all (it never
/// ran, or its pods were deleted before anyone saw them), where it ran is unknown, and
/// the answer is no: a wrong yes could let the supervisor run the job twice.
pub fn has_ceased(pods_known: bool, nodes: &[NodeState]) -> bool {
    pods_known && nodes.iter().all(|n| n.ceased)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump;
    use serde_json::json;

    fn pod(name: &str, a: &str, j: &str, index: &str, node: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "uid": name,
                 "labels": {keys::JOBSET_NAME: "tj", keys::JOBSET_RESTART_ATTEMPT: j,
                            keys::JOB_COMPLETION_INDEX: index, keys::JOBSET_JOB_INDEX: "0",
                            keys::LABEL_JOB_ID: "01JDQ4V8Z6K3M0B7X2N5R9T1CE"},
                 "annotations": {keys::ANN_ADMISSION: a}},
               "spec": {"nodeName": node}})
    }

    fn snapshot(items: Vec<serde_json::Value>, captured: Vec<serde_json::Value>) -> Snapshot {
        let list =
            json!({"apiVersion": "v1", "kind": "List", "items": items, "capturedPods": captured});
        dump::read("test", &serde_json::to_vec(&list).unwrap()).unwrap()
    }

    #[test]
    fn rank_zero_is_of_the_current_execution() {
        let s = snapshot(
            vec![
                pod("old-0", "1", "0", "0", "n1"),
                pod("new-1", "1", "1", "1", "n2"),
                pod("new-0", "1", "1", "0", "n3"),
            ],
            vec![],
        );
        assert_eq!(rank_zero(&s, "tj").map(|p| p.meta.name()), Some("new-0"));
        assert_eq!(nodes_of(&current_execution(&s, "tj")), ["n2", "n3"]);
    }

    #[test]
    fn a_captured_current_execution_has_no_rank_zero_but_keeps_its_nodes() {
        let s = snapshot(
            vec![pod("old-0", "1", "0", "0", "n1")],
            vec![pod("new-0", "2", "0", "0", "n9")],
        );
        assert_eq!(rank_zero(&s, "tj").map(|p| p.meta.name()), None);
        assert_eq!(nodes_of(&current_execution(&s, "tj")), ["n9"]);
    }

    /// A TrainJob started again under its name after Stop and StopJob: what the first
    /// instance left (a captured restart with a higher R on n1, a rank stuck on n1) is
    /// not the second's, whose execution runs on n2.
    #[test]
    fn the_pods_an_earlier_instance_of_the_name_left_are_not_the_current_execution() {
        let of = |mut p: serde_json::Value, js: &str| {
            p["metadata"]["labels"][keys::JOBSET_UID] = json!(js);
            p
        };
        let train_job = json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "tj", "uid": "tj-2"}});
        let job_set = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "tj", "uid": "js-2",
                         "ownerReferences": [{"uid": "tj-2", "controller": true}]}});
        let s = snapshot(
            vec![
                train_job.clone(),
                job_set,
                of(pod("old-0", "1", "1", "0", "n1"), "js-1"),
                of(pod("new-0", "1", "0", "0", "n2"), "js-2"),
            ],
            vec![of(pod("old-1", "1", "1", "1", "n1"), "js-1")],
        );
        assert_eq!(nodes_of(&current_execution(&s, "tj")), ["n2"]);
        assert_eq!(rank_zero(&s, "tj").map(|p| p.meta.name()), Some("new-0"));
        // While the earlier instance's JobSet is still there, no labelled pod is the
        // new TrainJob's.
        let old_job_set = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "tj", "uid": "js-1",
                         "ownerReferences": [{"uid": "tj-1", "controller": true}]}});
        let s = snapshot(
            vec![train_job, old_job_set, of(pod("old-0", "1", "1", "0", "n1"), "js-1")],
            vec![],
        );
        assert!(current_execution(&s, "tj").is_empty());
    }

    /// The Trainer's webhook refuses a runtimePatches change while the JobSet counts
    /// active Jobs, which it does for a while after the pods have gone: that count is
    /// what remains too.
    #[test]
    fn what_remains_is_the_pods_still_going_and_the_jobs_the_jobset_still_counts_active() {
        let mut done = pod("tj-node-0-0", "1", "0", "0", "n1");
        done["status"] = json!({"phase": "Failed"});
        let job_set = |active: serde_json::Value| {
            json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "tj", "uid": "js-1"},
                "status": {"replicatedJobsStatus": [
                    {"name": "node", "active": active, "ready": 0},
                    {"name": "launcher", "active": 0}]}})
        };
        let s = snapshot(
            vec![done.clone(), pod("tj-node-0-1", "1", "0", "1", "n2"), job_set(json!(2))],
            vec![],
        );
        assert_eq!(
            remaining(&s, "tj"),
            ["tj-node-0-1", "JobSet tj still counts 2 active Jobs in node"]
        );
        let s = snapshot(vec![done.clone(), job_set(json!(1))], vec![]);
        assert_eq!(remaining(&s, "tj"), ["JobSet tj still counts 1 active Job in node"]);
        for gone in [json!(0), json!(null), json!("1")] {
            let s = snapshot(vec![done.clone(), job_set(gone.clone())], vec![]);
            assert!(remaining(&s, "tj").is_empty(), "{gone}");
        }
    }

    #[test]
    fn a_node_has_ceased_when_deleted_or_out_of_service() {
        assert!(node_state("n1", None).ceased);
        let s = snapshot(
            vec![
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
                       "spec": {"taints": [{"key": keys::TAINT_OUT_OF_SERVICE, "effect": "NoExecute"}]}}),
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n3"},
                       "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
            ],
            vec![],
        );
        assert!(node_state("n2", Some(&s.nodes[0])).ceased);
        let lost = node_state("n3", Some(&s.nodes[1]));
        assert_eq!((lost.ceased, lost.state.as_str()), (false, "Ready=Unknown"));
    }

    #[test]
    fn an_execution_ceases_only_when_its_pods_are_known_and_every_node_ceased() {
        let gone = node_state("n1", None);
        let lost = NodeState { node: "n2".into(), ceased: false, state: "Ready=Unknown".into() };
        assert!(has_ceased(true, std::slice::from_ref(&gone)));
        assert!(!has_ceased(true, &[gone.clone(), lost]));
        assert!(has_ceased(true, &[]), "pods known, none bound: nothing ran anywhere");
        assert!(!has_ceased(false, &[]), "no pod known: where it ran is unknown");
    }
}
