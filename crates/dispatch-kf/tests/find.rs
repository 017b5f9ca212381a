//! Find on a cold Backend (one made for a single call, as the CLI makes it): it reads
//! only the job's own objects, by label and by the names they imply, never the whole
//! namespace, and answers as a Backend whose shared watches are live does, orphans
//! included.

use std::time::Duration;

use dispatch_core::{Backend, Discovery, JobId, ObjectObs, Watcher};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_model::{keys, names};
use dispatch_kf_sim::{Identity, RequestRecord, Rule, Sim};
use dispatch_kf_testkit::*;
use futures::StreamExt;
use serde_json::json;

/// A read-only Backend made by Factory, as `dispatch-kf find` makes one: nothing has
/// read the namespace through it yet.
async fn cold(sim: &Sim) -> KubeflowBackend {
    backend(sim, settings(json!({"readOnly": true}))).await
}

/// `count` suspended TrainJobs of no dispatch job on the stock runtime, as other
/// tenants' would be.
fn others(sim: &Sim, count: usize) {
    for i in 0..count {
        sim.apply(json!({
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": format!("other-{i:05}"), "namespace": NS},
            "spec": {"suspend": true, "runtimeRef": {"apiGroup": "trainer.kubeflow.org",
                     "kind": "ClusterTrainingRuntime", "name": "torch-distributed"}},
        }))
        .unwrap();
    }
}

/// The requests of a cold Backend's Find of `job`, as method, path and query.
async fn cold_find_requests(sim: &Sim, job: &JobId) -> Vec<RequestRecord> {
    let b = cold(sim).await;
    sim.clear_requests();
    b.find(&cx(), job).await.unwrap();
    sim.requests()
}

/// Whether a request reads only what belongs to `job`: a get by name, or a list whose
/// label selector names the job or its JobSets.
fn job_scoped(r: &RequestRecord, job: &JobId) -> bool {
    let query = r.query.replace("%3D", "=").replace("%2F", "/").replace("%20", " ");
    let by_job = query.contains(&format!("{}={}", keys::LABEL_JOB_ID, job));
    let by_job_set = query.contains(keys::JOBSET_NAME)
        && query.contains(&names::make(job, 1))
        && !query.contains("other-");
    let by_hostname = r.resource == "nodes" && query.contains("kubernetes.io/hostname+in+");
    r.verb == "get" || (r.verb == "list" && (by_job || by_job_set || by_hostname))
}

/// A cold Backend's first Find reads the job's objects, not the namespace's: with 300
/// other TrainJobs (and their JobSets) it sends the same requests as with none, and
/// every one is a get by name or a list selected by the job's labels: no watch, no
/// list of a whole kind.
#[tokio::test]
async fn a_cold_backends_find_reads_only_the_jobs_objects_however_crowded_the_namespace() {
    let sim = cluster().await;
    let writer = backend(&sim, settings(json!({}))).await;
    running_job(&sim, &writer, 1).await;

    let alone = cold_find_requests(&sim, &job(1)).await;
    others(&sim, 300);
    sim.settle();
    let crowded = cold_find_requests(&sim, &job(1)).await;

    for r in &crowded {
        assert!(job_scoped(r, &job(1)), "{} {}?{} reads beyond the job", r.verb, r.path, r.query);
    }
    let shape = |rs: &[RequestRecord]| {
        let mut v: Vec<String> = rs.iter().map(|r| format!("{} {}", r.verb, r.path)).collect();
        v.sort();
        v
    };
    assert_eq!(shape(&crowded), shape(&alone), "requests do not grow with the namespace");
    let lists = crowded.iter().filter(|r| r.verb == "list").count();
    assert_eq!(
        lists, 6,
        "a list each of TrainJobs, JobSets, copies and the job's Nodes, and pods twice: {crowded:#?}"
    );
    assert!(crowded.iter().all(|r| r.verb == "list"), "{crowded:#?}");
}

/// The observations of a Discovery without their `seenAt`, in a stable order.
fn comparable(found: Discovery) -> Vec<ObjectObs> {
    let mut objects: Vec<ObjectObs> = found
        .objects
        .into_iter()
        .map(|mut o| {
            o.seen_at = jiff::Timestamp::UNIX_EPOCH;
            o
        })
        .collect();
    objects.sort_by(|a, b| (a.object.kind, &a.object.name).cmp(&(b.object.kind, &b.object.name)));
    objects
}

/// Removes the job-id label from the named object.
fn strip_label(sim: &Sim, resource: &str, name: &str) {
    let mut object = sim.get(resource, NS, name).unwrap();
    object["metadata"]["labels"].as_object_mut().unwrap().remove(keys::LABEL_JOB_ID);
    sim.apply(object).unwrap();
}

/// A cold Find answers as a Find whose shared watches are live (a Watch of the job is
/// open) for every object the job's own objects name: a TrainJob whose label a foreign
/// hand stripped, found through its runtime copy's label; and the orphans a stop leaves
/// while the collector lags, a JobSet among them with its label stripped too, found
/// through its pods.
#[tokio::test]
async fn a_cold_find_answers_as_a_warm_one_for_label_stripped_objects_and_orphans() {
    let sim = cluster().await;
    let writer = backend(&sim, settings(json!({}))).await;
    let first = writer.start(&cx(), &request(&job(1), 1)).await.unwrap();
    writer.open(&hold_cx(), &first).await.unwrap();
    sim.settle();
    sim.set_gc_lag(Duration::from_secs(3600));
    writer.stop(&cx(), &first).await.unwrap();
    strip_label(&sim, "jobsets", &first.name);
    let second = writer.start(&cx(), &request(&job(1), 2)).await.unwrap();
    strip_label(&sim, "trainjobs", &second.name);
    others(&sim, 20);
    sim.settle();

    let warm = backend(&sim, settings(json!({"readOnly": true}))).await;
    let mut watching = warm.watch(&cx(), &job(1)).await.unwrap();
    watching.next().await.expect("a first observation").unwrap();
    let expected = comparable(warm.find(&cx(), &job(1)).await.unwrap());
    let kinds: Vec<String> =
        expected.iter().map(|o| format!("{:?} {}", o.object.kind, o.object.name)).collect();
    assert!(expected.iter().any(|o| o.object.uid == second.uid), "{kinds:?}");
    assert!(expected.iter().any(|o| o.object.name == first.name && o.foreign), "{kinds:?}");

    let found = comparable(cold(&sim).await.find(&cx(), &job(1)).await.unwrap());
    assert_eq!(found, expected);
}

/// A job on many Nodes: with `list` on Nodes a Find reads them in one list, whatever
/// the number of ranks; with `get` alone it gets each of them, but never more than
/// `READS_AT_ONCE` (8) at a time: a client opens one connection per request it has in
/// flight, and a Find of a job on 40 Nodes opens no more than that (all at once, it
/// opened 28 here).
#[tokio::test]
async fn a_find_of_a_job_on_forty_nodes_lists_them_or_has_at_most_a_few_gets_in_flight() {
    let (sim, proxy) = cluster_behind_proxy().await;
    for i in 4..40 {
        sim.add_gpu_node(&format!("gpu-{i}"), 8);
    }
    let b = backend(&sim, settings(json!({}))).await;
    let mut wide = request(&job(1), 1);
    wide.spec.nodes = 40;
    let object = b.start(&cx(), &wide).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    let nodes: std::collections::BTreeSet<String> = sim
        .list("pods", NS)
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(nodes.len(), 40, "one rank per Node");

    let node_requests = |sim: &Sim| -> Vec<String> {
        let on_nodes = sim.requests().into_iter().filter(|r| r.resource == "nodes");
        on_nodes.map(|r| r.verb).collect()
    };
    sim.clear_requests();
    let found = b.find(&cx(), &job(1)).await.unwrap();
    assert_eq!(found.objects[0].state, dispatch_core::ObjectState::Running);
    assert_eq!(node_requests(&sim), ["list"], "the 40 Nodes in one list");

    let getter = Identity::new("getter")
        .allow(Rule::all().in_namespace(NS))
        .allow(Rule::new(&["get"], "", &["nodes"]))
        .allow(Rule::new(&["get"], "trainer.kubeflow.org", &["clustertrainingruntimes"]))
        .allow(Rule::new(&["create"], "authorization.k8s.io", &["selfsubjectaccessreviews"]));
    sim.add_identity(getter);
    let config = proxy.config(&sim, "getter").await;
    let cluster =
        dispatch_kf_client::Cluster::from_kube_config(config, Duration::from_secs(5)).unwrap();
    let through = KubeflowBackend::with_cluster(settings(json!({})), cluster, &cx()).await.unwrap();
    let lacking = &through.preflight().lacking;
    assert!(lacking.iter().any(|p| p.starts_with("list nodes: ")), "{lacking:?}");
    let before = proxy.connections_made();
    sim.clear_requests();
    let found = through.find(&cx(), &job(1)).await.unwrap();
    let opened = proxy.connections_made() - before;
    assert_eq!(found.objects[0].state, dispatch_core::ObjectState::Running);
    assert_eq!(node_requests(&sim), vec!["get"; 40], "each Node is read once");
    assert!(opened <= 8 + 1, "{opened} connections for one Find");
}
