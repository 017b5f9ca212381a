//! Snapshot reads for one job, against the simulated cluster: what they find, and that
//! the number of requests does not grow with the namespace.

use dispatch_core::{CallContext, JobId};
use dispatch_kf_client::{Cluster, JobQuery, Known, KnownNames, NodeReads};
use dispatch_kf_model::{Mode, keys, names};
use dispatch_kf_sim::{Sim, SimOptions};
use serde_json::{Value, json};

const NS: &str = "default";

async fn cluster(sim: &Sim) -> Cluster {
    dispatch_kf_testkit::connect(sim, "admin").await
}

fn job(n: u32) -> JobId {
    JobId::parse(&format!("01JDQ4V8Z6K3M0B7X2N5R{n:05}")).unwrap()
}

fn labels(job: &JobId) -> Value {
    json!({keys::LABEL_JOB_ID: job.as_str(), keys::LABEL_SUBMISSION: "1", keys::LABEL_MANAGED_BY: "dispatch"})
}

/// A TrainJob, its JobSet and `pods` pods of submission 1 of `job`, as setup.
fn install_job(sim: &Sim, job: &JobId, pods: usize, with_labels: bool) {
    let name = names::make(job, 1);
    let labels = if with_labels { labels(job) } else { json!({}) };
    let tj = sim
        .apply(json!({
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"suspend": true, "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": name}}
        }))
        .unwrap();
    let uid = tj["metadata"]["uid"].as_str().unwrap().to_owned();
    sim.apply(json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS, "labels": labels,
                     "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "name": name, "uid": uid, "controller": true}]},
        "spec": {"suspend": true}
    }))
    .unwrap();
    for i in 0..pods {
        let mut pod_labels = labels.clone();
        pod_labels[keys::JOBSET_NAME] = json!(name);
        sim.apply(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{name}-node-0-{i}-abcde"), "namespace": NS, "labels": pod_labels},
            "spec": {"nodeName": "gpu-0", "containers": [{"name": "node", "image": "x"}]}
        }))
        .unwrap();
    }
}

async fn sim_with_a_node() -> Sim {
    let sim = Sim::start(SimOptions { auto_settle: false, ..SimOptions::default() }).await.unwrap();
    sim.apply(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"}})).unwrap();
    sim
}

/// Nothing known but by label.
static BY_LABEL: KnownNames =
    KnownNames { train_jobs: Vec::new(), job_sets: Vec::new(), runtimes: Vec::new() };

fn query(job: &JobId) -> JobQuery<'_> {
    JobQuery {
        namespace: NS,
        job,
        mode: Mode::Plain,
        nodes: NodeReads::Listed,
        known: Known::Index(&BY_LABEL),
    }
}

#[tokio::test]
async fn a_job_snapshot_holds_its_train_job_job_set_pods_and_nodes() {
    let sim = sim_with_a_node().await;
    install_job(&sim, &job(1), 2, true);
    install_job(&sim, &job(2), 2, true);
    sim.clear_requests();
    let snapshot =
        cluster(&sim).await.read_job(&CallContext::background(), query(&job(1))).await.unwrap();
    assert_eq!(snapshot.train_jobs.len(), 1);
    assert_eq!(snapshot.train_jobs[0].meta.name(), names::make(&job(1), 1));
    assert_eq!(snapshot.job_sets.len(), 1);
    assert_eq!(snapshot.pods.len(), 2);
    // The JobSet's pods are read by its name only when they lack the job's label: a
    // pod is read once, however many ranks.
    let by_job_set: Vec<String> = sim
        .requests()
        .into_iter()
        .filter(|r| r.resource == "pods" && r.query.contains("jobset-name"))
        .map(|r| r.query.replace("%2F", "/").replace("%21%3D", "!=").replace("%3D", "="))
        .collect();
    let unlabelled = format!("{}!={}", keys::LABEL_JOB_ID, job(1));
    assert!(by_job_set.len() == 1 && by_job_set[0].contains(&unlabelled), "{by_job_set:?}");
    assert_eq!(snapshot.nodes.len(), 1);
}

#[tokio::test]
async fn objects_whose_labels_were_stripped_are_found_by_name() {
    let sim = sim_with_a_node().await;
    install_job(&sim, &job(1), 1, false);
    let c = cluster(&sim).await;
    let by_label = c.read_job(&CallContext::background(), query(&job(1))).await.unwrap();
    assert!(by_label.train_jobs.is_empty() && by_label.job_sets.is_empty(), "no label, no match");

    let name = names::make(&job(1), 1);
    let known = KnownNames {
        train_jobs: vec![name.clone()],
        job_sets: vec![name],
        runtimes: vec!["gone".into()],
    };
    let snapshot = c
        .read_job(
            &CallContext::background(),
            JobQuery { known: Known::Index(&known), ..query(&job(1)) },
        )
        .await
        .unwrap();
    assert_eq!(snapshot.train_jobs.len(), 1);
    assert_eq!(snapshot.job_sets.len(), 1);
    assert_eq!(snapshot.pods.len(), 1, "found through the JobSet's name");
    assert!(snapshot.runtimes.is_empty(), "a known name that is gone is simply gone");
}

#[tokio::test]
async fn a_job_snapshot_takes_as_many_requests_in_a_crowded_namespace_as_in_an_empty_one() {
    let sim = sim_with_a_node().await;
    let c = cluster(&sim).await;
    install_job(&sim, &job(1), 2, true);
    sim.clear_requests();
    c.read_job(&CallContext::background(), query(&job(1))).await.unwrap();
    let alone = sim.requests().len();

    for n in 2..1002 {
        install_job(&sim, &job(n), 0, true);
    }
    sim.clear_requests();
    let snapshot = c.read_job(&CallContext::background(), query(&job(1))).await.unwrap();
    assert_eq!(sim.requests().len(), alone, "requests do not grow with the namespace");
    assert_eq!(snapshot.train_jobs.len(), 1);
    assert!(alone <= 10, "{alone} requests for one job");
}

/// A job of more ranks than a namespace-wide list's page (500) is read in as many
/// requests as a job of two: a job's lists ask for pages of `JOB_LIST_PAGE`.
#[tokio::test]
async fn a_job_of_many_ranks_is_read_in_as_many_requests_as_a_job_of_two() {
    let sim = sim_with_a_node().await;
    let c = cluster(&sim).await;
    install_job(&sim, &job(1), 2, true);
    install_job(&sim, &job(2), 1_200, true);
    let mut requests = Vec::new();
    for n in [1, 2] {
        sim.clear_requests();
        let snapshot = c.read_job(&CallContext::background(), query(&job(n))).await.unwrap();
        requests.push(sim.requests().len());
        assert_eq!(snapshot.pods.len(), if n == 1 { 2 } else { 1_200 });
    }
    assert_eq!(requests[0], requests[1], "{requests:?}");
}

/// A job whose ranks run on many Nodes: with `list` on Nodes, one list by the hostname
/// label reads them all, whatever the number of ranks, and a get reads each Node whose
/// hostname label is not its name; with `get` alone, a get each. Both find the same
/// Nodes, and leave out the one that is gone.
#[tokio::test]
async fn a_jobs_nodes_are_read_in_one_list_however_many_ranks_it_has() {
    let sim = sim_with_a_node().await;
    let name = names::make(&job(1), 1);
    install_job(&sim, &job(1), 0, true);
    let ranks = 64;
    for i in 0..ranks {
        let node = format!("gpu-{i}");
        // gpu-0 (made without labels) and gpu-1 (another hostname) are not found by it.
        let hostname = if i == 1 { "renamed".to_owned() } else { node.clone() };
        if i != 0 && i != ranks - 1 {
            let labels = json!({"kubernetes.io/hostname": hostname});
            sim.apply(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels}}))
                .unwrap();
        }
        let labels = json!({keys::LABEL_JOB_ID: job(1).as_str(), keys::JOBSET_NAME: name});
        sim.apply(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{name}-node-0-{i}-abcde"), "namespace": NS, "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "node", "image": "x"}]}
        }))
        .unwrap();
    }
    let c = cluster(&sim).await;
    let job = job(1);
    let mut found = Vec::new();
    for (reads, node_requests) in [(NodeReads::Listed, 1 + 3), (NodeReads::EachByName, ranks)] {
        sim.clear_requests();
        let query = JobQuery { nodes: reads, ..query(&job) };
        let snapshot = c.read_job(&CallContext::background(), query).await.unwrap();
        let on_nodes = sim.requests().iter().filter(|r| r.resource == "nodes").count();
        assert_eq!(
            on_nodes, node_requests,
            "{reads:?}: a list, then a get of gpu-0, gpu-1 and the gone one"
        );
        let mut names: Vec<String> =
            snapshot.nodes.iter().map(|n| n.meta.name().to_owned()).collect();
        names.sort();
        found.push(names);
    }
    assert_eq!(found[0].len(), ranks - 1, "every Node but the gone one: {:?}", found[0]);
    assert_eq!(found[0], found[1]);
}

/// Without an index, a TrainJob whose label was stripped is still found: its JobSet and
/// pods keep theirs, and every object of a submission bears the submission's name.
#[tokio::test]
async fn without_an_index_a_stripped_object_is_found_by_the_name_its_siblings_imply() {
    let sim = sim_with_a_node().await;
    install_job(&sim, &job(1), 1, true);
    install_job(&sim, &job(2), 1, true);
    let name = names::make(&job(1), 1);
    let mut tj = sim.get("trainjobs", NS, &name).unwrap();
    tj["metadata"]["labels"].as_object_mut().unwrap().remove(keys::LABEL_JOB_ID);
    sim.apply(tj).unwrap();

    let c = cluster(&sim).await;
    let one = job(1);
    let implied = JobQuery { known: Known::Implied, ..query(&one) };
    sim.clear_requests();
    let snapshot = c.read_job(&CallContext::background(), implied).await.unwrap();
    assert_eq!(snapshot.train_jobs.len(), 1, "found by the name its JobSet implies");
    assert_eq!(snapshot.train_jobs[0].meta.name(), name);
    assert_eq!(snapshot.job_sets.len(), 1);
    let gets: Vec<String> = sim
        .requests()
        .iter()
        .filter(|r| r.verb == "get" && r.resource != "nodes")
        .map(|r| format!("{} {}", r.resource, r.name))
        .collect();
    // This setup has no runtime copy: its name is asked for and found absent, before
    // the TrainJob, as a child is read before its owner.
    assert_eq!(gets, [format!("trainingruntimes {name}"), format!("trainjobs {name}")]);
}
