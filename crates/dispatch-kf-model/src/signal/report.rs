//! [`report`]: the Event that tells a moment, from the TrainJob's observation while the
//! moment held.

use dispatch_core::{CauseKind, ObjectObs, Provenance};

use super::moment::{Moment, Trigger};

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
    fn a_note_past_the_limit_is_cut_at_a_character() {
        let note = shortened("é".repeat(NOTE_LIMIT));
        assert!(note.len() <= NOTE_LIMIT && note.ends_with("..."), "{}", note.len());
        assert_eq!(shortened("short".into()), "short");
    }
}
