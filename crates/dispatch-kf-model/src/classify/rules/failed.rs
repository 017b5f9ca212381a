//! Rule 2, Failed: the TrainJob has `Failed=True`; the cause depends on the condition's
//! reason (the rows are `docs/classification.md#rule-2-reasons-rulesfailedrows`). When
//! the pod reasons find nothing among the `node` containers, the initializers are read
//! before giving up (refinement R5, `classify::initializer`).

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind, ObjectState, Provenance};

use super::Outcome;
use crate::classify::facts::Facts;
use crate::classify::findings::{self, time};
use crate::classify::initializer;
use crate::classify::text::{with_words, words};
use crate::view::true_condition;

/// What a Failed reason's row says to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Row {
    /// A fixed kind and provenance, detail `TrainJob Failed: <words>`.
    Fixed(CauseKind, Option<Provenance>),
    /// The winning pod finding of the current execution.
    PodFindings,
}

/// Failed reason → row. A reason not listed is [`ANYTHING_ELSE`].
pub(crate) const ROWS: &[(&str, Row)] = &[
    ("DeadlineExceeded", Row::Fixed(CauseKind::TimeLimit, Some(Provenance::Scheduler))),
    ("FailedJobs", Row::PodFindings),
    ("ReachedMaxRestarts", Row::PodFindings),
    ("FailJobSetFailurePolicyAction", Row::PodFindings),
    (
        "TrainingRuntimeNotSupported",
        Row::Fixed(CauseKind::LaunchFailed, Some(Provenance::Scheduler)),
    ),
];

/// The row of a reason the table does not list.
pub(crate) const ANYTHING_ELSE: Row = Row::Fixed(CauseKind::Unknown, None);

/// What follows the condition's words when no pod gives a finding.
pub(crate) const NO_POD_EVIDENCE: &str = "no pod evidence was captured";

/// The row of a Failed reason.
pub(crate) fn row_of(reason: &str) -> Row {
    ROWS.iter().find(|(r, _)| *r == reason).map_or(ANYTHING_ELSE, |(_, row)| *row)
}

/// Rule 2.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Option<Outcome> {
    let c = true_condition(&f.tj.conditions, "Failed")?;
    let detail = with_words("TrainJob Failed", &words(c));
    let at = time(c.last_transition_time.get());
    let fixed = |kind, provenance, detail| Cause {
        kind,
        provenance,
        actor: None,
        detail,
        exit_code: None,
        at,
    };
    let cause = match row_of(c.reason.or_empty()) {
        Row::Fixed(kind, provenance) => fixed(kind, provenance, detail),
        Row::PodFindings => {
            let found = f.current_pods().flat_map(|p| findings::of_pod(p.pod)).collect();
            findings::winning_cause(found)
                .or_else(|| {
                    // Refinement R5: the initializers, before giving up.
                    let found = f.pods.iter().flat_map(|p| initializer::of_pod(p.pod)).collect();
                    findings::winning_cause(found)
                })
                .unwrap_or_else(|| {
                    fixed(CauseKind::Unknown, None, format!("{detail}; {NO_POD_EVIDENCE}"))
                })
        }
    };
    Some(Outcome::new(ObjectState::Ended, false, cause))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_reasons_map_to_their_rows_and_anything_else_is_unknown() {
        assert_eq!(
            row_of("DeadlineExceeded"),
            Row::Fixed(CauseKind::TimeLimit, Some(Provenance::Scheduler))
        );
        assert_eq!(row_of("ReachedMaxRestarts"), Row::PodFindings);
        assert_eq!(row_of("Whatever"), Row::Fixed(CauseKind::Unknown, None));
    }
}
