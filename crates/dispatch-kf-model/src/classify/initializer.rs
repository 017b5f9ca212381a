//! Refinement R5 (`docs/classification.md#refinements-from-real-clusters`): a Trainer
//! runtime with initializers runs the `dataset-initializer` and `model-initializer`
//! replicated jobs before the trainer, and a failed download fails the JobSet before
//! any `node` pod runs. When rule 2's pod reasons find nothing among the `node`
//! containers of the current execution, these containers of the TrainJob's pods are
//! read the same way (`findings::termination`), before "no pod evidence was captured".

use crate::lenient::Str;
use dispatch_core::{CauseKind, Provenance};

use super::findings::{self, Finding};
use super::node_termination::Matches;
use crate::view::Pod;

/// The initializer containers the Trainer names after their replicated jobs.
pub(crate) const CONTAINERS: &[&str] = &["dataset-initializer", "model-initializer"];

/// The rows for an initializer's termination, in order. Exit code 0 gives no finding
/// except `OOMKilled` (R1); everything else that terminated with a reason or a non-zero
/// exit failed to prepare the launch.
pub(crate) const ROWS: &[(Matches, CauseKind, Provenance)] = &[
    (Matches::Reason(&["OOMKilled"]), CauseKind::OutOfMemory, Provenance::Scheduler),
    (Matches::OtherReasonOrNonZeroExit, CauseKind::LaunchFailed, Provenance::Application),
];

/// The findings of a pod's initializer containers, in the order of [`CONTAINERS`].
pub(crate) fn of_pod<S: Str>(pod: &Pod<S>) -> Vec<Finding<'_>> {
    let name = pod.meta.name();
    CONTAINERS
        .iter()
        .filter_map(|c| pod.container_statuses.iter().find(|s| s.name.get() == Some(c)))
        .filter_map(|c| findings::termination(name, c, ROWS))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::node_termination::classify_with;
    use CauseKind::{LaunchFailed, OutOfMemory};
    use Provenance::{Application, Scheduler};

    #[test]
    fn initializer_terminations_are_launch_failed_except_out_of_memory() {
        assert_eq!(classify_with(ROWS, Some(1), "Error", ""), Some((LaunchFailed, Application)));
        assert_eq!(classify_with(ROWS, Some(137), "OOMKilled", ""), Some((OutOfMemory, Scheduler)));
        assert_eq!(classify_with(ROWS, Some(0), "OOMKilled", ""), Some((OutOfMemory, Scheduler)));
        assert_eq!(
            classify_with(ROWS, None, "ContainerStatusUnknown", ""),
            Some((LaunchFailed, Application))
        );
        assert_eq!(classify_with(ROWS, Some(0), "Completed", ""), None);
        assert_eq!(classify_with(ROWS, None, "", ""), None);
    }
}
