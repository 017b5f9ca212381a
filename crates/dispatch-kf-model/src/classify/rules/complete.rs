//! Rule 1, Complete: the TrainJob has `Complete=True`
//! (`docs/classification.md#the-rules-first-match-wins-classifyrules`, rule 1). Ended,
//! cause none from the scheduler.

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind, ObjectState, Provenance};

use super::Outcome;
use crate::classify::facts::Facts;
use crate::classify::findings::time;
use crate::classify::text::{with_words, words};
use crate::view::true_condition;

/// Rule 1.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Option<Outcome> {
    let c = true_condition(&f.tj.conditions, "Complete")?;
    let cause = Cause {
        kind: CauseKind::None,
        provenance: Some(Provenance::Scheduler),
        actor: None,
        detail: with_words("TrainJob Complete", &words(c)),
        exit_code: None,
        at: time(c.last_transition_time.get()),
    };
    Some(Outcome::new(ObjectState::Ended, false, cause))
}
