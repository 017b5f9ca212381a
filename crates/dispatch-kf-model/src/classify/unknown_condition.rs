//! A TrainJob condition the adapter does not know
//! (`docs/classification.md#unknown-trainjob-conditions-classifyunknown_conditionrs`):
//! when the rules leave the cause at none and the TrainJob has a True condition other
//! than these, the cause becomes unknown.

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind};

use super::text::{JOIN, with_words, words};
use crate::view::TrainJob;

/// The TrainJob condition types the rules read.
pub(crate) const KNOWN: &[&str] = &["Suspended", "Complete", "Failed"];

/// Turns a cause of none into unknown when the TrainJob has True conditions the adapter
/// does not know: detail `TrainJob <type>: <words>`, one per condition.
pub(crate) fn apply<S: Str>(tj: &TrainJob<S>, cause: &mut Cause) {
    if cause.kind != CauseKind::None {
        return;
    }
    let unknown: Vec<String> = tj
        .conditions
        .iter()
        .filter(|c| c.is_true() && !KNOWN.contains(&c.type_.or_empty()))
        .map(|c| with_words(&format!("TrainJob {}", c.type_.or_empty()), &words(c)))
        .collect();
    if !unknown.is_empty() {
        *cause = Cause { kind: CauseKind::Unknown, detail: unknown.join(JOIN), ..Cause::none() };
    }
}
