//! Fault injection: rules matched per request (verb, resource, name, the nth match) and
//! what each does instead of, or besides, answering normally. Refusing connections is
//! not a rule (nothing of the request is read): see `Sim::set_refusing`.

use std::time::Duration;

/// What a matched rule does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Answer this status with a `Status` body; the request is not applied.
    Status {
        /// HTTP code.
        code: u16,
        /// `Status.reason`.
        reason: String,
        /// `Status.message`.
        message: String,
    },
    /// Read the request, do not apply it, reset the connection without answering.
    ResetBeforeApply,
    /// Read the request, apply it, reset the connection without answering.
    ResetAfterApply,
    /// Apply the request, then answer only after this much wall-clock time (past a
    /// client's read timeout).
    Delay(Duration),
    /// A list answers 410 Expired, as when its continue token or resourceVersion is too old.
    ExpireList,
    /// A watch answers 200 and then an ERROR event with a 410 Expired Status.
    ExpireWatch,
    /// A watch sends its initial events and then ends the stream.
    CloseWatch,
}

/// A fault rule. Empty matchers match anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Verb to match (get, list, watch, create, update, patch, delete).
    pub verb: Option<String>,
    /// Resource to match: `plural` or `plural/subresource`.
    pub resource: Option<String>,
    /// Object name to match.
    pub name: Option<String>,
    /// Fire from the nth matching request on (1 = the first).
    pub nth: u32,
    /// How many times to fire; `None` for every match from the nth on.
    pub times: Option<u32>,
    /// What to do.
    pub action: FaultAction,
}

impl Fault {
    /// A rule firing once, on the first request with this verb on this resource.
    pub fn on(verb: &str, resource: &str, action: FaultAction) -> Self {
        Self {
            verb: Some(verb.to_string()),
            resource: Some(resource.to_string()),
            name: None,
            nth: 1,
            times: Some(1),
            action,
        }
    }

    /// Only requests on this object name.
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Fire on the nth match (1-based) instead of the first.
    pub fn nth(mut self, n: u32) -> Self {
        self.nth = n.max(1);
        self
    }

    /// Fire this many times (consecutive matches from the nth).
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    /// Fire on every match from the nth on.
    pub fn always(mut self) -> Self {
        self.times = None;
        self
    }

    /// A status answer with a `Status` body.
    pub fn status(code: u16, reason: &str, message: &str) -> FaultAction {
        FaultAction::Status { code, reason: reason.into(), message: message.into() }
    }
}

/// A rule with its counters.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub(crate) rule: Fault,
    pub(crate) seen: u32,
    pub(crate) fired: u32,
}

/// Finds the first rule that fires for a request and counts the match on every rule
/// that matches.
pub(crate) fn fire(
    slots: &mut [Slot],
    verb: &str,
    resource: &str,
    name: &str,
) -> Option<FaultAction> {
    let mut out = None;
    for s in slots.iter_mut() {
        let r = &s.rule;
        let m = r.verb.as_deref().is_none_or(|v| v == verb)
            && r.resource.as_deref().is_none_or(|x| x == resource)
            && r.name.as_deref().is_none_or(|n| n == name);
        if !m {
            continue;
        }
        s.seen += 1;
        let due = s.seen >= r.nth && r.times.is_none_or(|t| s.fired < t);
        if due && out.is_none() {
            s.fired += 1;
            out = Some(r.action.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_match_fires_once() {
        let mut slots = vec![Slot {
            rule: Fault::on("create", "trainjobs", FaultAction::ResetBeforeApply).nth(2),
            seen: 0,
            fired: 0,
        }];
        assert_eq!(fire(&mut slots, "create", "trainjobs", "a"), None);
        assert_eq!(fire(&mut slots, "get", "trainjobs", "a"), None);
        assert_eq!(
            fire(&mut slots, "create", "trainjobs", "b"),
            Some(FaultAction::ResetBeforeApply)
        );
        assert_eq!(fire(&mut slots, "create", "trainjobs", "c"), None);
    }
}
