//! Refinement R3 (`docs/classification.md#refinements-from-real-clusters`), applied
//! after rule 4 and before rule 5: Kueue ends a Workload that passes
//! `spec.maximumExecutionTimeSeconds` by deactivating it (`spec.active=false`) with
//! `Evicted=True`, reason [`REASON`]. That is the time limit, not an administrator's
//! hold: the TrainJob is ended, cause time-limit from the scheduler, detail
//! `Workload <w> Evicted: <words>`, at the condition's time.

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind, ObjectState, Provenance};

use super::Outcome;
use crate::classify::facts::Facts;
use crate::classify::findings::time;
use crate::classify::text::workload_words;
use crate::mode::Mode;
use crate::view::true_condition;

/// Kueue's `Evicted` reason for a Workload deactivated past its maximum execution time
/// (`Deactivated` + `DueTo` + `MaximumExecutionTimeExceeded`, kueue's
/// `pkg/workload/patching` `ReasonWithCause`).
pub(crate) const REASON: &str = "DeactivatedDueToMaximumExecutionTimeExceeded";

/// R3.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Option<Outcome> {
    if f.options.mode != Mode::Kueue {
        return None;
    }
    let w = f.workload.filter(|w| w.active.0 == Some(false))?;
    let c = true_condition(&w.conditions, "Evicted").filter(|c| c.reason.get() == Some(REASON))?;
    let cause = Cause {
        kind: CauseKind::TimeLimit,
        provenance: Some(Provenance::Scheduler),
        actor: None,
        detail: workload_words(w.meta.name(), "Evicted", c),
        exit_code: None,
        at: time(c.last_transition_time.get()),
    };
    Some(Outcome::new(ObjectState::Ended, false, cause))
}
