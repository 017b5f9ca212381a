//! The six rules that decide an object's state and cause, in the order of the table
//! `docs/classification.md#the-rules-first-match-wins-classifyrules`. The first rule
//! that matches decides.

pub(crate) mod complete;
pub(crate) mod failed;
pub(crate) mod gated;
pub(crate) mod held;
pub(crate) mod max_execution_time;
pub(crate) mod pending_or_running;
pub(crate) mod sealed;
pub(crate) mod suspended;

use crate::lenient::Str;
use dispatch_core::{Cause, ObjectState};

use super::facts::Facts;

/// What a rule decides.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// The state.
    pub(crate) state: ObjectState,
    /// Whether someone other than dispatch holds it.
    pub(crate) admin_held: bool,
    /// The cause, its detail before foreign notes and situation.
    pub(crate) cause: Cause,
    /// Which situation the cause already reports, so the notes do not repeat it.
    pub(crate) reported: Reported,
}

/// Situations a cause can already report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reported {
    /// The Workload's `QuotaReserved=False`.
    pub(crate) quota: bool,
    /// A pod's `PodScheduled=False` reason `Unschedulable`.
    pub(crate) unschedulable: bool,
}

impl Outcome {
    /// An outcome that reports no situation itself.
    pub(crate) fn new(state: ObjectState, admin_held: bool, cause: Cause) -> Outcome {
        Outcome { state, admin_held, cause, reported: Reported::default() }
    }
}

/// Rules 1 to 6, in order, with the end record (`sealed`, rule 2b) after 2 and
/// refinement R3 (`max_execution_time`) between 4 and 5.
pub(crate) fn decide<S: Str>(f: &Facts<'_, S>) -> Outcome {
    complete::rule(f)
        .or_else(|| failed::rule(f))
        .or_else(|| sealed::rule(f))
        .or_else(|| gated::rule(f))
        .or_else(|| held::rule(f))
        .or_else(|| max_execution_time::rule(f))
        .or_else(|| suspended::rule(f))
        .unwrap_or_else(|| pending_or_running::rule(f))
}
