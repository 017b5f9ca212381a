//! The end record: once a TrainJob of dispatch's has failed, the Backend closes its start
//! gate again and writes on it which execution ended and why
//! (`docs/execution-identity.md#an-ended-execution-stays-ended`).
//!
//! Why it is needed: the Trainer (v2.2, v2.3) clears a TrainJob's `Failed` condition at
//! the start of every reconcile and applies the JobSet again, so a failed TrainJob whose
//! JobSet goes (a JobSet TTL, a `kubectl delete jobset`, anything) gets a new JobSet and
//! its ranks run again under the identity of the execution that ended. With
//! `spec.suspend` true the new JobSet is made suspended and runs nothing, and the record
//! keeps the answer once the failed JobSet and its pods are gone. A `Complete` TrainJob
//! is not run again (the Trainer keeps that condition) and is not sealed.
//!
//! This module says what the record holds and which TrainJobs need one; the edit that
//! writes it is [`crate::internal::gates::seal`], the rule that reads it `classify::rules::sealed`.

use dispatch_core::{Cause, Execution, ObjectKind, ObjectObs, ObjectRef, ObjectState};
use serde::{Deserialize, Serialize};

use crate::Snapshot;
use crate::keys;
use crate::view::true_condition;

/// What the annotation [`keys::ANN_ENDED`] holds, as JSON: the execution that ended
/// and its cause, as dispatch reported them when it first saw the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndRecord {
    /// The execution that ended, when the pods said which.
    pub execution: Option<Execution>,
    /// How it ended.
    pub cause: Cause,
}

impl EndRecord {
    /// The record of an observation that ended.
    pub fn of(obs: &ObjectObs) -> EndRecord {
        EndRecord { execution: obs.execution, cause: obs.cause.clone() }
    }

    /// The annotation's value.
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).expect("an EndRecord is plain data")
    }

    /// The record an annotation's value holds; `None` when it is not one (someone else
    /// wrote it, or a later version of dispatch did): the TrainJob then reads as unsealed.
    pub fn parse(text: &str) -> Option<EndRecord> {
        serde_json::from_str(text).ok()
    }
}

/// The TrainJobs of `snapshot` that must be sealed, each with its record: those whose
/// observation in `observations` is ended, that carry `Failed=True` (the condition the
/// Trainer clears), and that carry no record yet. Sorted as `observations` is.
pub fn to_seal(snapshot: &Snapshot, observations: &[ObjectObs]) -> Vec<(ObjectRef, EndRecord)> {
    observations
        .iter()
        .filter(|o| o.object.kind == ObjectKind::TrainJob && o.state == ObjectState::Ended)
        .filter(|o| {
            snapshot.train_jobs.iter().any(|tj| {
                tj.meta.uid() == o.object.uid
                    && tj.meta.annotation(keys::ANN_ENDED).is_none()
                    && true_condition(&tj.conditions, "Failed").is_some()
            })
        })
        .map(|o| (o.object.clone(), EndRecord::of(o)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::{CauseKind, Provenance};

    fn record() -> EndRecord {
        EndRecord {
            execution: Some(Execution::new(1, 2)),
            cause: Cause {
                kind: CauseKind::NonZeroExit,
                provenance: Some(Provenance::Application),
                actor: None,
                detail: "pod p: node exited 1: Error".into(),
                exit_code: Some(1),
                at: Some("2026-12-04T10:00:00Z".parse().unwrap()),
            },
        }
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let r = record();
        assert_eq!(EndRecord::parse(&r.to_annotation()), Some(r));
    }

    #[test]
    fn what_is_not_a_record_reads_as_none() {
        for text in ["", "yes", "{}", r#"{"cause":{"kind":"no-such-kind"}}"#] {
            assert_eq!(EndRecord::parse(text), None, "{text}");
        }
    }
}
