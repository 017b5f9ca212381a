//! `dispatch-kf explain` on `sim serve`: a TrainJob made with kubectl is explained,
//! flagged foreign; without a name every TrainJob of the namespace is, and with `-A`
//! every namespace's; a missing name is not found; the mode is each TrainJob's own.
//! docs/cli.md#explain-any-trainjob names these tests.

mod common;

use dispatch_core::{ObjectKind, ObjectObs, ObjectState};

const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";

/// A TrainJob as a Kubeflow user makes one by hand, in `namespace`, with `labels`.
fn by_hand(name: &str, namespace: &str, labels: serde_json::Value) -> String {
    serde_json::json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}}})
    .to_string()
}

/// `explain ARGS` with only the kubeconfig: what it printed and how it ended.
fn run(served: &common::Served, args: &[&str]) -> std::process::Output {
    served.command_with_kubeconfig_only("explain").args(args).output().unwrap()
}

/// `explain ARGS -o json` with only the kubeconfig: the observations.
fn explain(served: &common::Served, args: &[&str]) -> Vec<ObjectObs> {
    let out = run(served, &[args, &["-o", "json"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn explain_of_a_train_job_made_with_kubectl_gives_its_observation_flagged_foreign() {
    let served = common::Served::start("explain-foreign");
    served
        .kubectl(&["apply", "-f", "-"], Some(&by_hand("by-hand", "default", serde_json::json!({}))))
        .unwrap();
    for name in ["by-hand", "trainjob/by-hand", "trainjob.trainer.kubeflow.org/by-hand"] {
        let obs = explain(&served, &[name]);
        assert_eq!(obs.len(), 1, "{obs:?}");
        let obs = &obs[0];
        assert_eq!((obs.object.kind, obs.object.name.as_str()), (ObjectKind::TrainJob, "by-hand"));
        assert_eq!(obs.object.namespace, "default");
        assert!(obs.foreign, "{obs:?}");
        assert!(obs.cause.detail.contains("name by-hand is not one dispatch makes"), "{obs:?}");
        assert_eq!(obs.state, ObjectState::Running, "the sim ran it: {obs:?}");
    }
}

#[test]
fn explain_without_a_name_lists_every_train_job_of_the_namespace_and_a_all_of_every_one() {
    let served = common::Served::start("explain-all");
    served.start_job(JOB);
    served
        .kubectl(&["apply", "-f", "-"], Some(&by_hand("by-hand", "default", serde_json::json!({}))))
        .unwrap();
    let namespace = r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}}"#;
    served.kubectl(&["apply", "-f", "-"], Some(namespace)).unwrap();
    served
        .kubectl(&["apply", "-f", "-"], Some(&by_hand("other", "team-b", serde_json::json!({}))))
        .unwrap();

    let obs = explain(&served, &[]);
    let names: Vec<(&str, bool)> =
        obs.iter().map(|o| (o.object.name.as_str(), o.foreign)).collect();
    assert_eq!(names, [("by-hand", true), ("dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1", false)]);
    assert_eq!(obs[1].state, ObjectState::Gated, "dispatch's, its gate closed: {:?}", obs[1]);

    let everywhere = explain(&served, &["-A"]);
    let names: Vec<(&str, &str)> =
        everywhere.iter().map(|o| (o.object.namespace.as_str(), o.object.name.as_str())).collect();
    assert_eq!(
        names,
        [
            ("default", "by-hand"),
            ("default", "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1"),
            ("team-b", "other")
        ]
    );
    assert_eq!(explain(&served, &["-n", "team-b"]).len(), 1);

    let table = String::from_utf8(run(&served, &["-A", "-o", "wide"]).stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("NAMESPACE  KIND "), "{table}");
    assert!(lines[3].starts_with("team-b     TrainJob  other "), "{table}");

    assert_eq!(
        String::from_utf8(run(&served, &["-o", "name"]).stdout).unwrap(),
        "trainjob.trainer.kubeflow.org/by-hand\n\
         trainjob.trainer.kubeflow.org/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1\n"
    );
}

#[test]
fn explain_of_a_missing_train_job_is_not_found_and_of_another_kind_invalid() {
    let served = common::Served::start("explain-missing");
    let out = run(&served, &["nowhere"]);
    assert_eq!(out.status.code(), Some(6), "not-found's exit code");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("dispatch-kf: not-found: get TrainJob default/nowhere"), "{stderr}");
    assert!(out.stdout.is_empty());

    let out = run(&served, &["pod/x"]);
    assert_eq!(out.status.code(), Some(3), "invalid's exit code");

    let empty = run(&served, &["-n", "empty", "-o", "wide"]);
    assert!(empty.status.success());
    assert_eq!(String::from_utf8_lossy(&empty.stderr), "No TrainJobs found in empty namespace.\n");
    assert_eq!(explain(&served, &["-n", "empty"]), []);
}

/// Kueue's webhook suspends a TrainJob with a queue-name label until its Workload is
/// admitted. Read in Kueue mode (what `auto` picks for it) that is waiting for Kueue;
/// read in plain mode it would be someone else's hold.
#[test]
fn explain_reads_a_queued_train_job_in_kueue_mode_and_plain_mode_only_when_told() {
    let served = common::Served::start_with("explain-kueue", &["--kueue"], serde_json::json!({}));
    let queued =
        by_hand("queued", "default", serde_json::json!({"kueue.x-k8s.io/queue-name": "team-a"}));
    served.kubectl(&["apply", "-f", "-"], Some(&queued)).unwrap();
    served
        .kubectl(&["apply", "-f", "-"], Some(&by_hand("plain", "default", serde_json::json!({}))))
        .unwrap();

    let obs = explain(&served, &[]);
    let by_name = |obs: &[ObjectObs], name: &str| {
        obs.iter().find(|o| o.object.name == name).cloned().unwrap()
    };
    let queued = by_name(&obs, "queued");
    assert_eq!((queued.state, queued.admin_held), (ObjectState::Pending, false), "{queued:?}");
    assert!(
        queued.cause.detail.contains("admission check dispatch-readmission Pending"),
        "{queued:?}"
    );
    assert_eq!(by_name(&obs, "plain").state, ObjectState::Running);
    let mut forced = explain(&served, &["--mode", "kueue", "queued"]);
    forced[0].seen_at = queued.seen_at;
    assert_eq!(forced, [queued]);

    let plain = explain(&served, &["--mode", "plain", "queued"]);
    assert!(plain[0].admin_held && plain[0].state == ObjectState::Held, "{plain:?}");
}

/// On a cluster without Kueue, `--mode kueue` is unsupported, and `auto` reads a
/// queue-name label in plain mode, as no Kueue admits it.
#[test]
fn explain_in_kueue_mode_without_kueue_is_unsupported() {
    let served = common::Served::start("explain-no-kueue");
    let queued =
        by_hand("queued", "default", serde_json::json!({"kueue.x-k8s.io/queue-name": "team-a"}));
    served.kubectl(&["apply", "-f", "-"], Some(&queued)).unwrap();
    let out = run(&served, &["--mode", "kueue", "queued"]);
    assert_eq!(out.status.code(), Some(4), "unsupported's exit code");
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not serve Kueue's API"));
    assert_eq!(explain(&served, &["queued"])[0].state, ObjectState::Running);
}
