//! `dispatch_kf::explain` on the simulated cluster, as an identity granted exactly the
//! ClusterRole `dispatch-kf-explain` of docs/rbac.md (read from the page), and the
//! requests it sends (docs/cli.md#explain-any-trainjob names these tests).

use dispatch_core::{Kind, ObjectState};
use dispatch_kf::{Explain, ModeChoice, explain, explain_pages};
use dispatch_kf_client::Scope;
use dispatch_kf_model::keys;
use dispatch_kf_sim::{Identity, Rule, Sim};
use dispatch_kf_testkit::{NS, cluster, connect, cx};
use serde_json::json;

/// The rules of the ClusterRole `dispatch-kf-explain` as docs/rbac.md gives it.
fn documented_rules() -> Vec<Rule> {
    let page = include_str!("../../../docs/rbac.md");
    let section = page.split("## Explain: read-only").nth(1).unwrap();
    let yaml = section.split("```yaml\n").nth(1).unwrap().split("```").next().unwrap();
    let role: serde_json::Value = serde_yaml_ng::from_str(yaml).unwrap();
    assert_eq!(role["metadata"]["name"], "dispatch-kf-explain");
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect()
    };
    let rules = role["rules"].as_array().unwrap().iter();
    rules
        .map(|rule| Rule {
            verbs: strings(&rule["verbs"]),
            groups: strings(&rule["apiGroups"]),
            resources: strings(&rule["resources"]),
            namespaces: Vec::new(),
        })
        .collect()
}

/// A TrainJob made by hand, and one pod of its JobSet running on `gpu-0` once settled.
fn by_hand(sim: &Sim, name: &str, labels: serde_json::Value) {
    sim.apply(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
    }))
    .unwrap();
    sim.settle();
}

fn named(name: &str) -> Explain<'_> {
    Explain { scope: Scope::Named { namespace: NS, name }, mode: ModeChoice::Auto, backend: "kf" }
}

#[tokio::test]
async fn the_documented_read_only_role_is_enough_to_explain_and_nodes_are_optional() {
    let sim = cluster().await;
    by_hand(&sim, "by-hand", json!({}));
    let rules = documented_rules();
    let all = rules.iter().fold(Identity::new("reader"), |id, r| id.allow(r.clone()));
    sim.add_identity(all);
    let cluster = connect(&sim, "reader").await;
    let obs = explain(&cluster, &cx(), named("by-hand")).await.unwrap();
    assert_eq!((obs.len(), obs[0].state, obs[0].foreign), (1, ObjectState::Running, true));
    let whole = Explain { scope: Scope::Namespace(NS), ..named("") };
    let mut listed = explain(&cluster, &cx(), whole).await.unwrap();
    listed[0].seen_at = obs[0].seen_at;
    assert_eq!(listed, obs);

    let without_nodes = rules.iter().filter(|r| r.resources != ["nodes"]);
    let blind = without_nodes.fold(Identity::new("blind"), |id, r| id.allow(r.clone()));
    sim.add_identity(blind);
    let cluster = connect(&sim, "blind").await;
    let obs = explain(&cluster, &cx(), named("by-hand")).await.unwrap();
    assert_eq!(obs[0].state, ObjectState::Running, "{obs:?}");

    sim.add_identity(Identity::new("nobody"));
    let cluster = connect(&sim, "nobody").await;
    let err = explain(&cluster, &cx(), named("by-hand")).await.unwrap_err();
    assert!(err.is(Kind::Unauthorized), "{err}");
}

/// Explaining one TrainJob reads it, its JobSet, its JobSet's pods and their Nodes by
/// name or label, never a whole namespace or every Node; a missing one is not found.
#[tokio::test]
async fn explaining_one_train_job_reads_only_what_joins_to_it() {
    let sim = cluster().await;
    by_hand(&sim, "by-hand", json!({}));
    by_hand(&sim, "other", json!({}));
    let cluster = connect(&sim, "admin").await;
    let read = explained(&sim, &cluster, named("by-hand")).await;
    assert!(read.iter().all(|r| r.starts_with("GET ")), "{read:?}");
    let nodes = "/api/v1/nodes?&labelSelector=kubernetes.io/hostname in (gpu-0)&";
    assert!(read.iter().all(|r| r.contains("by-hand") || r.contains(nodes)), "{read:?}");
    assert_eq!(read.iter().filter(|r| r.contains("/nodes")).count(), 1, "{read:?}");
    assert_eq!(read.len(), 4, "TrainJob, JobSet, pods, Node: {read:?}");

    let err = explain(&cluster, &cx(), named("nowhere")).await.unwrap_err();
    assert!(err.is(Kind::NotFound), "{err}");

    // A namespace: one list per kind, each selected by what joins it to a TrainJob and
    // read in pages, the Nodes among them (both TrainJobs' one pod each may share one).
    // The pods are those of the TrainJobs' JobSets, by name.
    let whole = Explain { scope: Scope::Namespace(NS), ..named("") };
    let read = explained(&sim, &cluster, whole).await;
    let lists: Vec<&String> = read.iter().filter(|r| !r.contains("/nodes")).collect();
    assert_eq!(lists.len(), 3, "TrainJobs, JobSets, pods: {read:?}");
    let page = dispatch_kf_client::LIST_PAGE;
    let by_name = format!("labelSelector={} in (by-hand,other)&limit={page}", keys::JOBSET_NAME);
    assert!(lists.iter().any(|r| r.contains("/pods?") && r.ends_with(&by_name)), "{lists:?}");
    assert!(lists.iter().all(|r| r.ends_with(&format!("limit={page}"))), "paged: {lists:?}");
    assert_eq!(read.iter().filter(|r| r.contains("/nodes")).count(), 1, "{read:?}");
}

/// Every namespace is explained a page of TrainJobs at a time, in the apiserver's order
/// (namespace `team-a` before `team`, as `-` comes before `/`), each page read with its
/// own JobSets (from a list of the same order read alongside, whose pages fall
/// elsewhere: 30 JobSets no TrainJob owns, in `team-b`, sit between), its pods (selected
/// by its names) and its Nodes before the next page is read: two pages of 500 and 20,
/// each TrainJob explained from its own objects.
#[tokio::test]
async fn every_namespace_is_explained_a_page_at_a_time_each_page_with_its_own_objects() {
    let sim = cluster().await;
    for namespace in ["team", "team-a"] {
        sim.apply(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        )
        .unwrap();
        for i in 0..260 {
            sim.apply(json!({
                "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": format!("{namespace}-{i:03}"), "namespace": namespace},
                "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
            }))
            .unwrap();
        }
    }
    sim.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}}))
        .unwrap();
    for i in 0..30 {
        sim.apply(json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": format!("orphan-{i}"), "namespace": "team-b"},
            "spec": {"suspend": true}
        }))
        .unwrap();
    }
    sim.settle();
    let cluster = connect(&sim, "admin").await;
    let everywhere = Explain { scope: Scope::Everywhere, ..named("") };
    sim.clear_requests();
    let mut pages = Vec::new();
    explain_pages(&cluster, &cx(), everywhere, |page| {
        pages.push(page);
        Ok(())
    })
    .await
    .unwrap();
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, [500, 20]);
    let all: Vec<_> = pages.concat();
    assert!(all.iter().all(|o| o.state == ObjectState::Running), "each joined its own pod");
    let order: Vec<String> =
        all.iter().map(|o| format!("{}/{}", o.object.namespace, o.object.name)).collect();
    assert_eq!(
        (order[0].as_str(), order[259].as_str()),
        ("team-a/team-a-000", "team-a/team-a-259")
    );
    assert_eq!((order[260].as_str(), order[519].as_str()), ("team/team-000", "team/team-259"));

    let lists = |plural: &str| {
        let of_kind = sim.requests().into_iter().filter(|r| r.resource == plural);
        of_kind.map(|r| r.verb).collect::<Vec<_>>()
    };
    for plural in ["trainjobs", "jobsets", "pods", "nodes"] {
        assert_eq!(lists(plural), ["list", "list"], "{plural}: a list per page");
    }
    let by_names = sim.requests().into_iter().filter(|r| r.resource == "pods");
    assert!(by_names.into_iter().all(|r| r.query.contains("jobset-name+in+")), "pods by name");
}

/// The requests `explain` sends for `request`, but the access reviews, as
/// `METHOD path?query`.
async fn explained(
    sim: &Sim,
    cluster: &dispatch_kf_client::Cluster,
    request: Explain<'_>,
) -> Vec<String> {
    sim.clear_requests();
    explain(cluster, &cx(), request).await.unwrap();
    sim.requests()
        .iter()
        .filter(|r| !r.path.contains("selfsubjectaccessreviews"))
        .map(|r| {
            let query =
                [("%3D", "="), ("%2F", "/"), ("+", " "), ("%28", "("), ("%29", ")"), ("%2C", ",")]
                    .iter()
                    .fold(r.query.clone(), |q, (from, to)| q.replace(from, to));
            format!("{} {}?{query}", r.method, r.path)
        })
        .collect()
}

/// A TrainJob with Kueue's queue-name label is read in Kueue mode where Kueue is
/// served: its Workload is read, and Kueue's suspension is not someone else's hold.
#[tokio::test]
async fn a_queued_train_job_is_read_with_its_workload_where_kueue_is_served() {
    let sim = cluster().await;
    sim.install_kueue_in(32, NS).unwrap();
    by_hand(&sim, "queued", json!({"kueue.x-k8s.io/queue-name": "team-a"}));
    let cluster = connect(&sim, "admin").await;
    sim.clear_requests();
    let auto = explain(&cluster, &cx(), named("queued")).await.unwrap();
    assert!(sim.requests().iter().any(|r| r.path.contains("/workloads")), "the Workload is read");
    assert!(!auto[0].admin_held, "{auto:?}");
    let plain =
        Explain { mode: ModeChoice::Fixed(dispatch_kf_model::Mode::Plain), ..named("queued") };
    let plain = explain(&cluster, &cx(), plain).await.unwrap();
    assert!(plain[0].admin_held, "plain mode reads Kueue's suspension as a hold: {plain:?}");
}
