//! Answered rows of the error mapping, the client's own retries, and its streams,
//! proved against the simulated cluster through the real kube client.

mod common;

use std::time::Duration;

use common::CONFIG_MAP;
use dispatch_core::{CallContext, Kind};
use dispatch_kf_client::error_map::{DEADLINE_PASSED, RequestClass};
use dispatch_kf_client::resources::{CLUSTER_TRAINING_RUNTIME, NODE, POD, Resource, TRAIN_JOB};
use dispatch_kf_client::{
    CONFLICT_TRIES, Change, Cluster, ClusterConfig, Created, Deleted, LIST_PAGE, LIST_RESTARTS,
    Permission,
};
use dispatch_kf_model::internal::gates::Edit;
use dispatch_kf_model::internal::json::uid;
use dispatch_kf_model::keys;
use dispatch_kf_model::view::View;
use dispatch_kf_sim::{Fault, FaultAction, Identity, Rule, Sim, SimOptions};
use futures::StreamExt;
use serde_json::{Value, json};

const NS: &str = "default";

async fn sim() -> Sim {
    Sim::start(SimOptions::default()).await.expect("the sim starts")
}

/// A cluster for `user`, loaded from the kubeconfig the sim writes, as a user would.
async fn cluster_as(sim: &Sim, user: &str) -> Cluster {
    let dir = std::env::temp_dir().join(format!("dispatch-kf-client-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{user}-{}.kubeconfig", sim.url().rsplit(':').next().unwrap()));
    std::fs::write(&path, sim.kubeconfig_yaml(user).unwrap()).unwrap();
    let config = ClusterConfig {
        kubeconfig: Some(path),
        context: None,
        request_timeout: Duration::from_secs(2),
    };
    Cluster::connect(&config).await.unwrap()
}

async fn cluster(sim: &Sim) -> Cluster {
    cluster_as(sim, "admin").await
}

fn cx() -> CallContext {
    CallContext::background()
}

/// A ConfigMap-like object of `resource`; the client does not care what it holds.
fn object(resource: Resource, name: &str) -> Value {
    let mut o = json!({"apiVersion": resource.api_version(), "kind": resource.kind,
                       "metadata": {"name": name}, "spec": {"x": 1}});
    if resource.namespaced {
        o["metadata"]["namespace"] = NS.into();
    }
    o
}

#[tokio::test]
async fn not_found_is_not_found() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let err = c.objects(CONFIG_MAP, NS).get(&cx(), "missing").await.unwrap_err();
    assert_eq!(err.kind(), Kind::NotFound, "{err:?}");
    assert_eq!(c.objects(CONFIG_MAP, NS).get_opt(&cx(), "missing").await.unwrap(), None);
}

#[tokio::test]
async fn a_create_of_a_name_that_exists_is_rejected() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    cms.create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap();
    let err = cms.create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("AlreadyExists"), "{}", err.message());
}

/// Only AlreadyExists means "it exists"; a create refused otherwise
/// is an error with its own sentinel, never a read of an object that is not there.
#[tokio::test]
async fn only_already_exists_answers_exists_and_a_refused_create_stays_refused() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    let Created::Made(made) = cms.create_or_read(&cx(), &object(CONFIG_MAP, "a")).await.unwrap()
    else {
        panic!("the first create makes the object")
    };
    match cms.create_or_read(&cx(), &object(CONFIG_MAP, "a")).await.unwrap() {
        Created::Exists(existing) => assert_eq!(uid(&existing), uid(&made)),
        Created::Made(_) => panic!("a second create of the name cannot make it"),
    }
    sim.add_fault(Fault::on("create", "configmaps", Fault::status(422, "Invalid", "data: bad")));
    let err = cms.create_or_read(&cx(), &object(CONFIG_MAP, "b")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("422"), "{}", err.message());
}

/// A create that is not to read what exists: `false` for AlreadyExists, the sentinel
/// for anything else.
#[tokio::test]
async fn create_unless_exists_says_whether_it_made_the_object_and_reads_nothing() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    assert!(cms.create_unless_exists(&cx(), &object(CONFIG_MAP, "a")).await.unwrap());
    assert!(!cms.create_unless_exists(&cx(), &object(CONFIG_MAP, "a")).await.unwrap());
    sim.add_fault(Fault::on("create", "configmaps", Fault::status(422, "Invalid", "data: bad")));
    let err = cms.create_unless_exists(&cx(), &object(CONFIG_MAP, "b")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
}

#[tokio::test]
async fn a_write_whose_precondition_failed_is_a_rejected_conflict() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    let stale = cms.create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap();
    let mut fresh = stale.clone();
    fresh["data"] = json!({"k": "1"});
    cms.replace(&cx(), RequestClass::Write, &fresh).await.unwrap();
    let err = cms.replace(&cx(), RequestClass::Write, &stale).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("409"), "{}", err.message());
    let answer = cms.delete(&cx(), "a", Some("not-the-uid")).await.unwrap();
    assert_eq!(answer, Deleted::PreconditionFailed);
    assert!(cms.get_opt(&cx(), "a").await.unwrap().is_some(), "nothing was deleted");
    assert_eq!(cms.delete(&cx(), "a", Some(uid(&stale))).await.unwrap(), Deleted::Deleted);
    assert_eq!(cms.delete(&cx(), "a", None).await.unwrap(), Deleted::Gone);
}

#[tokio::test]
async fn unauthorized_and_forbidden_are_unauthorized() {
    let sim = sim().await;
    sim.add_identity(Identity::new("nobody"));
    let err = cluster_as(&sim, "nobody").await.objects(CONFIG_MAP, NS).get(&cx(), "a").await;
    let err = err.unwrap_err();
    assert_eq!(err.kind(), Kind::Unauthorized, "{err:?}");
    assert!(err.message().contains("forbidden"), "{}", err.message());
    sim.add_fault(Fault::on(
        "get",
        "configmaps",
        Fault::status(401, "Unauthorized", "Unauthorized"),
    ));
    let err = cluster(&sim).await.objects(CONFIG_MAP, NS).get(&cx(), "a").await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unauthorized, "{err:?}");
}

#[tokio::test]
async fn bad_requests_are_rejected() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    for (code, reason) in [
        (422, "Invalid"),
        (400, "BadRequest"),
        (405, "MethodNotAllowed"),
        (413, "RequestEntityTooLarge"),
        (406, "NotAcceptable"),
        (415, "UnsupportedMediaType"),
    ] {
        sim.add_fault(Fault::on("create", "configmaps", Fault::status(code, reason, "refused")));
        let err = c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await;
        assert_eq!(err.unwrap_err().kind(), Kind::Rejected, "{code}");
    }
}

#[tokio::test]
async fn a_server_error_is_outcome_unknown_for_a_write_and_unreachable_for_a_read() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    sim.add_fault(Fault::on("create", "configmaps", Fault::status(500, "InternalError", "etcd")));
    let err = c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown);
    sim.add_fault(Fault::on("get", "configmaps", Fault::status(503, "ServiceUnavailable", "busy")));
    let err = c.objects(CONFIG_MAP, NS).get(&cx(), "a").await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unreachable);
}

#[tokio::test]
async fn a_write_reset_after_it_was_applied_is_outcome_unknown_and_the_object_exists() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    sim.add_fault(Fault::on("create", "configmaps", FaultAction::ResetAfterApply));
    let err = c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    assert!(sim.get("configmaps", NS, "a").is_some());
}

#[tokio::test]
async fn a_write_reset_before_it_was_applied_is_outcome_unknown_and_nothing_exists() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    sim.add_fault(Fault::on("create", "configmaps", FaultAction::ResetBeforeApply));
    let err = c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    assert!(sim.get("configmaps", NS, "a").is_none());
}

#[tokio::test]
async fn a_write_whose_connection_was_refused_is_unreachable_and_nothing_exists() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    c.objects(CONFIG_MAP, NS).get_opt(&cx(), "warm-the-pool").await.unwrap();
    sim.set_refusing(true).await;
    let err = c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    sim.set_refusing(false).await;
    assert!(sim.get("configmaps", NS, "a").is_none());
}

#[tokio::test]
async fn a_write_delayed_past_the_read_timeout_is_outcome_unknown() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    sim.add_fault(Fault::on("create", "configmaps", FaultAction::Delay(Duration::from_secs(5))));
    let err = c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap_err();
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
}

#[tokio::test]
async fn a_list_restarts_after_two_expiries_and_gives_up_after_four() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap();
    sim.add_fault(Fault::on("list", "configmaps", FaultAction::ExpireList).times(2));
    assert_eq!(c.objects(CONFIG_MAP, NS).list(&cx(), "").await.unwrap().items.len(), 1);
    sim.add_fault(
        Fault::on("list", "configmaps", FaultAction::ExpireList).times(LIST_RESTARTS as u32 + 1),
    );
    let err = c.objects(CONFIG_MAP, NS).list(&cx(), "").await.unwrap_err();
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
}

/// A list is read in pages of `LIST_PAGE` objects, as kubectl reads one, and a page
/// whose continue token expired starts the list again from the first page: 1,234
/// objects are three requests, every one limited, and come back once each.
#[tokio::test]
async fn a_list_is_read_in_pages_and_a_page_that_expired_starts_it_again() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    for i in 0..1234 {
        sim.apply(object(CONFIG_MAP, &format!("cm-{i:04}"))).unwrap();
    }
    sim.clear_requests();
    let listed = c.objects(CONFIG_MAP, NS).list(&cx(), "").await.unwrap();
    let mut names: Vec<&str> = listed.items.iter().map(|v| v.meta().name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 1234, "each once");
    let lists: Vec<_> = sim.requests().into_iter().filter(|r| r.verb == "list").collect();
    assert_eq!(lists.len(), 3, "{lists:#?}");
    assert!(lists.iter().all(|r| r.query.contains(&format!("limit={LIST_PAGE}"))), "{lists:#?}");
    assert!(!listed.resource_version.is_empty() && listed.continue_token.is_empty());

    // The second page's token has expired: the list starts again, and still gives each
    // object once.
    sim.clear_requests();
    sim.add_fault(Fault::on("list", "configmaps", FaultAction::ExpireList).nth(2));
    let again = c.objects(CONFIG_MAP, NS).list(&cx(), "").await.unwrap();
    assert_eq!(again.items.len(), 1234);
    assert_eq!(sim.requests().iter().filter(|r| r.verb == "list").count(), 5);
}

async fn bump(c: &Cluster) -> dispatch_core::Result<Value> {
    c.objects(CONFIG_MAP, NS)
        .read_modify_write(&cx(), RequestClass::Write, "a", |o| {
            o["data"] = json!({"n": "1"});
            Ok(Edit::Write)
        })
        .await
}

#[tokio::test]
async fn a_read_modify_write_survives_seven_conflicts_and_gives_up_at_eight() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    c.objects(CONFIG_MAP, NS).create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap();
    let conflict = || Fault::status(409, "Conflict", "the object has been modified");
    sim.add_fault(Fault::on("update", "configmaps", conflict()).times(CONFLICT_TRIES as u32 - 1));
    assert_eq!(bump(&c).await.unwrap()["data"]["n"], "1");
    sim.add_fault(Fault::on("update", "configmaps", conflict()).times(CONFLICT_TRIES as u32));
    let err = bump(&c).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Rejected, "{err:?}");
    assert!(err.message().contains("a conflict"), "{}", err.message());
}

#[tokio::test]
async fn discovery_says_whether_a_group_version_is_served() {
    let opts =
        SimOptions { unserved: vec!["kueue.x-k8s.io/v1beta2".into()], ..SimOptions::default() };
    let sim = Sim::start(opts).await.unwrap();
    let c = cluster(&sim).await;
    assert!(c.serves(&cx(), "trainer.kubeflow.org/v1alpha1").await.unwrap());
    assert!(c.serves(&cx(), "jobset.x-k8s.io/v1alpha2").await.unwrap());
    assert!(!c.serves(&cx(), "kueue.x-k8s.io/v1beta2").await.unwrap());
    assert!(c.serves(&cx(), "v1").await.unwrap());
}

#[tokio::test]
async fn access_reviews_answer_from_the_identity_rules() {
    let sim = sim().await;
    sim.add_identity(Identity::new("reader").allow(Rule::new(&["get", "list"], "", &["pods"])));
    let c = cluster_as(&sim, "reader").await;
    let get_pods = Permission { verb: "get", resource: POD, subresource: "" };
    let get_nodes = Permission { verb: "get", resource: NODE, subresource: "" };
    let read_logs = Permission { verb: "get", resource: POD, subresource: "log" };
    assert!(c.can_i(&cx(), NS, &get_pods).await.unwrap());
    assert!(!c.can_i(&cx(), NS, &get_nodes).await.unwrap());
    assert!(!c.can_i(&cx(), NS, &read_logs).await.unwrap());
    let create_jobs = Permission { verb: "create", resource: TRAIN_JOB, subresource: "" };
    assert!(cluster(&sim).await.can_i(&cx(), NS, &create_jobs).await.unwrap());
}

fn applied(change: Option<dispatch_core::Result<Change>>) -> String {
    match change {
        Some(Ok(Change::Applied(o))) => o.meta().name().to_owned(),
        other => panic!("{other:?}"),
    }
}

fn listed(change: Option<dispatch_core::Result<Change>>) -> Vec<String> {
    match change {
        Some(Ok(Change::Listed(views))) => {
            views.iter().map(|o| o.meta().name().to_owned()).collect()
        }
        other => panic!("{other:?}"),
    }
}

/// A watch (kube-runtime's watcher) lists first, then yields each
/// change, read as the model's views.
#[tokio::test]
async fn a_watch_lists_then_yields_changes() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    cms.create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap();
    let mut watch = cms.watch("");
    assert_eq!(listed(watch.next().await), ["a"]);
    cms.create(&cx(), &object(CONFIG_MAP, "b")).await.unwrap();
    assert_eq!(cms.delete(&cx(), "a", None).await.unwrap(), Deleted::Deleted);
    assert_eq!(applied(watch.next().await), "b");
    assert!(matches!(watch.next().await, Some(Ok(Change::Deleted(o))) if o.meta().name() == "a"));
}

/// A metadata watch reads each object as metadata alone.
#[tokio::test]
async fn a_metadata_watch_reads_names_and_labels_only() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let pods = c.objects(POD, NS);
    sim.apply(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})).unwrap();
    sim.apply(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": NS, "labels": {keys::LABEL_JOB_ID: "J"}},
        "spec": {"nodeName": "n", "containers": [{"name": "node", "image": "busybox"}]}
    }))
    .unwrap();
    let mut watch = pods.watch_metadata("");
    let Some(Ok(Change::Listed(views))) = watch.next().await else { panic!("a list first") };
    let [View::Other(meta)] = views.as_slice() else { panic!("{views:?}") };
    assert_eq!((meta.name(), meta.label(keys::LABEL_JOB_ID)), ("p", Some("J")));
    let mut whole = pods.watch("");
    let Some(Ok(Change::Listed(views))) = whole.next().await else { panic!("a list first") };
    let [View::Pod(pod)] = views.as_slice() else { panic!("{views:?}") };
    assert_eq!(pod.node_name.or_empty(), "n", "a whole watch reads the pod's fields");
}

/// A 410 lists anew ([`Change::Listed`]), instead of ending the watch.
#[tokio::test]
async fn a_watch_lists_anew_when_its_version_expires() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    sim.add_fault(Fault::on("watch", "configmaps", FaultAction::ExpireWatch).times(1));
    let mut watch = cms.watch("");
    assert_eq!(listed(watch.next().await), Vec::<String>::new());
    assert_eq!(listed(watch.next().await), Vec::<String>::new(), "a 410 lists anew");
    cms.create(&cx(), &object(CONFIG_MAP, "b")).await.unwrap();
    assert_eq!(applied(watch.next().await), "b");
}

/// A connection the server closes is resumed from the last resource
/// version seen: nothing is seen twice, nothing is missed.
#[tokio::test]
async fn a_watch_closed_by_the_server_resumes_from_its_last_version() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    let mut watch = cms.watch("");
    assert_eq!(listed(watch.next().await), Vec::<String>::new());
    cms.create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap();
    assert_eq!(applied(watch.next().await), "a");
    sim.close_watches();
    cms.create(&cx(), &object(CONFIG_MAP, "b")).await.unwrap();
    assert_eq!(applied(watch.next().await), "b", "nothing is seen twice, nothing is missed");
}

#[tokio::test]
async fn a_pod_log_reads_whole_and_a_missing_pod_is_not_found() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    sim.apply(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": NS},
        "spec": {"containers": [{"name": "node", "image": "busybox"}]}
    }))
    .unwrap();
    sim.set_log(NS, "p", "epoch 1\nepoch 2\n");
    let chunks: Vec<_> = c.pod_log(&cx(), NS, "p", "node", false).await.unwrap().collect().await;
    let text: Vec<u8> = chunks.into_iter().flat_map(Result::unwrap).collect();
    assert_eq!(String::from_utf8(text).unwrap(), "epoch 1\nepoch 2\n");
    let err = c.pod_log(&cx(), NS, "missing", "node", false).await.err().unwrap();
    assert_eq!(err.kind(), Kind::NotFound, "{err:?}");
}

#[tokio::test]
async fn cluster_scoped_kinds_ignore_the_namespace() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let runtimes = c.objects(CLUSTER_TRAINING_RUNTIME, NS);
    let mut rt = object(CLUSTER_TRAINING_RUNTIME, "torch");
    rt["spec"] = json!({"template": {"spec": {"replicatedJobs": []}}});
    runtimes.create(&cx(), &rt).await.unwrap();
    assert!(runtimes.get(&cx(), "torch").await.is_ok());
}

#[tokio::test]
async fn a_json_patch_applies_and_its_failed_test_is_rejected() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let cms = c.objects(CONFIG_MAP, NS);
    let created = cms.create(&cx(), &object(CONFIG_MAP, "a")).await.unwrap();
    let uid = uid(&created);
    let patch = json!([
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "add", "path": "/data", "value": {"k": "v"}},
    ]);
    let patched = cms.patch_json(&cx(), RequestClass::Write, "a", &patch).await.unwrap();
    assert_eq!(patched["data"]["k"], "v");
    let stale = json!([{"op": "test", "path": "/metadata/uid", "value": "another"}]);
    let err = cms.patch_json(&cx(), RequestClass::Write, "a", &stale).await.unwrap_err();
    assert!(err.is_refusal(), "{err:?}");
    let malformed = json!([{"op": "frobnicate"}]);
    let err = cms.patch_json(&cx(), RequestClass::Write, "a", &malformed).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Invalid);
}

/// A caller that waited on something else first (the Backend's shared watches) learns
/// from the client what its next read would meet once the call has ended: for the hold
/// family, `Rejected` with the fixed message; for any other read, `Unreachable`.
#[tokio::test]
async fn a_read_after_the_calls_deadline_is_refused_as_its_family_says() {
    let sim = sim().await;
    let c = cluster(&sim).await;
    let live = CallContext::with_deadline(std::time::Instant::now() + Duration::from_secs(30));
    let hold = c.hold_family(&live).unwrap();
    assert!(hold.may_send_read(&live).is_ok() && c.may_send_read(&live).is_ok());
    let passed = CallContext::with_deadline(std::time::Instant::now());
    assert_eq!(c.may_send_read(&passed).unwrap_err().kind(), Kind::Unreachable);
    let refused = hold.may_send_read(&passed).unwrap_err();
    assert_eq!((refused.kind(), refused.message()), (Kind::Rejected, DEADLINE_PASSED));
}
