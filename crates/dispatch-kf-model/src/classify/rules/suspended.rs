//! Rule 5, Suspended by someone else: an administrator's hold
//! (`docs/classification.md#rule-5-someone-elses-suspension`). Held, `adminHeld`, cause
//! held by an actor: the field manager that last set the field, from managedFields.
//!
//! Plain mode: `spec.suspend` is true or the TrainJob has `Suspended=True`. Kueue mode:
//! the Workload's `spec.active` is false, or the TrainJob is suspended while its
//! Workload is admitted and has no `Evicted=True`. A Workload Kueue deactivated for its
//! maximum execution time is not a hold: refinement R3 (`max_execution_time`) ends it
//! first.

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind, ObjectState, Provenance};

use super::Outcome;
use crate::classify::facts::Facts;
use crate::classify::findings::time;
use crate::classify::text::{with_words, words, workload_words};
use crate::mode::Mode;
use crate::object::SpecField;
use crate::view::true_condition;

/// Rule 5.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Option<Outcome> {
    let inactive = match (f.options.mode, f.workload) {
        (Mode::Kueue, Some(w)) => w.active.0 == Some(false),
        _ => false,
    };
    if inactive {
        let w = f.workload?;
        let evicted = true_condition(&w.conditions, "Evicted");
        return Some(held(
            w.meta.last_setter_of(SpecField::Active),
            evicted.map_or_else(
                || format!("Workload {} inactive", w.meta.name()),
                |c| workload_words(w.meta.name(), "inactive", c),
            ),
            evicted.and_then(|c| time(c.last_transition_time.get())),
        ));
    }
    let suspended = match f.options.mode {
        Mode::Plain => f.suspended(),
        Mode::Kueue => {
            f.suspended()
                && f.admitted()
                && f.workload.is_some_and(|w| true_condition(&w.conditions, "Evicted").is_none())
        }
    };
    if !suspended {
        return None;
    }
    let condition = true_condition(&f.tj.conditions, "Suspended");
    Some(held(
        f.tj.meta.last_setter_of(SpecField::Suspend),
        with_words("TrainJob suspended", &condition.map(words).unwrap_or_default()),
        condition.and_then(|c| time(c.last_transition_time.get())),
    ))
}

fn held(actor: Option<&str>, detail: String, at: Option<jiff::Timestamp>) -> Outcome {
    let cause = Cause {
        kind: CauseKind::Held,
        provenance: Some(Provenance::Actor),
        actor: actor.map(str::to_owned),
        detail,
        exit_code: None,
        at,
    };
    Outcome::new(ObjectState::Held, true, cause)
}
