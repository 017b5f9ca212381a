//! Pod findings and which one wins
//! (`docs/classification.md#pod-findings-classifyfindingsrs` and
//! `docs/classification.md#which-finding-wins`). A pod gives up to two findings, one
//! from its `DisruptionTarget=True` condition and one from its `node` container's
//! termination, read the same way whether the pod is live or captured.

use crate::lenient::Str;
use dispatch_core::{Cause, CauseKind, Provenance};
use jiff::Timestamp;

use super::node_termination::Matches;
use super::text::{one_line, trimmed, with_words, words};
use super::{disruption_target, node_termination};
use crate::lenient::Obj;
use crate::object::{ContainerState, ContainerStatus, Terminated};
use crate::view::{Pod, true_condition};

/// One finding of one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding<'a> {
    /// The pod's name.
    pub(crate) pod: &'a str,
    /// What it says happened.
    pub(crate) kind: CauseKind,
    /// Who said so.
    pub(crate) provenance: Provenance,
    /// Its own detail, without the pod.
    pub(crate) detail: String,
    /// The container's exit code, for a termination.
    pub(crate) exit_code: Option<i32>,
    /// When: the condition's transition or the container's finishedAt.
    pub(crate) at: Option<Timestamp>,
    /// 0 for the condition, 1 for the container: the last tie-break within one pod.
    source: u8,
}

/// On a tie in time, the kinds in this order win, then anything else.
pub(crate) const TIE_ORDER: &[CauseKind] =
    &[CauseKind::NodeLost, CauseKind::Preempted, CauseKind::OutOfMemory, CauseKind::NonZeroExit];

fn tie_rank(kind: CauseKind) -> usize {
    TIE_ORDER.iter().position(|k| *k == kind).unwrap_or(TIE_ORDER.len())
}

/// A time as the objects write it (RFC 3339); `None` when absent or unreadable.
pub(crate) fn time(text: Option<&str>) -> Option<Timestamp> {
    text?.parse().ok()
}

/// The findings of one pod (zero, one or two).
pub(crate) fn of_pod<S: Str>(pod: &Pod<S>) -> Vec<Finding<'_>> {
    let name = pod.meta.name();
    let mut out = Vec::new();
    if let Some(c) = true_condition(&pod.conditions, "DisruptionTarget") {
        out.push(Finding {
            pod: name,
            kind: disruption_target::kind_of(trimmed(c.reason.or_empty())),
            provenance: Provenance::Scheduler,
            detail: with_words("DisruptionTarget", &words(c)),
            exit_code: None,
            at: time(c.last_transition_time.get()),
            source: 0,
        });
    }
    if let Some(f) = pod.node_container().and_then(|c| termination(name, c, node_termination::ROWS))
    {
        out.push(f);
    }
    out
}

/// The finding of one container's termination by `rows`: `state.terminated`, else
/// `lastState.terminated`, dated by its `finishedAt`, with the detail
/// `<container> exited <code>: <reason>[: <message>]`. Reason and message are
/// [`trimmed`] first (R7).
pub(crate) fn termination<'a, S: Str>(
    pod: &'a str,
    container: &ContainerStatus<S>,
    rows: &[(Matches, CauseKind, Provenance)],
) -> Option<Finding<'a>> {
    let t = terminated(&container.state).or_else(|| terminated(&container.last_state))?;
    let (reason, message) = (trimmed(t.reason.or_empty()), trimmed(t.message.or_empty()));
    let (kind, provenance) = node_termination::classify_with(rows, t.exit_code.0, reason, message)?;
    let code = t.exit_code.0.map(|c| format!(" {c}")).unwrap_or_default();
    let mut detail = with_words(&format!("{} exited{code}", container.name.or_empty()), reason);
    if !message.is_empty() {
        detail.push_str(": ");
        detail.push_str(&one_line(message));
    }
    Some(Finding {
        pod,
        kind,
        provenance,
        detail,
        exit_code: t.exit_code.0.and_then(|c| i32::try_from(c).ok()),
        at: time(t.finished_at.get()),
        source: 1,
    })
}

/// A container state's `terminated`, when it has one.
fn terminated<S: Str>(state: &Obj<ContainerState<S>>) -> Option<&Terminated<S>> {
    state.get().and_then(|s| s.terminated.get()).map(|t| &**t)
}

/// Sorts findings so the winner is first: the earliest (a finding with no time after
/// every dated one), then [`TIE_ORDER`], then the pod name.
pub(crate) fn sort(findings: &mut [Finding<'_>]) {
    findings.sort_by(|a, b| {
        (a.at.is_none(), a.at, tie_rank(a.kind), a.pod, a.source, &a.detail).cmp(&(
            b.at.is_none(),
            b.at,
            tie_rank(b.kind),
            b.pod,
            b.source,
            &b.detail,
        ))
    });
}

/// The cause the winning finding gives, with every other finding listed after
/// `; other ranks: `; `None` when there is no finding.
pub(crate) fn winning_cause(mut findings: Vec<Finding<'_>>) -> Option<Cause> {
    sort(&mut findings);
    let (first, rest) = findings.split_first()?;
    let mut detail = format!("pod {}: {}", first.pod, first.detail);
    if !rest.is_empty() {
        let others: Vec<String> =
            rest.iter().map(|f| format!("{} {} ({})", f.pod, f.kind, f.detail)).collect();
        detail.push_str("; other ranks: ");
        detail.push_str(&others.join(", "));
    }
    Some(Cause {
        kind: first.kind,
        provenance: Some(first.provenance),
        actor: None,
        detail,
        exit_code: first.exit_code,
        at: first.at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding<'a>(pod: &'a str, kind: CauseKind, at: Option<&str>) -> Finding<'a> {
        Finding {
            pod,
            kind,
            provenance: Provenance::Scheduler,
            detail: "d".into(),
            exit_code: None,
            at: time(at),
            source: 0,
        }
    }

    #[test]
    fn earliest_finding_wins_then_tie_order_then_pod_name() {
        let t1 = Some("2026-11-29T10:00:00Z");
        let t2 = Some("2026-11-29T10:00:01Z");
        let mut f = vec![
            finding("b", CauseKind::NonZeroExit, t1),
            finding("a", CauseKind::NonZeroExit, t1),
            finding("c", CauseKind::OutOfMemory, t1),
            finding("d", CauseKind::NodeLost, t2),
            finding("e", CauseKind::NodeLost, None),
        ];
        sort(&mut f);
        let order: Vec<&str> = f.iter().map(|f| f.pod).collect();
        assert_eq!(order, ["c", "a", "b", "d", "e"]);
    }

    #[test]
    fn other_ranks_follow_the_winner() {
        let cause = winning_cause(vec![
            finding("b", CauseKind::NonZeroExit, Some("2026-11-29T10:00:05Z")),
            finding("a", CauseKind::Preempted, Some("2026-11-29T10:00:00Z")),
        ])
        .unwrap();
        assert_eq!(cause.kind, CauseKind::Preempted);
        assert_eq!(cause.detail, "pod a: d; other ranks: b non-zero-exit (d)");
        assert_eq!(winning_cause(Vec::new()), None);
    }
}
