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
    /// A rank stopped by its pod's deletion ([`stopped_by_deletion`]): on equal times
    /// it comes after every other finding.
    stopped: bool,
    /// 0 for the condition, 1 for the container: the last tie-break within one pod.
    source: u8,
}

/// The exits of a process stopped by a signal its pod's deletion sends: 143 (SIGTERM),
/// 137 (SIGKILL, once the grace period has passed).
const STOP_EXITS: [i32; 2] = [143, 137];

/// Whether a finding of a pod is its rank being stopped by the pod's deletion, the
/// teardown of the execution after another rank ended it: a non-zero exit by SIGTERM or
/// SIGKILL of a pod marked for deletion. (An out-of-memory kill is told by its reason
/// and is not one.)
fn stopped_by_deletion<S: Str>(pod: &Pod<S>, finding: &Finding<'_>) -> bool {
    pod.meta.deletion_timestamp.get().is_some()
        && finding.kind == CauseKind::NonZeroExit
        && finding.exit_code.is_some_and(|code| STOP_EXITS.contains(&code))
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
            stopped: false,
            source: 0,
        });
    }
    if let Some(mut f) =
        pod.node_container().and_then(|c| termination(name, c, node_termination::ROWS))
    {
        f.stopped = stopped_by_deletion(pod, &f);
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
        stopped: false,
        source: 1,
    })
}

/// A container state's `terminated`, when it has one.
fn terminated<S: Str>(state: &Obj<ContainerState<S>>) -> Option<&Terminated<S>> {
    state.get().and_then(|s| s.terminated.get()).map(|t| &**t)
}

/// Sorts findings so the winner is first: the earliest (a finding with no time after
/// every dated one), then a rank not stopped by its pod's deletion, then
/// [`TIE_ORDER`], then the pod name.
pub(crate) fn sort(findings: &mut [Finding<'_>]) {
    findings.sort_by(|a, b| {
        (a.at.is_none(), a.at, a.stopped, tie_rank(a.kind), a.pod, a.source, &a.detail).cmp(&(
            b.at.is_none(),
            b.at,
            b.stopped,
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
            stopped: false,
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

    /// A prologue's exit 125 and, in the same second, another rank's SIGTERM exit as the
    /// teardown deletes its pod: the launch failure is the cause.
    #[test]
    fn a_rank_stopped_by_its_pods_deletion_comes_after_the_rank_that_ended_the_execution() {
        let pod = |name: &str, code: i32, deleted: bool| {
            let mut meta = serde_json::json!({"name": name, "namespace": "team"});
            if deleted {
                meta["deletionTimestamp"] = serde_json::json!("2026-11-29T10:00:30Z");
            }
            let object = serde_json::json!({
                "apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "status": {"phase": "Failed", "containerStatuses": [{"name": "node", "state": {"terminated": {
                    "exitCode": code, "reason": "Error", "finishedAt": "2026-11-29T10:00:00Z",
                    "message": if code == 125 { "dispatch-prologue: no working directory" } else { "" }}}}]},
            });
            match crate::internal::answer::read_object(object.to_string().as_bytes()).unwrap() {
                crate::view::View::Pod(p) => p,
                other => panic!("{other:?}"),
            }
        };
        let (launch, stopped) = (pod("b-launch", 125, false), pod("a-stopped", 143, true));
        let found = [&launch, &stopped].into_iter().flat_map(of_pod).collect();
        let cause = winning_cause(found).unwrap();
        assert_eq!(
            (cause.kind, cause.exit_code),
            (CauseKind::LaunchFailed, Some(125)),
            "{cause:?}"
        );
        // Not marked for deletion, a 143 is a rank's own exit, and the tie order holds.
        let own = pod("a-own", 143, false);
        let found = [&launch, &own].into_iter().flat_map(of_pod).collect();
        assert_eq!(winning_cause(found).unwrap().kind, CauseKind::NonZeroExit);
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
