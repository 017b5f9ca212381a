//! The finding of a pod's `DisruptionTarget=True` condition, by its reason (the rows are
//! in `docs/classification.md#pod-findings-classifyfindingsrs`). Provenance is always
//! the scheduler.

use dispatch_core::CauseKind;

/// DisruptionTarget reason → cause kind. Any reason not listed is [`ANYTHING_ELSE`].
pub(crate) const ROWS: &[(&str, CauseKind)] = &[
    ("PreemptionByScheduler", CauseKind::Preempted),
    // Refinement R2: Kubernetes 1.26.0's spelling of the same reason, renamed in 1.26.1
    // (kubernetes#114623, kubernetes/website#38849).
    ("PreemptionByKubeScheduler", CauseKind::Preempted),
    ("EvictionByEvictionAPI", CauseKind::Preempted),
    ("ExclusivePlacementViolation", CauseKind::Preempted),
    ("DeletionByTaintManager", CauseKind::NodeLost),
    ("DeletionByPodGC", CauseKind::NodeLost),
    ("TerminationByKubelet", CauseKind::NodeLost),
];

/// The kind of a reason the table does not list.
pub(crate) const ANYTHING_ELSE: CauseKind = CauseKind::Unknown;

/// The kind a DisruptionTarget reason gives.
pub(crate) fn kind_of(reason: &str) -> CauseKind {
    ROWS.iter().find(|(r, _)| *r == reason).map_or(ANYTHING_ELSE, |(_, k)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disruption_target_reasons_map_to_their_rows_and_anything_else_is_unknown() {
        assert_eq!(kind_of("PreemptionByScheduler"), CauseKind::Preempted);
        assert_eq!(kind_of("PreemptionByKubeScheduler"), CauseKind::Preempted);
        assert_eq!(kind_of("DeletionByPodGC"), CauseKind::NodeLost);
        assert_eq!(kind_of("SomethingNew"), CauseKind::Unknown);
        assert_eq!(kind_of(""), CauseKind::Unknown);
    }
}
