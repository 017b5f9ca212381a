//! The finding of the `node` container's termination (seeds/classification.txt "The node
//! container terminated"; the rows are in spec/classification.md "Pod findings"). The
//! first row that matches decides; exit code 0 gives no finding at all.

use dispatch_core::{CauseKind, Provenance};

use crate::keys;

/// What a row matches of `state.terminated` (else `lastState.terminated`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Matches {
    /// The reason is one of these.
    Reason(&'static [&'static str]),
    /// Exit 125 with a message beginning `dispatch-prologue:` ([`keys::PROLOGUE_NAME`]
    /// and a colon): dispatch's prologue.
    Prologue,
    /// The exit code is one of these.
    Exit(&'static [i64]),
    /// Anything else that exited non-zero.
    OtherNonZeroExit,
}

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

/// The kind and provenance of a termination, or `None` for exit 0 (and for a
/// termination with no exit code that no reason row matches).
pub(crate) fn classify(
    exit: Option<i64>,
    reason: &str,
    message: &str,
) -> Option<(CauseKind, Provenance)> {
    if exit == Some(0) {
        return None;
    }
    ROWS.iter()
        .find(|(m, _, _)| match m {
            Matches::Reason(reasons) => reasons.contains(&reason),
            Matches::Prologue => exit == Some(125) && is_prologue_message(message),
            Matches::Exit(codes) => exit.is_some_and(|e| codes.contains(&e)),
            Matches::OtherNonZeroExit => exit.is_some(),
        })
        .map(|(_, k, p)| (*k, *p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use CauseKind::{LaunchFailed, NonZeroExit, OutOfMemory, Unknown};
    use Provenance::{Application, Scheduler};

    #[test]
    fn node_container_terminations_map_to_their_rows() {
        assert_eq!(classify(Some(0), "OOMKilled", ""), None);
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
}
