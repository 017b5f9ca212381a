//! Rule 2b, Ended as recorded: the TrainJob carries dispatch's end record
//! (`ended::EndRecord`, written when it failed) and no `Failed=True` any more, because
//! the Trainer cleared the condition when its JobSet went
//! (`docs/classification.md#rule-2b-ended-as-recorded`). Ended, with the recorded
//! cause; its detail says the record answers, and names any pod that runs again all the
//! same (someone lifted the gate dispatch closed at the end).

use crate::lenient::Str;
use dispatch_core::{Execution, ObjectState};

use super::Outcome;
use crate::classify::facts::Facts;
use crate::classify::text::JOIN;

/// What the detail adds to the recorded one.
pub(crate) const AS_RECORDED: &str =
    "as dispatch recorded it when the execution ended (the TrainJob's Failed condition is gone)";

/// Rule 2b.
pub(crate) fn rule<S: Str>(f: &Facts<'_, S>) -> Option<Outcome> {
    let record = f.end_record.as_ref()?;
    let again = runs_again(f, record.execution);
    let mut cause = record.cause.clone();
    let mut parts = vec![std::mem::take(&mut cause.detail), AS_RECORDED.to_owned()];
    parts.extend(again);
    parts.retain(|p| !p.is_empty());
    cause.detail = parts.join(JOIN);
    Some(Outcome::new(ObjectState::Ended, false, cause))
}

/// The note naming the live pods that are not done, when there are any: they run again
/// under an identity that has ended.
fn runs_again<S: Str>(f: &Facts<'_, S>, ended: Option<Execution>) -> Option<String> {
    let live: Vec<&str> = f
        .pods
        .iter()
        .filter(|p| {
            !p.captured && !p.pod.is_terminal() && p.pod.meta.deletion_timestamp.get().is_none()
        })
        .map(|p| p.pod.meta.name())
        .collect();
    if live.is_empty() {
        return None;
    }
    let execution = ended.map_or_else(
        || "the execution that ended".to_owned(),
        |e| format!("execution {}+{}", e.admission, e.restart_attempt),
    );
    Some(format!(
        "pods run again after {execution} ended, not as a new execution: {}; the gate dispatch closed at the end was lifted by someone else; StopJob ends them",
        live.join(", ")
    ))
}
