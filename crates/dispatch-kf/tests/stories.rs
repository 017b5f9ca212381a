//! Stories a user of the supervisor lives through, on the simulated cluster: a rank
//! runs out of memory; a node is lost under a running job; rank 0's log is read.

use std::time::Duration;

use dispatch_core::{
    Backend, CauseKind, CessationSignal, Kind, ObjectState, OutputStream, Provenance, Watcher,
};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_model::keys;
use dispatch_kf_sim::{Identity, Rule, Sim};
use dispatch_kf_testkit::*;
use futures::StreamExt;
use serde_json::{Value, json};

/// A job started, opened and running on the cluster; its pods, rank 0 first.
async fn running(sim: &Sim, b: &KubeflowBackend) -> (dispatch_core::ObjectRef, Vec<Value>) {
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    let mut pods: Vec<Value> = sim
        .list("pods", NS)
        .into_iter()
        .filter(|p| p["metadata"]["labels"][keys::JOBSET_NAME] == object.name.as_str())
        .collect();
    pods.sort_by_key(|p| {
        p["metadata"]["labels"][keys::JOB_COMPLETION_INDEX].as_str().unwrap_or("").to_owned()
    });
    assert_eq!(pods.len(), 2, "two nodes, two ranks");
    (object, pods)
}

fn name(pod: &Value) -> String {
    pod["metadata"]["name"].as_str().unwrap().to_owned()
}

async fn until(
    stream: &mut dispatch_core::ObsStream,
    done: impl Fn(&dispatch_core::ObjectObs) -> bool,
) -> dispatch_core::ObjectObs {
    loop {
        let obs = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("the observation comes")
            .expect("the stream is open")
            .expect("the watch works");
        if done(&obs) {
            return obs;
        }
    }
}

#[tokio::test]
async fn a_rank_out_of_memory_ends_the_job_with_that_cause_naming_the_rank() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let (object, pods) = running(&sim, &b).await;
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    let first = until(&mut stream, |_| true).await;
    assert_eq!(first.state, ObjectState::Running);

    assert!(sim.oom(NS, &name(&pods[1])));
    sim.settle();
    let ended = until(&mut stream, |o| o.state == ObjectState::Ended).await;
    assert_eq!(ended.object.uid, object.uid);
    assert_eq!(ended.cause.kind, CauseKind::OutOfMemory, "{:#?}", ended.cause);
    assert_eq!(ended.cause.provenance, Some(Provenance::Scheduler));
    assert!(
        ended.cause.detail.starts_with(&format!("pod {}:", name(&pods[1]))),
        "{}",
        ended.cause.detail
    );
}

/// A job of more ranks than any fixed cap on the evidence (300; the cap was 256): the
/// rank out of memory goes first, then the teardown deletes the other 299. The
/// evidence keeps the whole execution, so the job ends out-of-memory naming that rank,
/// not with a cause the teardown made (checked: with the old cap it ends
/// non-zero-exit). The sim's controllers run only when told, so that the rank is
/// deleted before the others.
#[tokio::test]
async fn a_large_job_whose_rank_out_of_memory_is_deleted_first_ends_out_of_memory() {
    let sim = cluster_with(dispatch_kf_sim::SimOptions {
        auto_settle: false,
        ..dispatch_kf_sim::SimOptions::default()
    })
    .await;
    let b = backend(&sim, settings(json!({}))).await;
    let mut large = request(&job(1), 1);
    (large.spec.nodes, large.spec.gpus_per_node) = (300, 0);
    let object = b.start(&cx(), &large).await.unwrap();
    sim.settle();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    assert_eq!(until(&mut stream, |_| true).await.state, ObjectState::Running);
    let mut ranks: Vec<String> = sim.list("pods", NS).iter().map(name).collect();
    assert_eq!(ranks.len(), 300);
    ranks.sort();
    let first = ranks.remove(0);
    assert!(sim.oom(NS, &first));
    assert!(sim.delete("pods", NS, &first, dispatch_kf_sim::Propagation::Background));
    // The Job controller lets the failed rank's pod go (its tracking finalizer) before
    // the kubelets confirm the teardown's deletions of the others.
    sim.settle();
    let ended = until(&mut stream, |o| o.state == ObjectState::Ended).await;
    assert!(sim.list("pods", NS).is_empty(), "the teardown deleted the other ranks");
    assert_eq!(ended.object.uid, object.uid);
    assert_eq!(ended.cause.kind, CauseKind::OutOfMemory, "{:#?}", ended.cause);
    assert!(ended.cause.detail.starts_with(&format!("pod {first}:")), "{}", ended.cause.detail);
}

#[tokio::test]
async fn a_lost_node_is_node_lost_and_ceases_once_tainted_out_of_service() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let (object, pods) = running(&sim, &b).await;
    let node = pods[0]["spec"]["nodeName"].as_str().unwrap().to_owned();
    assert!(sim.lose_node(&node));
    sim.settle();
    let obs = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(
        (obs.state, obs.cause.kind),
        (ObjectState::Running, CauseKind::NodeLost),
        "{obs:#?}"
    );
    let cessation = b.ceased(&cx(), &object).await.unwrap();
    assert!(!cessation.ceased, "{cessation:#?}");
    assert!(
        cessation.nodes.iter().any(|n| n.node == node && n.state == "Ready=Unknown"),
        "{cessation:#?}"
    );

    assert!(sim.taint_out_of_service(&node));
    for other in cessation.nodes.iter().filter(|n| n.node != node) {
        sim.taint_out_of_service(&other.node);
    }
    sim.settle();
    let cessation = b.ceased(&cx(), &object).await.unwrap();
    assert!(cessation.ceased, "{cessation:#?}");
}

/// Ceased answers for the object its reference names or not at all: a reference whose
/// UID is gone is *not-found*, also when a new TrainJob of the same name now runs.
#[tokio::test]
async fn ceased_on_a_reference_whose_uid_is_gone_is_not_found() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let (first, pods) = running(&sim, &b).await;
    b.stop(&cx(), &first).await.unwrap();
    sim.settle();
    let err = b.ceased(&cx(), &first).await.unwrap_err();
    assert_eq!(err.kind(), Kind::NotFound, "{err:?}");
    assert!(err.message().contains("is gone"), "{}", err.message());
    let pod = dispatch_core::ObjectRef {
        kind: dispatch_core::ObjectKind::Pod,
        name: name(&pods[0]),
        uid: pods[0]["metadata"]["uid"].as_str().unwrap().to_owned(),
        ..first.clone()
    };
    let err = b.ceased(&cx(), &pod).await.unwrap_err();
    assert_eq!(err.kind(), Kind::NotFound, "a pod deleted unseen is gone: {err:?}");

    b.stop_job(&cx(), &job(1)).await.unwrap();
    let (second, _) = running(&sim, &b).await;
    assert_eq!(second.name, first.name);
    assert_ne!(second.uid, first.uid);
    let err = b.ceased(&cx(), &first).await.unwrap_err();
    assert_eq!(err.kind(), Kind::NotFound, "not the new object's answer: {err:?}");
    assert!(err.message().contains("another UID"), "{}", err.message());
    let cessation = b.ceased(&cx(), &second).await.unwrap();
    assert!(!cessation.ceased && cessation.nodes.len() == 2, "{cessation:#?}");
}

#[tokio::test]
async fn ceased_without_permission_to_get_nodes_is_unsupported() {
    let sim = cluster().await;
    let b = without_nodes_or_jobs(&sim, "no-nodes").await;
    assert!(!b.preflight().nodes.readable());
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    assert_eq!(b.ceased(&cx(), &object).await.unwrap_err().kind(), Kind::Unsupported);
}

/// Without `list` on batch Jobs StopJob does not look for them (rather than failing
/// *unauthorized* on every call), and the preflight says what is lost.
#[tokio::test]
async fn stop_job_without_permission_to_list_jobs_stops_and_the_preflight_says_what_is_lost() {
    let sim = cluster().await;
    let b = without_nodes_or_jobs(&sim, "no-jobs").await;
    assert!(!b.preflight().jobs_listable);
    let lacking = &b.preflight().lacking;
    assert!(lacking.iter().any(|l| l.starts_with("list jobs: StopJob cannot see")), "{lacking:?}");
    assert!(lacking.iter().any(|l| l.starts_with("delete jobs: ")), "{lacking:?}");
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    b.stop_job(&cx(), &job(1)).await.expect("StopJob without looking at Jobs");
    assert!(b.find(&cx(), &job(1)).await.unwrap().objects.is_empty());
}

/// A Backend made by Factory as `name`, an identity that may do everything but read
/// Nodes and touch batch Jobs.
async fn without_nodes_or_jobs(sim: &Sim, name: &str) -> KubeflowBackend {
    let mut limited = Identity::new(name);
    for group in
        ["", "trainer.kubeflow.org", "jobset.x-k8s.io", "kueue.x-k8s.io", "authorization.k8s.io"]
    {
        let resources: &[&str] =
            if group.is_empty() { &["pods", "pods/log", "namespaces"] } else { &["*"] };
        limited = limited.allow(Rule::new(&["*"], group, resources));
    }
    sim.add_identity(limited);
    KubeflowBackend::with_cluster(settings(json!({})), connect(sim, name).await, &cx())
        .await
        .unwrap()
}

#[tokio::test]
async fn output_is_rank_zeros_log_of_the_current_execution() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let gated = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let err = b.output(&cx(), &job(1), 1, OutputStream::Stdout, false).await.err().unwrap();
    assert_eq!(err.kind(), Kind::NotFound, "a gated job has no rank 0 pod: {err:?}");
    b.open(&hold_cx(), &gated).await.unwrap();
    sim.settle();
    let rank0 = sim
        .list("pods", NS)
        .into_iter()
        .find(|p| p["metadata"]["labels"][keys::JOB_COMPLETION_INDEX] == "0")
        .unwrap();
    sim.set_log(NS, &name(&rank0), "step 1 loss 2.31\nstep 2 loss 2.07\n");
    let chunks: Vec<_> =
        b.output(&cx(), &job(1), 1, OutputStream::Stdout, false).await.unwrap().collect().await;
    let text: Vec<u8> = chunks.into_iter().flat_map(Result::unwrap).collect();
    assert_eq!(String::from_utf8(text).unwrap(), "step 1 loss 2.31\nstep 2 loss 2.07\n");
    let err = b.output(&cx(), &job(1), 1, OutputStream::Stderr, false).await.err().unwrap();
    assert_eq!(err.kind(), Kind::Unsupported);
}

/// A runtime whose JobSet restarts once on failure (JobSet's failurePolicy).
fn restarting_runtime() -> Value {
    let mut runtime = dispatch_kf_sim::torch_distributed();
    runtime["metadata"]["name"] = json!("torch-restarting");
    runtime["spec"]["template"]["spec"]["failurePolicy"] = json!({"maxRestarts": 1});
    runtime
}

/// Rank 1 exits 1, and the JobSet of [`restarting_runtime`] recreates its Jobs.
fn rank_one_fails_and_the_jobset_restarts(sim: &Sim) {
    let rank1 = sim
        .list("pods", NS)
        .into_iter()
        .find(|p| p["metadata"]["labels"][keys::JOB_COMPLETION_INDEX] == "1")
        .unwrap();
    assert!(sim.exit(NS, &name(&rank1), 1));
    sim.settle();
    sim.advance(Duration::from_secs(60));
}

#[tokio::test]
async fn a_jobset_restart_is_a_new_execution_with_j_raised() {
    let sim = cluster().await;
    sim.apply(restarting_runtime()).unwrap();
    let b = backend(
        &sim,
        settings(
            json!({"runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-restarting"}]}),
        ),
    )
    .await;
    let mut req = request(&job(1), 1);
    req.spec.extensions.insert(
        "kubeflow/RuntimeRef".into(),
        json!({"kind": "ClusterTrainingRuntime", "name": "torch-restarting"}),
    );
    let object = b.start(&cx(), &req).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    let first = b.inspect(&cx(), &object).await.unwrap().execution.unwrap();
    assert_eq!((first.admission, first.restart_attempt), (1, 0));
    rank_one_fails_and_the_jobset_restarts(&sim);
    let after = b.inspect(&cx(), &object).await.unwrap();
    let second = after.execution.unwrap();
    assert_eq!((second.admission, second.restart_attempt, second.index), (1, 1, 2), "{after:#?}");
    assert_eq!(after.state, ObjectState::Running);
}

#[tokio::test]
async fn pods_carry_the_admission_count_and_read_it_from_their_environment() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let (object, pods) = running(&sim, &b).await;
    for pod in &pods {
        assert_eq!(pod["metadata"]["annotations"][keys::ANN_ADMISSION], "1");
        let env = pod["spec"]["containers"][0]["env"].as_array().unwrap();
        let admission = env.iter().find(|e| e["name"] == "DISPATCH_K8S_ADMISSION").unwrap();
        assert_eq!(
            admission["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['dispatch.phpboyscout.uk/admission']"
        );
    }
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    sim.advance(Duration::from_secs(60));
    b.release(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    let again: Vec<Value> = sim
        .list("pods", NS)
        .into_iter()
        .filter(|p| p["metadata"]["labels"][keys::JOBSET_NAME] == object.name.as_str())
        .collect();
    assert_eq!(again.len(), 2);
    assert!(again.iter().all(|p| p["metadata"]["annotations"][keys::ANN_ADMISSION] == "2"));
}

#[tokio::test]
async fn pods_deleted_while_nobody_watched_leave_no_evidence() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let (object, pods) = running(&sim, &b).await;
    assert!(sim.oom(NS, &name(&pods[1])));
    sim.settle();
    assert_eq!(b.inspect(&cx(), &object).await.unwrap().cause.kind, CauseKind::OutOfMemory);
    for pod in &pods {
        sim.delete("pods", NS, &name(pod), dispatch_kf_sim::Propagation::Background);
    }
    sim.settle();
    let gone = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(
        (gone.state, gone.cause.kind),
        (ObjectState::Ended, CauseKind::Unknown),
        "{gone:#?}"
    );
    assert!(gone.cause.detail.ends_with("no pod evidence was captured"), "{}", gone.cause.detail);
}

/// One name, two instances: the first restarts once (execution 1+1) with a Watch open,
/// is stopped and its Nodes deleted; the same submission started again runs on other
/// Nodes as 1+0. The evidence the Watch kept of the first instance has the higher R, but
/// is not the second's: Ceased of the second answers for its own Nodes.
#[tokio::test]
async fn ceased_of_a_name_started_again_answers_for_its_own_pods_not_an_earlier_instances() {
    let sim = cluster().await;
    sim.apply(restarting_runtime()).unwrap();
    let restarting = json!({"kind": "ClusterTrainingRuntime", "name": "torch-restarting"});
    let b = backend(&sim, settings(json!({"runtimes": [restarting.clone()]}))).await;
    let mut req = request(&job(1), 1);
    req.spec.extensions.insert("kubeflow/RuntimeRef".into(), restarting);
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    let first = b.start(&cx(), &req).await.unwrap();
    b.open(&hold_cx(), &first).await.unwrap();
    sim.settle();
    rank_one_fails_and_the_jobset_restarts(&sim);
    until(&mut stream, |o| {
        o.state == ObjectState::Running && o.execution.is_some_and(|e| e.restart_attempt == 1)
    })
    .await;
    let old_nodes: Vec<String> =
        b.ceased(&cx(), &first).await.unwrap().nodes.into_iter().map(|n| n.node).collect();
    assert_eq!(old_nodes.len(), 2, "{old_nodes:?}");

    b.stop(&cx(), &first).await.unwrap();
    b.stop_job(&cx(), &job(1)).await.unwrap();
    for node in &old_nodes {
        assert!(sim.delete_node(node), "{node}");
    }
    sim.settle();
    let second = b.start(&cx(), &req).await.unwrap();
    assert_ne!(second.uid, first.uid);
    b.open(&hold_cx(), &second).await.unwrap();
    sim.settle();
    let running =
        until(&mut stream, |o| o.object.uid == second.uid && o.state == ObjectState::Running).await;
    let execution = running.execution.unwrap();
    assert_eq!((execution.admission, execution.restart_attempt), (1, 0), "{running:#?}");
    let cessation = b.ceased(&cx(), &second).await.unwrap();
    assert!(!cessation.ceased, "{cessation:#?}");
    assert_eq!(cessation.nodes.len(), 2, "{cessation:#?}");
    assert!(cessation.nodes.iter().all(|n| !old_nodes.contains(&n.node)), "{cessation:#?}");
}
