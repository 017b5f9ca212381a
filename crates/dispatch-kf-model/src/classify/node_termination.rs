//! The finding of the `node` container's termination (the rows are in
//! `docs/classification.md#pod-findings-classifyfindingsrs`). The first row that matches
//! decides; exit code 0 gives no finding, except for a reason in
//! [`WHATEVER_THE_EXIT_CODE`] (refinement R1). The initializers' rows (refinement R5,
//! `classify::initializer`) are read by the same [`classify_with`].

use dispatch_core::{CauseKind, Provenance};

use crate::keys;
use crate::prologue::EXIT_NO_WORKDIR;

/// What a row matches of `state.terminated` (else `lastState.terminated`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Matches {
    /// The reason is one of these.
    Reason(&'static [&'static str]),
    /// Exit 125 ([`EXIT_NO_WORKDIR`]) with a message beginning `dispatch-prologue:`
    /// ([`keys::PROLOGUE_NAME`] and a colon): dispatch's prologue.
    Prologue,
    /// The exit code is one of these.
    Exit(&'static [i64]),
    /// Anything else that exited non-zero.
    OtherNonZeroExit,
    /// Anything else with a reason or a non-zero exit code.
    OtherReasonOrNonZeroExit,
}

/// Refinement R1 (`docs/classification.md#refinements-from-real-clusters`;
/// kubernetes#131530): the kernel may kill a child for memory while the container's main
/// process still exits 0, and the container is reported `OOMKilled` with exit code 0.
/// These reasons give their finding whatever the exit code; for every other reason exit
/// code 0 gives none.
pub(crate) const WHATEVER_THE_EXIT_CODE: &[&str] = &["OOMKilled"];

/// Whether a message is the prologue's: `dispatch-prologue:` and its words.
fn is_prologue_message(message: &str) -> bool {
    message.strip_prefix(keys::PROLOGUE_NAME).is_some_and(|rest| rest.starts_with(':'))
}

/// The rows, in order.
pub(crate) const ROWS: &[(Matches, CauseKind, Provenance)] = &[
    (Matches::Reason(&["OOMKilled"]), CauseKind::OutOfMemory, Provenance::Scheduler),
    (
        Matches::Reason(&["StartError", "ContainerCannotRun"]),
        CauseKind::LaunchFailed,
        Provenance::Scheduler,
    ),
    (Matches::Prologue, CauseKind::LaunchFailed, Provenance::Application),
    (Matches::Exit(&[126, 127]), CauseKind::LaunchFailed, Provenance::Application),
    (Matches::Reason(&["ContainerStatusUnknown"]), CauseKind::Unknown, Provenance::Scheduler),
    (Matches::OtherNonZeroExit, CauseKind::NonZeroExit, Provenance::Application),
];

/// The first row of `rows` (the `node` container's [`ROWS`], or the initializers') that a
/// termination matches; `None` for exit 0 unless the reason is in
/// [`WHATEVER_THE_EXIT_CODE`], and for a termination no row matches.
pub(crate) fn classify_with(
    rows: &[(Matches, CauseKind, Provenance)],
    exit: Option<i64>,
    reason: &str,
    message: &str,
) -> Option<(CauseKind, Provenance)> {
    if exit == Some(0) && !WHATEVER_THE_EXIT_CODE.contains(&reason) {
        return None;
    }
    rows.iter()
        .find(|(m, _, _)| match m {
            Matches::Reason(reasons) => reasons.contains(&reason),
            Matches::Prologue => {
                exit == Some(i64::from(EXIT_NO_WORKDIR)) && is_prologue_message(message)
            }
            Matches::Exit(codes) => exit.is_some_and(|e| codes.contains(&e)),
            Matches::OtherNonZeroExit => exit.is_some(),
            Matches::OtherReasonOrNonZeroExit => exit.is_some() || !reason.is_empty(),
        })
        .map(|(_, k, p)| (*k, *p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use CauseKind::{LaunchFailed, NonZeroExit, OutOfMemory, Unknown};
    use Provenance::{Application, Scheduler};

    /// The kind and provenance of the `node` container's termination.
    fn classify(exit: Option<i64>, reason: &str, message: &str) -> Option<(CauseKind, Provenance)> {
        classify_with(ROWS, exit, reason, message)
    }

    #[test]
    fn node_container_terminations_map_to_their_rows() {
        assert_eq!(classify(Some(0), "Completed", ""), None);
        assert_eq!(classify(Some(0), "Error", "x"), None);
        assert_eq!(classify(Some(137), "OOMKilled", ""), Some((OutOfMemory, Scheduler)));
        assert_eq!(classify(Some(128), "StartError", ""), Some((LaunchFailed, Scheduler)));
        assert_eq!(
            classify(Some(125), "Error", "dispatch-prologue: no such dir"),
            Some((LaunchFailed, Application))
        );
        assert_eq!(classify(Some(125), "Error", "other"), Some((NonZeroExit, Application)));
        assert_eq!(classify(Some(127), "Error", ""), Some((LaunchFailed, Application)));
        assert_eq!(classify(Some(137), "ContainerStatusUnknown", ""), Some((Unknown, Scheduler)));
        assert_eq!(classify(Some(1), "Error", ""), Some((NonZeroExit, Application)));
        assert_eq!(classify(None, "Error", ""), None);
    }

    /// R1: kubernetes#131530's container, `OOMKilled` with exit code 0.
    #[test]
    fn oom_killed_is_out_of_memory_whatever_the_exit_code() {
        assert_eq!(classify(Some(0), "OOMKilled", ""), Some((OutOfMemory, Scheduler)));
        assert_eq!(classify(None, "OOMKilled", ""), Some((OutOfMemory, Scheduler)));
    }
}
