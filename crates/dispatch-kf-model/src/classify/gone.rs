//! The observation an object ends with when it is gone (`docs/classification.md#an-object-that-is-gone`):
//! a Watch sends what each Find shows, and a TrainJob someone deleted shows nothing,
//! so the last observation a Watch sent would stay `running` for ever. A TrainJob last
//! seen alive that a later read no longer holds ended there, cancelled by whoever
//! deleted it (Stop, StopJob, or someone else: the apiserver does not say who).

use dispatch_core::{Cause, CauseKind, ObjectObs, ObjectState, Provenance};
use jiff::Timestamp;

/// The last word on `last`, an object seen alive, that a read at `now` no longer
/// holds: ended, cancelled, by an actor, on the execution it was on.
pub fn gone(last: &ObjectObs, now: Timestamp) -> ObjectObs {
    let object = &last.object;
    ObjectObs {
        state: ObjectState::Ended,
        admin_held: false,
        hold_instance: None,
        cause: Cause {
            kind: CauseKind::Cancelled,
            provenance: Some(Provenance::Actor),
            actor: None,
            detail: format!(
                "{} {} (UID {}) was deleted while {}: it no longer exists, and its execution ended with it",
                object.kind.name(),
                object.name,
                object.uid,
                last.state
            ),
            exit_code: None,
            at: Some(now),
        },
        seen_at: now,
        ..last.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::{Execution, ObjectKind, ObjectRef};

    #[test]
    fn a_running_train_job_that_is_gone_ended_cancelled_on_its_execution() {
        let at = Timestamp::from_second(1_800_000_000).unwrap();
        let last = ObjectObs {
            object: ObjectRef {
                backend: "kubeflow".into(),
                kind: ObjectKind::TrainJob,
                namespace: "training".into(),
                name: "dj-x-s1".into(),
                uid: "u1".into(),
            },
            submission: 1,
            state: ObjectState::Running,
            admin_held: false,
            hold_instance: Some(2),
            cause: Cause::none(),
            execution: Some(Execution::new(2, 1)),
            foreign: false,
            seen_at: at,
        };
        let end = gone(&last, at);
        assert_eq!((end.state, end.cause.kind), (ObjectState::Ended, CauseKind::Cancelled));
        assert_eq!(end.cause.provenance, Some(Provenance::Actor));
        assert_eq!(end.execution, last.execution, "the execution it was on");
        assert_eq!(end.hold_instance, None);
        assert_eq!(
            end.cause.detail,
            "TrainJob dj-x-s1 (UID u1) was deleted while running: it no longer exists, and its execution ended with it"
        );
    }
}
