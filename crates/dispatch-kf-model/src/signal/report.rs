//! [`report`]: the Event that tells a moment, from the TrainJob's observation while the
//! moment held.

use dispatch_core::{CauseKind, ObjectObs, Provenance};
use jiff::Timestamp;
use serde_json::{Value, json};

use super::moment::{Moment, Trigger};
use crate::keys;
use crate::lenient::Str;
use crate::view::{RuntimeCopy, TrainJob};

/// The longest note the apiserver takes (events.k8s.io/v1 `note`, 1 kB).
pub const NOTE_LIMIT: usize = 1024;

/// The Event's reason for each cause, in the Kubernetes style (as the Job controller's
/// `BackoffLimitExceeded`). `None`: the trigger's own word, `Failed` for an end and
/// `Evicted` for an eviction, is said instead (a cause the adapter cannot map).
const REASONS: [(CauseKind, Option<&str>); 14] = [
    (CauseKind::None, Some("Completed")),
    (CauseKind::Preempted, Some("Preempted")),
    (CauseKind::NodeLost, Some("NodeLost")),
    (CauseKind::OutOfMemory, Some("OutOfMemory")),
    (CauseKind::TimeLimit, Some("TimeLimit")),
    (CauseKind::NonZeroExit, Some("NonZeroExit")),
    (CauseKind::LaunchFailed, Some("LaunchFailed")),
    (CauseKind::NoCapacity, Some("NoCapacity")),
    (CauseKind::Held, Some("Held")),
    (CauseKind::Released, Some("Released")),
    (CauseKind::Requeued, Some("Requeued")),
    (CauseKind::Cancelled, Some("Cancelled")),
    (CauseKind::Duplicate, Some("Duplicate")),
    (CauseKind::Unknown, None),
];

/// The Event reason of a cause at a trigger.
pub fn reason(trigger: Trigger, kind: CauseKind) -> &'static str {
    let listed = REASONS.iter().find(|(k, _)| *k == kind).and_then(|(_, reason)| *reason);
    listed.unwrap_or(match trigger {
        Trigger::Ended => "Failed",
        Trigger::Evicted => "Evicted",
    })
}

/// The Event of one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The Event's `reason`: [`reason`] of the cause.
    pub reason: &'static str,
    /// `Warning`, or `Normal` for a success.
    pub warning: bool,
    /// The Event's `note`: the execution, then the cause's detail as `explain` words
    /// it, at most [`NOTE_LIMIT`] bytes.
    pub note: String,
    /// The cause, for the counter's label.
    pub cause: CauseKind,
    /// Who said so, for the counter's label.
    pub provenance: Option<Provenance>,
}

impl Report {
    /// The events.k8s.io/v1 Event that tells `moment`: named by it, regarding its
    /// TrainJob, created by `instance` (the replica's identity, at most 128 characters
    /// kept) at `now`.
    pub fn event(&self, moment: &Moment, instance: &str, now: Timestamp) -> Value {
        let instance: String = instance.chars().take(128).collect();
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": moment.event_name(), "namespace": moment.namespace},
            "regarding": {
                "apiVersion": keys::TRAINER_API_VERSION,
                "kind": keys::KIND_TRAIN_JOB,
                "namespace": moment.namespace,
                "name": moment.name,
                "uid": moment.uid,
            },
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            "reportingController": keys::EVENTS_CONTROLLER_NAME,
            "reportingInstance": instance,
            "action": match moment.trigger {
                Trigger::Ended => "Ended",
                Trigger::Evicted => "Evicted",
            },
            "reason": self.reason,
            "type": if self.warning { "Warning" } else { "Normal" },
            "note": self.note,
        })
    }
}

/// The Event that tells `moment`, from `obs`, the TrainJob's observation while the
/// moment held. `None` for an eviction an actor made (a hold, a deactivation): a
/// decision someone took, not a stop to explain.
pub fn report(moment: &Moment, obs: &ObjectObs) -> Option<Report> {
    let cause = &obs.cause;
    let by_actor = cause.provenance == Some(Provenance::Actor)
        || matches!(cause.kind, CauseKind::Held | CauseKind::Released | CauseKind::Cancelled);
    if moment.trigger == Trigger::Evicted && by_actor {
        return None;
    }
    let detail = if cause.detail.is_empty() { cause.kind.name() } else { &cause.detail };
    let note = match &obs.execution {
        Some(e) => format!("execution {}+{}: {detail}", e.admission, e.restart_attempt),
        None => detail.to_owned(),
    };
    Some(Report {
        reason: reason(moment.trigger, cause.kind),
        warning: !(moment.trigger == Trigger::Ended && cause.kind == CauseKind::None),
        note: shortened(note),
        cause: cause.kind,
        provenance: cause.provenance,
    })
}

/// The runtime a TrainJob runs on, as the counter labels it: for a runtime copy
/// dispatch made (a TrainingRuntime of `copies` that the TrainJob names and that carries
/// `d/runtime-source`), the name of the runtime it was copied from, so that dispatch's
/// jobs, each on a copy of its own, count under the runtime they chose; otherwise the
/// name the TrainJob's `runtimeRef` gives; empty when it names none.
pub fn runtime_label<S: Str>(tj: &TrainJob<S>, copies: &[RuntimeCopy<S>]) -> String {
    let Some(named) = tj.runtime_ref.as_ref().and_then(|r| r.name.get()) else {
        return String::new();
    };
    let namespaced =
        tj.runtime_ref.as_ref().and_then(|r| r.kind.get()) == Some(keys::KIND_TRAINING_RUNTIME);
    let source = copies
        .iter()
        .filter(|c| {
            namespaced && c.meta.name() == named && c.meta.namespace() == tj.meta.namespace()
        })
        .find_map(|c| c.meta.annotation(keys::ANN_RUNTIME_SOURCE))
        .and_then(|source| source.split_once('/'))
        .map(|(_, name)| name);
    source.unwrap_or(named).to_owned()
}

/// `note` cut to [`NOTE_LIMIT`] bytes at a character, ending with `...` when cut.
fn shortened(mut note: String) -> String {
    if note.len() <= NOTE_LIMIT {
        return note;
    }
    let mut end = NOTE_LIMIT - 3;
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    note.truncate(end);
    note.push_str("...");
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_has_a_reason_in_the_kubernetes_style() {
        for kind in CauseKind::ALL {
            assert_eq!(REASONS.iter().filter(|(k, _)| *k == kind).count(), 1, "{kind:?}");
            for trigger in [Trigger::Ended, Trigger::Evicted] {
                let reason = reason(trigger, kind);
                assert!(reason.starts_with(|c: char| c.is_ascii_uppercase()), "{reason}");
                assert!(reason.chars().all(|c| c.is_ascii_alphanumeric()), "{reason}");
            }
        }
        assert_eq!(reason(Trigger::Ended, CauseKind::Unknown), "Failed");
        assert_eq!(reason(Trigger::Evicted, CauseKind::Unknown), "Evicted");
    }

    #[test]
    fn an_event_is_named_by_its_moment_and_regards_its_train_job() {
        let moment = Moment {
            namespace: "team".into(),
            name: "train-1".into(),
            uid: "90a31ecf-b4aa".into(),
            trigger: Trigger::Ended,
            at: Some("2026-12-03T17:37:54Z".parse().unwrap()),
        };
        let report = Report {
            reason: "OutOfMemory",
            warning: true,
            note: "execution 1+0: pod p: node exited 137: OOMKilled".into(),
            cause: CauseKind::OutOfMemory,
            provenance: Some(Provenance::Scheduler),
        };
        let now: Timestamp = "2026-12-03T17:37:55.5Z".parse().unwrap();
        let event = report.event(&moment, &"r".repeat(200), now);
        assert_eq!(event["metadata"]["name"], "train-1.1ecfb4aa.ended.1796319474");
        assert_eq!(event["regarding"]["uid"], "90a31ecf-b4aa");
        assert_eq!(event["regarding"]["apiVersion"], "trainer.kubeflow.org/v1alpha1");
        assert_eq!(event["eventTime"], "2026-12-03T17:37:55.500000Z");
        assert_eq!(event["reportingInstance"].as_str().unwrap().len(), 128);
        assert_eq!((&event["action"], &event["type"]), (&json!("Ended"), &json!("Warning")));
    }

    fn view(object: serde_json::Value) -> crate::view::View {
        crate::internal::answer::read_object(object.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_runtime_copy_counts_under_the_runtime_it_was_copied_from() {
        let tj = |kind: &str, name: &str| match view(json!({
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"namespace": "team", "name": "dj-x-s1"},
            "spec": {"runtimeRef": {"kind": kind, "name": name}},
        })) {
            crate::view::View::TrainJob(tj) => tj,
            other => panic!("{other:?}"),
        };
        let copy = match view(json!({
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
            "metadata": {"namespace": "team", "name": "dj-x-s1",
                         "annotations": {keys::ANN_RUNTIME_SOURCE: "ClusterTrainingRuntime/torch-distributed"}},
        })) {
            crate::view::View::RuntimeCopy(c) => c,
            other => panic!("{other:?}"),
        };
        let copies = [copy];
        assert_eq!(runtime_label(&tj("TrainingRuntime", "dj-x-s1"), &copies), "torch-distributed");
        assert_eq!(runtime_label(&tj("TrainingRuntime", "mine"), &copies), "mine");
        assert_eq!(runtime_label(&tj("ClusterTrainingRuntime", "dj-x-s1"), &copies), "dj-x-s1");
        assert_eq!(runtime_label(&tj("TrainingRuntime", "dj-x-s1"), &[]), "dj-x-s1");
    }

    #[test]
    fn a_note_past_the_limit_is_cut_at_a_character() {
        let note = shortened("é".repeat(NOTE_LIMIT));
        assert!(note.len() <= NOTE_LIMIT && note.ends_with("..."), "{}", note.len());
        assert_eq!(shortened("short".into()), "short");
    }
}
