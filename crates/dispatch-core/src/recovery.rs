//! Recovery policies: rules written against causes.

use crate::{CauseKind, Error};

/// What the supervisor does when an object ends with a covered cause.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Start the next submission.
    Resubmit,
    /// Hold the job until a person acts.
    Hold,
    /// Fail the job with an escalation.
    Escalate,
    /// Put the object back in the scheduler's queue.
    Requeue,
    /// Restart the object in place.
    Restart,
}

/// One rule: the causes it covers, its action, and how many times it may act.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// The causes this rule covers.
    pub on: Vec<CauseKind>,
    /// What to do.
    pub action: Action,
    /// How many times it may act; 0 is unlimited only for hold and escalate.
    #[serde(default)]
    pub budget: u32,
}

/// A job's recovery policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecoveryPolicy {
    /// The rules; no cause may be covered twice.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

/// The causes an object can end with, which a policy may cover.
const ENDING_CAUSES: [CauseKind; 9] = [
    CauseKind::Preempted,
    CauseKind::NodeLost,
    CauseKind::OutOfMemory,
    CauseKind::TimeLimit,
    CauseKind::NonZeroExit,
    CauseKind::LaunchFailed,
    CauseKind::NoCapacity,
    CauseKind::Requeued,
    CauseKind::Unknown,
];

impl RecoveryPolicy {
    /// Checks the policy, reporting every problem at once as one `Invalid` error.
    pub fn validate(&self) -> Result<(), Error> {
        let mut problems = Vec::new();
        let mut seen: Vec<(CauseKind, usize)> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.on.is_empty() {
                problems.push(format!("rule {i} covers no cause"));
            }
            for &cause in &rule.on {
                if let Some((_, first)) = seen.iter().find(|(c, _)| *c == cause) {
                    problems.push(format!("cause {cause} is covered by rules {first} and {i}"));
                } else {
                    seen.push((cause, i));
                }
                match cause {
                    CauseKind::None => problems.push(format!("rule {i} covers none, which is success")),
                    CauseKind::Cancelled => {
                        problems.push(format!("rule {i} covers cancelled, which is final"))
                    }
                    CauseKind::Unknown if !matches!(rule.action, Action::Hold | Action::Escalate) => {
                        problems.push(format!(
                            "rule {i} covers unknown with {}: only hold or escalate may cover unknown",
                            action_name(rule.action)
                        ))
                    }
                    CauseKind::Held | CauseKind::Released | CauseKind::Duplicate => problems.push(
                        format!("rule {i} covers {cause}, which only an actor produces"),
                    ),
                    _ => {}
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid(format!("invalid recovery policy: {}", problems.join("; "))))
        }
    }

    /// The causes an object can end with that no rule covers.
    pub fn uncovered(&self) -> Vec<CauseKind> {
        ENDING_CAUSES.into_iter().filter(|c| !self.rules.iter().any(|r| r.on.contains(c))).collect()
    }
}

/// The action's name as JSON writes it.
pub(crate) fn action_name(action: Action) -> &'static str {
    match action {
        Action::Resubmit => "resubmit",
        Action::Hold => "hold",
        Action::Escalate => "escalate",
        Action::Requeue => "requeue",
        Action::Restart => "restart",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(on: &[CauseKind], action: Action) -> Rule {
        Rule { on: on.to_vec(), action, budget: 3 }
    }

    #[test]
    fn validate_lists_every_problem() {
        let policy = RecoveryPolicy {
            rules: vec![
                rule(&[CauseKind::Preempted, CauseKind::NodeLost], Action::Resubmit),
                rule(&[CauseKind::NodeLost, CauseKind::Unknown], Action::Resubmit),
                rule(&[], Action::Escalate),
                rule(&[CauseKind::None, CauseKind::Cancelled, CauseKind::Held], Action::Hold),
            ],
        };
        let err = policy.validate().unwrap_err();
        assert!(err.is(crate::Kind::Invalid));
        assert_eq!(
            err.message(),
            "invalid recovery policy: cause node-lost is covered by rules 0 and 1; \
             rule 1 covers unknown with resubmit: only hold or escalate may cover unknown; \
             rule 2 covers no cause; rule 3 covers none, which is success; \
             rule 3 covers cancelled, which is final; rule 3 covers held, which only an actor produces"
        );
    }

    #[test]
    fn uncovered_lists_the_ending_causes_no_rule_covers() {
        let policy = RecoveryPolicy {
            rules: vec![
                rule(&[CauseKind::Preempted, CauseKind::NodeLost], Action::Resubmit),
                rule(&[CauseKind::Unknown], Action::Hold),
            ],
        };
        assert!(policy.validate().is_ok());
        assert_eq!(
            policy.uncovered(),
            [
                CauseKind::OutOfMemory,
                CauseKind::TimeLimit,
                CauseKind::NonZeroExit,
                CauseKind::LaunchFailed,
                CauseKind::NoCapacity,
                CauseKind::Requeued
            ]
        );
    }
}
