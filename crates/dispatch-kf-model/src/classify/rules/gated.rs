//! Rule 3, Gated: dispatch's start gate is closed, read from the TrainJob alone
//! (`docs/classification.md#rule-3-the-gate`; the gates themselves:
//! `docs/start-gate-and-holds.md`).
//!
//! Plain mode: `spec.suspend` is true and the `d/admission` annotation is exactly `0`
//! (an absent annotation is not a closed gate: dispatch always writes it, so a suspended
//! TrainJob without it is someone else's hold, rule 5). Kueue mode: the
//! `kueue.x-k8s.io/admission-gated-by` annotation names `d/start`.

use crate::lenient::Str;
use dispatch_core::{Cause, ObjectState};

use super::Outcome;
use crate::classify::facts::Facts;
use crate::keys;
use crate::mode::Mode;
use crate::view::TrainJob;

/// Whether the start gate of `tj` is closed in `mode`.
pub(crate) fn is_closed<S: Str>(tj: &TrainJob<S>, mode: Mode) -> bool {
    match mode {
        Mode::Plain => tj.suspend.is_true() && tj.meta.annotation(keys::ANN_ADMISSION) == Some("0"),
        Mode::Kueue => tj
            .meta
            .annotation(keys::KUEUE_ADMISSION_GATED_BY)
            .is_some_and(|gates| gates.split(',').any(|g| g.trim() == keys::START_GATE)),
    }
}

/// Rule 3: gated, cause none with no provenance.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Option<Outcome> {
    is_closed(f.tj, f.options.mode).then(|| Outcome::new(ObjectState::Gated, false, Cause::none()))
}
