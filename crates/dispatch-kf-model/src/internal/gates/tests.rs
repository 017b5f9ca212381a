//! One test per rule of the hold family (`docs/start-gate-and-holds.md`).

use dispatch_core::Kind;
use serde_json::{Value, json};

use super::*;

/// A plain-mode TrainJob as render writes it: gated, admission 0, the runtime patch.
fn gated() -> Value {
    json!({
        "metadata": {"name": "dj-x-s1", "annotations": {keys::ANN_ADMISSION: "0"}},
        "spec": {
            "suspend": true,
            "runtimePatches": [
                {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {}},
                {"manager": keys::RUNTIME_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
                    {"name": "node", "template": {"spec": {"template": {"metadata": {
                        "labels": {}, "annotations": {keys::ANN_ADMISSION: "0"}}}}}}
                ]}}}}
            ]
        }
    })
}

fn calm() -> Situation {
    Situation::default()
}

fn patched_admission(tj: &Value) -> &str {
    tj.pointer("/spec/runtimePatches/1/trainingRuntimeSpec/template/spec/replicatedJobs/0/template/spec/template/metadata/annotations")
        .and_then(|a| a.get(keys::ANN_ADMISSION))
        .and_then(Value::as_str)
        .unwrap()
}

fn opened() -> Value {
    let mut tj = gated();
    open_plain(&mut tj, &calm()).unwrap();
    tj
}

#[test]
fn open_lifts_the_plain_gate_and_counts_the_first_admission() {
    let tj = opened();
    assert_eq!(tj["spec"]["suspend"], false);
    assert_eq!(admission(&tj), 1);
    assert_eq!(patched_admission(&tj), "1");
    assert!(
        tj.pointer("/spec/runtimePatches/0/trainingRuntimeSpec")
            .unwrap()
            .as_object()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn open_on_a_lifted_gate_writes_nothing() {
    let mut tj = opened();
    assert_eq!(open_plain(&mut tj, &calm()).unwrap(), Edit::Unchanged);
}

#[test]
fn open_on_an_ended_train_job_says_whether_it_ever_ran() {
    let ended = Situation { ended: true, ..calm() };
    let err = open_plain(&mut gated(), &ended).unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        (Kind::Rejected, "the TrainJob ended without being opened")
    );
    let err = open_plain(&mut opened(), &ended).unwrap_err();
    assert_eq!((err.kind(), err.message()), (Kind::Rejected, "the TrainJob has run and ended"));
}

#[test]
fn open_while_pods_remain_is_pods_remain_and_writes_nothing() {
    let mut tj = gated();
    let busy = Situation { pods_remaining: vec!["p-0".into()], ..calm() };
    let err = open_plain(&mut tj, &busy).unwrap_err();
    assert!(err.is_pods_remain() && err.is(Kind::Unreachable));
    assert_eq!(tj, gated());
}

#[test]
fn open_under_a_hold_counts_the_admission_but_the_hold_keeps_it_stopped() {
    let mut tj = gated();
    hold_plain(&mut tj, 1, &calm()).unwrap();
    open_plain(&mut tj, &calm()).unwrap();
    assert_eq!(admission(&tj), 1);
    assert_eq!(tj["spec"]["suspend"], true);
}

#[test]
fn hold_sets_the_instance_and_suspends() {
    let mut tj = opened();
    assert_eq!(hold_plain(&mut tj, 3, &calm()).unwrap(), Edit::Write);
    assert_eq!(hold_in_force(&tj).unwrap(), Some(3));
    assert_eq!(tj["spec"]["suspend"], true);
    assert_eq!(hold_plain(&mut tj, 3, &calm()).unwrap(), Edit::Unchanged);
    let err = hold_plain(&mut tj, 4, &calm()).unwrap_err();
    assert!(err.is_stale_hold() && err.is(Kind::Rejected), "{err:?}");
}

#[test]
fn hold_refuses_instance_zero_and_ended_objects() {
    assert!(hold_plain(&mut opened(), 0, &calm()).unwrap_err().is(Kind::Invalid));
    let ended = Situation { ended: true, ..calm() };
    assert!(hold_plain(&mut opened(), 1, &ended).unwrap_err().is(Kind::Rejected));
    assert!(release_plain(&mut opened(), 0, &calm()).unwrap_err().is(Kind::Invalid));
}

#[test]
fn release_runs_the_job_again_as_a_new_execution() {
    let mut tj = opened();
    hold_plain(&mut tj, 1, &calm()).unwrap();
    assert_eq!(release_plain(&mut tj, 1, &calm()).unwrap(), Edit::Write);
    assert_eq!(hold_in_force(&tj).unwrap(), None);
    assert_eq!(tj["spec"]["suspend"], false);
    assert_eq!(admission(&tj), 2);
    assert_eq!(patched_admission(&tj), "2");
}

#[test]
fn release_while_pods_remain_refuses_and_the_hold_stays() {
    let mut tj = opened();
    hold_plain(&mut tj, 1, &calm()).unwrap();
    let before = tj.clone();
    let busy = Situation { pods_remaining: vec!["p-0".into(), "p-1".into()], ..calm() };
    let err = release_plain(&mut tj, 1, &busy).unwrap_err();
    assert!(err.is_pods_remain(), "{err:?}");
    assert!(err.message().contains("p-0, p-1"), "{}", err.message());
    assert_eq!(tj, before);
}

#[test]
fn release_before_open_only_removes_the_hold() {
    let mut tj = gated();
    hold_plain(&mut tj, 1, &calm()).unwrap();
    release_plain(&mut tj, 1, &calm()).unwrap();
    assert_eq!(hold_in_force(&tj).unwrap(), None);
    assert_eq!(tj["spec"]["suspend"], true, "the start gate is still closed");
    assert_eq!(admission(&tj), 0);
}

#[test]
fn release_without_a_hold_writes_nothing_and_another_instance_is_stale() {
    let mut tj = opened();
    assert_eq!(release_plain(&mut tj, 1, &calm()).unwrap(), Edit::Unchanged);
    hold_plain(&mut tj, 2, &calm()).unwrap();
    assert!(release_plain(&mut tj, 1, &calm()).unwrap_err().is_stale_hold());
}

#[test]
fn a_malformed_hold_instance_is_refused_not_guessed() {
    let mut tj = opened();
    tj["metadata"]["annotations"][keys::ANN_HOLD_INSTANCE] = json!("01");
    let err = hold_plain(&mut tj, 1, &calm()).unwrap_err();
    assert!(err.is(Kind::Rejected) && err.message().contains("malformed"), "{err:?}");
}

#[test]
fn kueue_open_removes_only_dispatchs_gate() {
    let mut tj =
        json!({"metadata": {"annotations": {keys::KUEUE_ADMISSION_GATED_BY: keys::START_GATE}}});
    assert_eq!(open_kueue(&mut tj, &calm()).unwrap(), Edit::Write);
    assert!(tj["metadata"]["annotations"].get(keys::KUEUE_ADMISSION_GATED_BY).is_none());
    assert_eq!(open_kueue(&mut tj, &calm()).unwrap(), Edit::Unchanged);

    let both = format!("example.com/other,{}", keys::START_GATE);
    let mut tj = json!({"metadata": {"annotations": {keys::KUEUE_ADMISSION_GATED_BY: both}}});
    open_kueue(&mut tj, &calm()).unwrap();
    assert_eq!(tj["metadata"]["annotations"][keys::KUEUE_ADMISSION_GATED_BY], "example.com/other");
}

#[test]
fn kueue_open_on_an_ended_train_job_says_whether_it_ever_ran() {
    let ended = Situation { ended: true, ..calm() };
    let mut gated =
        json!({"metadata": {"annotations": {keys::KUEUE_ADMISSION_GATED_BY: keys::START_GATE}}});
    assert_eq!(
        open_kueue(&mut gated, &ended).unwrap_err().message(),
        "the TrainJob ended without being opened"
    );
    assert_eq!(
        open_kueue(&mut json!({}), &ended).unwrap_err().message(),
        "the TrainJob has run and ended"
    );
}

#[test]
fn kueue_holds_deactivate_the_workload_and_release_reactivates_it_once_its_pods_are_gone() {
    let mut wl = json!({"metadata": {"name": "w"}, "spec": {"active": true}});
    hold_kueue(&mut wl, 1, &calm()).unwrap();
    assert_eq!(wl["spec"]["active"], false);
    assert_eq!(hold_in_force(&wl).unwrap(), Some(1));
    assert!(release_kueue(&mut wl, 2, &calm()).unwrap_err().is_stale_hold());
    let busy = Situation { pods_remaining: vec!["p-0".into()], ..calm() };
    let held = wl.clone();
    let err = release_kueue(&mut wl, 1, &busy).unwrap_err();
    assert!(err.is_pods_remain() && err.is(Kind::Unreachable), "{err:?}");
    assert_eq!(wl, held, "nothing written while the held execution's pods remain");
    assert_eq!(release_kueue(&mut wl, 1, &calm()).unwrap(), Edit::Write);
    assert_eq!(wl["spec"]["active"], true);
    assert_eq!(hold_in_force(&wl).unwrap(), None);
    assert_eq!(wl["metadata"]["annotations"][keys::ANN_RELEASES], "1", "the Release is counted");
    assert_eq!(release_kueue(&mut wl, 1, &calm()).unwrap(), Edit::Unchanged);
    hold_kueue(&mut wl, 2, &calm()).unwrap();
    release_kueue(&mut wl, 2, &calm()).unwrap();
    assert_eq!(wl["metadata"]["annotations"][keys::ANN_RELEASES], "2");
}

/// One call of the family on an object.
type EditOf = fn(&mut Value) -> Result<Edit, Error>;

/// An object that is not one (null, a number, an array) or whose metadata,
/// annotations or spec is not an object is refused, never edited into a made-up one
/// and written.
#[test]
fn malformed_objects_are_refused_without_panicking_or_being_edited() {
    for bad in [
        json!(null),
        json!(5),
        json!([1]),
        json!({"metadata": 3, "spec": "x"}),
        json!({"metadata": {"annotations": "x"}}),
        json!({"metadata": {}, "spec": [true]}),
    ] {
        let calls: [(&str, EditOf); 6] = [
            ("open_plain", |v| open_plain(v, &calm())),
            ("open_kueue", |v| open_kueue(v, &calm())),
            ("hold_plain", |v| hold_plain(v, 1, &calm())),
            ("hold_kueue", |v| hold_kueue(v, 1, &calm())),
            ("release_plain", |v| release_plain(v, 1, &calm())),
            ("release_kueue", |v| release_kueue(v, 1, &calm())),
        ];
        for (name, call) in calls {
            let mut edited = bad.clone();
            let answer = call(&mut edited);
            let err = answer.expect_err(&format!("{name} on {bad}"));
            assert!(
                err.is(Kind::Rejected) && err.message().contains("malformed"),
                "{name}: {err:?}"
            );
            assert_eq!(edited, bad, "{name} left {bad} as it was");
        }
    }
}

fn end_record() -> EndRecord {
    EndRecord {
        execution: Some(dispatch_core::Execution::new(1, 0)),
        cause: dispatch_core::Cause {
            kind: dispatch_core::CauseKind::NonZeroExit,
            provenance: Some(dispatch_core::Provenance::Application),
            actor: None,
            detail: "pod dj-x-s1-node-0-0-abcde: node exited 1: Error".into(),
            exit_code: Some(1),
            at: None,
        },
    }
}

#[test]
fn seal_closes_the_gate_of_a_failed_job_and_records_how_it_ended() {
    let mut tj = opened();
    assert_eq!(seal(&mut tj, &end_record()).unwrap(), Edit::Write);
    assert_eq!(tj["spec"]["suspend"], true);
    let text = annotation(&tj, keys::ANN_ENDED).unwrap();
    assert_eq!(EndRecord::parse(text), Some(end_record()));
    assert_eq!(admission(&tj), 1, "the admission count stays that of the ended execution");
}

#[test]
fn a_sealed_job_is_sealed_once_and_the_first_record_stands() {
    let mut tj = opened();
    seal(&mut tj, &end_record()).unwrap();
    let before = tj.clone();
    let mut other = end_record();
    other.cause.kind = dispatch_core::CauseKind::Unknown;
    assert_eq!(seal(&mut tj, &other).unwrap(), Edit::Unchanged);
    assert_eq!(tj, before);
}

#[test]
fn release_never_lifts_the_gate_of_a_sealed_job() {
    let mut tj = opened();
    hold_plain(&mut tj, 1, &calm()).unwrap();
    seal(&mut tj, &end_record()).unwrap();
    let before = tj.clone();
    let err = release_plain(&mut tj, 1, &calm()).unwrap_err();
    assert!(err.is(Kind::Rejected) && err.message().contains("has run and ended"), "{err}");
    assert_eq!(tj, before, "nothing written");
}
