//! Where the store files each kind, what each change concerns, and what a deleted pod
//! leaves.

use dispatch_kf_model::internal::answer::read_object;
use serde_json::{Value, json};

use super::*;

fn view(object: Value) -> View {
    read_object(object.to_string().as_bytes()).unwrap()
}

fn train_job(name: &str, uid: &str) -> View {
    view(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"namespace": "team", "name": name, "uid": uid},
    }))
}

fn pod(name: &str, train_job: &str, node: &str) -> View {
    view(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "team", "name": name, "uid": format!("uid-{name}"),
                     "labels": {keys::JOBSET_NAME: train_job}},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }))
}

fn node(name: &str) -> View {
    view(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": name}}))
}

fn workload(name: &str, job_uid: &str) -> View {
    view(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"namespace": "team", "name": name, "uid": format!("uid-{name}"),
                     "labels": {keys::KUEUE_JOB_UID: job_uid}},
    }))
}

fn key(name: &str) -> Key {
    ("team".to_owned(), name.to_owned())
}

fn dirty(touched: &Touched) -> Vec<&str> {
    let mut names: Vec<&str> = touched.dirty.iter().map(|k| k.1.as_str()).collect();
    names.sort_unstable();
    names
}

#[test]
fn each_object_is_filed_under_its_train_job_and_read_back_as_its_snapshot() {
    let mut store = Store::default();
    store.apply(
        Kind::TrainJob,
        None,
        Change::Listed(vec![train_job("a", "ua"), train_job("b", "ub")]),
    );
    let touched = store.apply(Kind::Pod, None, Change::Applied(pod("a-0", "a", "n1")));
    assert_eq!(dirty(&touched), ["a"]);
    store.apply(Kind::Pod, None, Change::Applied(pod("b-0", "b", "n1")));
    store.apply(Kind::Pod, None, Change::Applied(pod("stray", "nobody", "n2")));
    let touched = store.apply(Kind::Workload, None, Change::Applied(workload("w", "ub")));
    assert_eq!(dirty(&touched), ["b"]);
    let touched = store.apply(Kind::Node, None, Change::Applied(node("n1")));
    assert_eq!(dirty(&touched), ["a", "b"], "a Node concerns the TrainJobs with a pod on it");

    let a = store.snapshot(&key("a")).unwrap();
    assert_eq!((a.train_jobs.len(), a.pods.len(), a.workloads.len(), a.nodes.len()), (1, 1, 0, 1));
    let b = store.snapshot(&key("b")).unwrap();
    assert_eq!(b.workloads.len(), 1);
    assert!(store.snapshot(&key("nobody")).is_none(), "a pod's TrainJob that does not exist");
}

#[test]
fn a_deleted_pod_leaves_evidence_while_its_train_job_exists_and_it_goes_with_it() {
    let mut store = Store::default();
    store.apply(Kind::TrainJob, None, Change::Listed(vec![train_job("a", "ua")]));
    store.apply(Kind::Pod, None, Change::Applied(pod("a-0", "a", "n1")));
    store.apply(Kind::Pod, None, Change::Deleted(pod("a-0", "a", "n1")));
    let a = store.snapshot(&key("a")).unwrap();
    assert_eq!((a.pods.len(), a.captured_pods.len()), (0, 1));

    let touched = store.apply(Kind::TrainJob, None, Change::Deleted(train_job("a", "ua")));
    assert_eq!(touched.gone, ["ua"]);
    assert!(store.snapshot(&key("a")).is_none() && store.evidence.is_empty());
    // The garbage collector deletes the pods after their TrainJob: nothing is kept.
    store.apply(Kind::Pod, None, Change::Applied(pod("a-1", "a", "n1")));
    store.apply(Kind::Pod, None, Change::Deleted(pod("a-1", "a", "n1")));
    assert!(store.evidence.is_empty() && store.on_node.is_empty());
}

#[test]
fn a_list_replaces_its_namespaces_objects_and_leaves_the_others() {
    let mut store = Store::default();
    let other = view(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"namespace": "other", "name": "c", "uid": "uc"},
    }));
    store.apply(Kind::TrainJob, Some("other"), Change::Listed(vec![other]));
    store.apply(Kind::TrainJob, Some("team"), Change::Listed(vec![train_job("a", "ua")]));
    store.apply(Kind::Pod, Some("team"), Change::Listed(vec![pod("a-0", "a", "n1")]));
    let touched =
        store.apply(Kind::TrainJob, Some("team"), Change::Listed(vec![train_job("b", "ub")]));
    assert_eq!(touched.gone, ["ua"]);
    let mut names: Vec<&str> = store.train_jobs().map(|k| k.1.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["b", "c"]);
    // A pod listed away was not seen deleted: it leaves no evidence.
    store.apply(Kind::TrainJob, Some("team"), Change::Applied(train_job("a", "ua2")));
    store.apply(Kind::Pod, Some("team"), Change::Listed(vec![]));
    assert!(store.evidence.is_empty());
}

#[test]
fn a_train_job_of_the_same_name_and_another_uid_replaces_the_one_before() {
    let mut store = Store::default();
    store.apply(Kind::TrainJob, None, Change::Applied(train_job("a", "ua")));
    store.apply(Kind::Pod, None, Change::Applied(pod("a-0", "a", "n1")));
    store.apply(Kind::Pod, None, Change::Deleted(pod("a-0", "a", "n1")));
    let touched = store.apply(Kind::TrainJob, None, Change::Applied(train_job("a", "ua2")));
    assert_eq!(touched.gone, ["ua"]);
    assert!(store.snapshot(&key("a")).unwrap().captured_pods.is_empty());
}
