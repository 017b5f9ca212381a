//! The series as Prometheus reads them: what moves them, and what only a leader serves.

use dispatch_core::{Cause, CauseKind, ObjectKind, ObjectRef, ObjectState, Provenance};
use dispatch_kf_replica::Telemetry as _;
use dispatch_kf_testkit::series_value;

use super::*;

fn obs(name: &str, state: ObjectState, kind: CauseKind) -> ObjectObs {
    ObjectObs {
        object: ObjectRef {
            backend: "kubeflow".into(),
            kind: ObjectKind::TrainJob,
            namespace: "team".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        },
        submission: 0,
        state,
        admin_held: false,
        hold_instance: None,
        cause: Cause { kind, ..Cause::none() },
        execution: None,
        foreign: true,
        seen_at: "2026-12-05T00:00:00Z".parse().unwrap(),
    }
}

fn out_of_memory() -> Report {
    Report {
        reason: "OutOfMemory",
        warning: true,
        note: String::new(),
        cause: CauseKind::OutOfMemory,
        provenance: Some(Provenance::Scheduler),
    }
}

#[test]
fn the_gauges_follow_each_train_job_and_only_a_leader_serves_them() {
    let t = Telemetry::new(true);
    t.observed("uid-a", Some(&obs("a", ObjectState::Running, CauseKind::None)));
    t.observed("uid-b", Some(&obs("b", ObjectState::Running, CauseKind::None)));
    t.observed("uid-a", Some(&obs("a", ObjectState::Ended, CauseKind::OutOfMemory)));
    t.observed("uid-a", Some(&obs("a", ObjectState::Ended, CauseKind::OutOfMemory)));
    t.set_role(Role::StandingBy);
    assert_eq!(
        series_value(&t.metrics_text(), "dispatch_trainjobs{"),
        None,
        "a standby serves none"
    );

    t.set_role(Role::Leading);
    let m = t.metrics_text();
    let running = r#"dispatch_trainjobs{namespace="team",state="running",cause="none"}"#;
    let oom = r#"dispatch_trainjobs{namespace="team",state="ended",cause="out-of-memory"}"#;
    assert_eq!((series_value(&m, running), series_value(&m, oom)), (Some(1.0), Some(1.0)), "{m}");
    let a = r#"dispatch_trainjob_status{namespace="team",trainjob="a",state="ended",cause="out-of-memory"}"#;
    assert_eq!(series_value(&m, a), Some(1.0), "{m}");
    assert!(!m.contains(r#"trainjob="a",state="running""#), "the old series went: {m}");

    t.observed("uid-b", None);
    let m = t.metrics_text();
    assert_eq!(series_value(&m, running), Some(0.0), "{m}");
    assert!(!m.contains(r#"trainjob="b""#), "{m}");
    assert!(m.ends_with("# EOF\n"), "{m}");
}

#[test]
fn the_counter_counts_events_created_by_their_labels() {
    let t = Telemetry::new(false);
    let report = out_of_memory();
    t.told("team", "torch-distributed", &report);
    t.told("team", "torch-distributed", &report);
    t.failed("event");
    t.set_role(Role::StandingBy);
    let m = t.metrics_text();
    let series = r#"dispatch_trainjob_executions_ended_total{namespace="team",runtime="torch-distributed",cause="out-of-memory",provenance="scheduler"}"#;
    assert_eq!(series_value(&m, series), Some(2.0), "{m}");
    assert_eq!(series_value(&m, r#"dispatch_events_errors_total{step="event"}"#), Some(1.0), "{m}");
    assert_eq!(series_value(&m, "dispatch_events_leading"), Some(0.0), "{m}");
    assert!(!m.contains("dispatch_trainjob_status"), "per TrainJob only behind the flag: {m}");
}

/// The series names a text queries: every `dispatch_...` word.
fn queried(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("dispatch_") {
        let word: String =
            rest[at..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
        out.push(word);
        rest = &rest[at + 1..];
    }
    out
}

/// The dashboard in the repository and the alerts of docs/events.md query only series
/// the controller serves, so neither goes stale unnoticed.
#[test]
fn the_dashboard_and_the_documented_alerts_query_series_the_controller_serves() {
    let t = Telemetry::new(true);
    t.set_role(Role::Leading);
    t.observed("uid-a", Some(&obs("a", ObjectState::Ended, CauseKind::OutOfMemory)));
    let report = out_of_memory();
    t.told("team", "torch", &report);
    t.failed("event");
    t.lapsed();
    t.pending(1);
    t.holding(&[(Kind::Pod, 1)]);
    let served = t.metrics_text();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dashboard = std::fs::read_to_string(root.join("dashboards/trainjobs.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    let docs = std::fs::read_to_string(root.join("../../docs/events.md")).unwrap();
    let alerts: Vec<&str> =
        docs.split("```promql").skip(1).filter_map(|b| b.split("```").next()).collect();
    assert!(alerts.len() >= 2, "the alert examples of docs/events.md");
    let mut texts = vec![dashboard.to_string()];
    texts.extend(alerts.iter().map(|a| a.to_string()));
    for text in &texts {
        let names = queried(text);
        assert!(!names.is_empty());
        for name in names {
            assert!(served.contains(&format!("\n{name}")), "{name} is not served:\n{served}");
        }
    }
}
