//! Rule 4, Held by dispatch: a hold instance is in force on the held object, the
//! Workload in Kueue mode and the TrainJob in plain mode
//! (`docs/classification.md#rule-4-holds`). The detail is empty apart from the notes.

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind, ObjectState, Provenance};

use super::Outcome;
use crate::classify::facts::Facts;

/// The actor of dispatch's own holds.
pub(crate) const ACTOR: &str = "dispatch";

/// Rule 4.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Option<Outcome> {
    f.hold_instance?;
    let cause = Cause {
        kind: CauseKind::Held,
        provenance: Some(Provenance::Actor),
        actor: Some(ACTOR.to_owned()),
        detail: String::new(),
        exit_code: None,
        at: None,
    };
    Some(Outcome::new(ObjectState::Held, false, cause))
}
