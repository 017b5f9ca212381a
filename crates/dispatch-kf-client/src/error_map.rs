//! The one place where a request's outcome becomes a sentinel.
//!
//! The rows are those of `docs/errors.md#how-the-client-classifies-a-failed-request`:
//! the apiserver's answers through the dynamic client (the first matching row applies)
//! and the requests made directly (pods/log and discovery); and those of
//! `docs/errors.md#decided-before-a-request-goes-out`. Nothing else in the project
//! inspects how a request failed.

use std::time::Instant;

use dispatch_core::{CallContext, Error, Kind, Refinement};
use dispatch_kf_model::keys;

/// What kind of request it was: the mapping depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestClass {
    /// A get, list or watch.
    Read,
    /// A create, update, patch or delete.
    Write,
    /// A write made by Open, Hold or Release: these need a deadline.
    HoldWrite,
    /// A read made by Open, Hold or Release: mapped as a read, except that its deadline
    /// passing, before it is sent or while it is in flight, is `Rejected` (the call's
    /// write was never sent).
    HoldRead,
    /// A pods/log request, made directly rather than through the dynamic client.
    PodsLog,
    /// A group-version discovery request: 404 means "not served", not an error.
    Discovery,
}

impl RequestClass {
    /// Whether a request of this class changes the cluster.
    pub fn is_write(self) -> bool {
        matches!(self, RequestClass::Write | RequestClass::HoldWrite)
    }

    /// This class, as a request of a hold-family call makes it.
    pub fn in_hold_family(self) -> RequestClass {
        match self {
            RequestClass::Read => RequestClass::HoldRead,
            RequestClass::Write => RequestClass::HoldWrite,
            other => other,
        }
    }

    /// Whether a request of this class belongs to Open, Hold or Release.
    fn is_hold_family(self) -> bool {
        matches!(self, RequestClass::HoldWrite | RequestClass::HoldRead)
    }

    /// Whether requests of this class are mapped plainly, by status code alone.
    fn is_direct(self) -> bool {
        matches!(self, RequestClass::PodsLog | RequestClass::Discovery)
    }
}

/// What happened to a request that did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The apiserver's admission refused the request, before anything was stored.
    Refused(Admission),
    /// The apiserver answered with an error status.
    Answered {
        /// The HTTP status code.
        code: u16,
        /// The `Status` reason (`NotFound`, `AlreadyExists`, `Conflict`, `Expired`, ...),
        /// empty when the body was not a `Status`.
        reason: String,
    },
    /// The token source failed or returned an empty token: nothing was sent.
    TokenFailed,
    /// Provably not sent: the connection could not be made (dial, DNS, TLS), or the
    /// call's deadline passed before the request went out.
    NotSent,
    /// Sent, and no answer came: a timeout, a reset, an incomplete message.
    SentNoAnswer,
    /// Anything else: it may have been sent.
    MaybeSent,
}

/// How admission refused a request, read from the apiserver's answer (the words
/// `k8s.io/apiserver`'s webhook admission builds, `pkg/admission/plugin/webhook`).
/// Admission runs before anything is stored, so either way nothing was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The apiserver could not call a webhook whose failure policy is `Fail` (its server
    /// down, restarting or unreachable): a 500, `failed calling webhook "<name>"`.
    WebhookUnreachable,
    /// A webhook answered and denied the request: `admission webhook "<name>" denied
    /// the request: <its words>`, with the code the webhook chose (403 by default).
    Denied {
        /// The webhook's name, as registered.
        webhook: String,
        /// Its words.
        message: String,
    },
}

impl Admission {
    /// How admission refused a request answered `code` with `message`, if it did.
    pub fn read(code: u16, message: &str) -> Option<Admission> {
        const DENIED: &str = " denied the request";
        if code == 500 && message.contains("failed calling webhook \"") {
            return Some(Admission::WebhookUnreachable);
        }
        let rest = &message[message.find("admission webhook \"")? + "admission webhook \"".len()..];
        let (webhook, rest) = rest.split_once('"')?;
        let words = rest.strip_prefix(DENIED)?;
        let words = words.strip_prefix(':').unwrap_or(words).trim();
        Some(Admission::Denied { webhook: webhook.to_owned(), message: words.to_owned() })
    }
}

/// A webhook's denial that passes on its own: the same request succeeds a moment
/// later with nobody changing anything, because what the webhook read lags.
/// `docs/errors.md#webhook-denials` lists these, and the others.
struct PassingDenial {
    /// Whether the webhook's words are this denial's.
    tells: fn(&str) -> bool,
    /// The requests for which it passes: the same words can mean something lasting
    /// for another (a Hold's update of a TrainJob whose runtime copy is gone).
    passes_for: fn(RequestClass) -> bool,
    /// The refinement the answer gets, if any.
    refinement: Option<Refinement>,
}

/// The Trainer's validating webhook (`validator.trainjob.trainer.kubeflow.org`, v2.2
/// and v2.3) and Kueue's (`vtrainjob.kb.io`) read from their caches.
const PASSING_DENIALS: [PassingDenial; 2] = [
    // `plugins/jobset`: a runtimePatches change while the JobSet still counts active
    // Jobs, which it does for a while after the pods have gone. The same state as
    // pods remaining; only the hold family changes runtimePatches.
    PassingDenial {
        tells: |words| words.contains(keys::TRAINER_JOBSET_STILL_ACTIVE),
        passes_for: |_| true,
        refinement: Some(Refinement::PodsRemain),
    },
    // A TrainJob created right after its runtime copy, before the webhooks' caches
    // have the copy (seen within seconds of an apiserver or Trainer restart). On a
    // hold-family update the copy has been there all along: gone now, it stays gone.
    PassingDenial {
        tells: keys::says_runtime_not_seen,
        passes_for: |class| class == RequestClass::Write,
        refinement: None,
    },
];

/// The passing denial `outcome` is for a request of `class`, if it is one.
fn passing_denial(class: RequestClass, outcome: &Outcome) -> Option<&'static PassingDenial> {
    let Outcome::Refused(Admission::Denied { message, .. }) = outcome else { return None };
    PASSING_DENIALS.iter().find(|d| (d.tells)(message) && (d.passes_for)(class))
}

impl Outcome {
    fn code(&self) -> Option<u16> {
        match self {
            Outcome::Answered { code, .. } => Some(*code),
            _ => None,
        }
    }

    fn reason_is(&self, want: &str) -> bool {
        matches!(self, Outcome::Answered { reason, .. } if reason == want)
    }

    /// Whether the request provably never reached the apiserver.
    fn provably_not_sent(&self) -> bool {
        matches!(self, Outcome::TokenFailed | Outcome::NotSent)
    }
}

/// Which row decided a failure, where the client acts on the row and not only on its
/// sentinel: a create whose name exists, a precondition that failed, a list whose
/// resource version expired. Every other row is `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// 409 AlreadyExists: a create of a name that exists. The only answer that means
    /// "it exists".
    AlreadyExists,
    /// 409 Conflict: a write whose precondition (resource version, UID) failed.
    Conflict,
    /// 410 Gone, or the resource version expired.
    Expired,
    /// Any other row.
    Other,
}

/// One row of a mapping table: when it matches, the sentinel it gives, and which case
/// it is.
struct Row {
    /// What the row says, in the page's words.
    when: &'static str,
    matches: fn(RequestClass, &Outcome) -> bool,
    sentinel: Kind,
    case: Case,
}

/// "From the apiserver": every request through the dynamic client. First match wins.
const APISERVER: [Row; 12] = [
    Row {
        when: "the token source failed or returned an empty token",
        matches: |_, o| *o == Outcome::TokenFailed,
        sentinel: Kind::Unauthorized,
        case: Case::Other,
    },
    Row {
        when: "an admission webhook could not be called (500, failed calling webhook): nothing was stored, retry",
        matches: |_, o| *o == Outcome::Refused(Admission::WebhookUnreachable),
        sentinel: Kind::Unreachable,
        case: Case::Other,
    },
    Row {
        when: "a webhook's denial that passes on its own (what it read lags; PASSING_DENIALS): nothing was stored, retry",
        matches: |c, o| passing_denial(c, o).is_some(),
        sentinel: Kind::Unreachable,
        case: Case::Other,
    },
    Row {
        when: "any other webhook's denial: the webhook's own words say what to change",
        matches: |_, o| matches!(o, Outcome::Refused(Admission::Denied { .. })),
        sentinel: Kind::Rejected,
        case: Case::Other,
    },
    Row {
        when: "404 Not Found",
        matches: |_, o| o.code() == Some(404),
        sentinel: Kind::NotFound,
        case: Case::Other,
    },
    Row {
        when: "409 and AlreadyExists: a create of a name that exists",
        matches: |_, o| o.code() == Some(409) && o.reason_is("AlreadyExists"),
        sentinel: Kind::Rejected,
        case: Case::AlreadyExists,
    },
    Row {
        when: "409 Conflict: a write whose precondition failed",
        matches: |_, o| o.code() == Some(409),
        sentinel: Kind::Rejected,
        case: Case::Conflict,
    },
    Row {
        when: "401 Unauthorized, 403 Forbidden",
        matches: |_, o| matches!(o.code(), Some(401 | 403)),
        sentinel: Kind::Unauthorized,
        case: Case::Other,
    },
    Row {
        when: "410 Gone, or the resource version expired",
        matches: |_, o| o.code() == Some(410) || o.reason_is("Expired") || o.reason_is("Gone"),
        sentinel: Kind::Unreachable,
        case: Case::Expired,
    },
    Row {
        when: "422 Invalid, 400 Bad Request, 405, 413, 406, 415",
        matches: |_, o| matches!(o.code(), Some(422 | 400 | 405 | 413 | 406 | 415)),
        sentinel: Kind::Rejected,
        case: Case::Other,
    },
    Row {
        when: "a write with no definite answer, that may have reached the apiserver",
        matches: |c, o| c.is_write() && !o.provably_not_sent() && !is_throttled(o),
        sentinel: Kind::OutcomeUnknown,
        case: Case::Other,
    },
    Row {
        when: "a read with no definite answer, or a write that provably was not sent",
        matches: |_, _| true,
        sentinel: Kind::Unreachable,
        case: Case::Other,
    },
];

/// "Requests made directly": pods/log, and discovery (whose 404 the caller reads as
/// "not served" before it gets here).
const DIRECT: [Row; 4] = [
    Row {
        when: "404",
        matches: |_, o| o.code() == Some(404),
        sentinel: Kind::NotFound,
        case: Case::Other,
    },
    Row {
        when: "401 and 403",
        matches: |_, o| matches!(o.code(), Some(401 | 403)) || *o == Outcome::TokenFailed,
        sentinel: Kind::Unauthorized,
        case: Case::Other,
    },
    Row {
        when: "400",
        matches: |_, o| o.code() == Some(400),
        sentinel: Kind::Rejected,
        case: Case::Other,
    },
    Row {
        when: "any other status",
        matches: |_, _| true,
        sentinel: Kind::Unreachable,
        case: Case::Other,
    },
];

/// 429 Too Many Requests: the apiserver's flow control refused the request before
/// acting on it, so even a write provably did not take effect. (The page is silent;
/// see docs/errors.md.)
fn is_throttled(outcome: &Outcome) -> bool {
    outcome.code() == Some(429)
}

/// The first row of the table for `class` that `outcome` matches.
fn row(class: RequestClass, outcome: &Outcome) -> &'static Row {
    let table: &'static [Row] = if class.is_direct() { &DIRECT } else { &APISERVER };
    table
        .iter()
        .find(|row| (row.matches)(class, outcome))
        .expect("the last row of every table matches everything")
}

/// The sentinel for a request of `class` that ended in `outcome`, and the row's words.
pub fn sentinel(class: RequestClass, outcome: &Outcome) -> (Kind, &'static str) {
    let row = row(class, outcome);
    (row.sentinel, row.when)
}

/// The refinement of the sentinel, where the answer says more than its kind: a passing
/// webhook denial that means pods remain.
pub fn refinement(class: RequestClass, outcome: &Outcome) -> Option<Refinement> {
    if class.is_direct() {
        return None;
    }
    passing_denial(class, outcome).and_then(|d| d.refinement)
}

/// Which case the row that decides `outcome` is.
pub fn case(class: RequestClass, outcome: &Outcome) -> Case {
    row(class, outcome).case
}

/// The message of a call whose deadline passed before its request went out.
pub const DEADLINE_PASSED: &str = "the call's deadline passed before the request was sent";

/// The two cases decided before a request goes out, checked at `now` on the caller's
/// monotonic clock.
pub fn before_sending(class: RequestClass, cx: &CallContext, now: Instant) -> Result<(), Error> {
    let hold = class.is_hold_family();
    if hold && cx.deadline.is_none() {
        return Err(Error::invalid("a hold-family call needs a deadline: none was given"));
    }
    if cx.is_cancelled() {
        return Err(Error::unreachable("the call was cancelled before the request was sent"));
    }
    match cx.deadline {
        Some(deadline) if deadline <= now => {
            Err(Error::new(if hold { Kind::Rejected } else { Kind::Unreachable }, DEADLINE_PASSED))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use RequestClass::*;

    fn answered(code: u16, reason: &str) -> Outcome {
        Outcome::Answered { code, reason: reason.to_owned() }
    }

    fn kind(class: RequestClass, outcome: Outcome) -> Kind {
        sentinel(class, &outcome).0
    }

    #[test]
    fn token_failure_is_unauthorized_for_every_class() {
        for class in [Read, Write, HoldWrite, PodsLog, Discovery] {
            assert_eq!(kind(class, Outcome::TokenFailed), Kind::Unauthorized, "{class:?}");
        }
    }

    #[test]
    fn not_found_is_not_found() {
        assert_eq!(kind(Read, answered(404, "NotFound")), Kind::NotFound);
        assert_eq!(kind(Write, answered(404, "")), Kind::NotFound);
    }

    #[test]
    fn already_exists_and_conflict_are_rejected() {
        assert_eq!(kind(Write, answered(409, "AlreadyExists")), Kind::Rejected);
        assert_eq!(kind(HoldWrite, answered(409, "Conflict")), Kind::Rejected);
    }

    #[test]
    fn only_already_exists_is_the_exists_case() {
        assert_eq!(case(Write, &answered(409, "AlreadyExists")), Case::AlreadyExists);
        assert_eq!(case(Write, &answered(409, "Conflict")), Case::Conflict);
        assert_eq!(case(Write, &answered(409, "")), Case::Conflict);
        for other in [answered(422, "Invalid"), answered(400, "BadRequest"), answered(404, "")] {
            assert_eq!(case(Write, &other), Case::Other, "{other:?}");
        }
        assert_eq!(case(Read, &answered(410, "Gone")), Case::Expired);
        assert_eq!(case(Read, &answered(500, "Expired")), Case::Expired);
        assert_eq!(case(PodsLog, &answered(409, "AlreadyExists")), Case::Other);
    }

    #[test]
    fn unauthorized_and_forbidden_are_unauthorized() {
        assert_eq!(kind(Read, answered(401, "Unauthorized")), Kind::Unauthorized);
        assert_eq!(kind(Write, answered(403, "Forbidden")), Kind::Unauthorized);
    }

    #[test]
    fn gone_and_expired_are_unreachable_even_for_writes() {
        assert_eq!(kind(Read, answered(410, "Gone")), Kind::Unreachable);
        assert_eq!(kind(Read, answered(500, "Expired")), Kind::Unreachable);
        assert_eq!(kind(Write, answered(410, "Expired")), Kind::Unreachable);
    }

    #[test]
    fn invalid_requests_are_rejected() {
        for code in [422, 400, 405, 413, 406, 415] {
            assert_eq!(kind(Write, answered(code, "")), Kind::Rejected, "{code}");
            assert_eq!(kind(Read, answered(code, "")), Kind::Rejected, "{code}");
        }
    }

    #[test]
    fn a_write_without_a_definite_answer_is_outcome_unknown() {
        for outcome in [
            Outcome::SentNoAnswer,
            Outcome::MaybeSent,
            answered(500, "InternalError"),
            answered(503, "ServiceUnavailable"),
            answered(504, "Timeout"),
        ] {
            assert_eq!(kind(Write, outcome.clone()), Kind::OutcomeUnknown, "{outcome:?}");
            assert_eq!(kind(HoldWrite, outcome.clone()), Kind::OutcomeUnknown, "{outcome:?}");
        }
    }

    #[test]
    fn a_read_without_answer_or_a_write_not_sent_is_unreachable() {
        for outcome in [Outcome::SentNoAnswer, Outcome::MaybeSent, answered(503, "")] {
            assert_eq!(kind(Read, outcome), Kind::Unreachable);
        }
        assert_eq!(kind(Write, Outcome::NotSent), Kind::Unreachable);
        assert_eq!(kind(Write, answered(429, "TooManyRequests")), Kind::Unreachable);
    }

    const TRAINER: &str = "validator.trainjob.trainer.kubeflow.org";

    fn denied(message: &str) -> Outcome {
        let text = format!("admission webhook \"{TRAINER}\" denied the request: {message}");
        Outcome::Refused(Admission::read(403, &text).unwrap())
    }

    #[test]
    fn admission_is_read_from_the_apiservers_words() {
        let unreachable = "Internal error occurred: failed calling webhook \"validator.trainjob.trainer.kubeflow.org\": failed to call webhook: Post \"https://kubeflow-trainer-controller-manager.kubeflow-system.svc:443/validate-trainer-kubeflow-org-v1alpha1-trainjob?timeout=10s\": dial tcp 10.96.41.7:443: connect: connection refused";
        assert_eq!(Admission::read(500, unreachable), Some(Admission::WebhookUnreachable));
        let denial = format!(
            "admission webhook \"{TRAINER}\" denied the request: spec.runtimeRef: Invalid value: x"
        );
        assert_eq!(
            Admission::read(403, &denial),
            Some(Admission::Denied {
                webhook: TRAINER.into(),
                message: "spec.runtimeRef: Invalid value: x".into()
            })
        );
        let bare = "admission webhook \"w\" denied the request without explanation";
        assert_eq!(
            Admission::read(400, bare),
            Some(Admission::Denied { webhook: "w".into(), message: "without explanation".into() })
        );
        // RBAC's 403, a plain 500, and a 500 that merely quotes a webhook are not admission.
        let rbac = "trainjobs.trainer.kubeflow.org \"tj\" is forbidden: User \"u\" cannot patch resource \"trainjobs\"";
        assert_eq!(Admission::read(403, rbac), None);
        assert_eq!(Admission::read(500, "etcdserver: request timed out"), None);
        assert_eq!(Admission::read(403, "failed calling webhook \"w\": refused"), None);
    }

    /// Admission runs before anything is stored: a webhook that cannot be called is a
    /// definite "not made", for a write as for a read.
    #[test]
    fn a_webhook_that_cannot_be_called_is_unreachable_even_for_writes() {
        for class in [Read, Write, HoldWrite, HoldRead] {
            let outcome = Outcome::Refused(Admission::WebhookUnreachable);
            assert_eq!(kind(class, outcome.clone()), Kind::Unreachable, "{class:?}");
            assert_eq!(refinement(class, &outcome), None);
        }
    }

    #[test]
    fn a_denial_that_passes_on_its_own_is_unreachable_and_pods_remain_where_it_means_that() {
        let active = denied(
            "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob node is still active",
        );
        assert_eq!(kind(HoldWrite, active.clone()), Kind::Unreachable);
        assert_eq!(refinement(HoldWrite, &active), Some(Refinement::PodsRemain));
        let lagging = denied(
            "spec.runtimeRef: Invalid value: {\"name\":\"tj-rt\"}: trainingruntimes.trainer.kubeflow.org \"tj-rt\" not found: specified trainingRuntime must be created before the TrainJob is created",
        );
        assert_eq!(kind(Write, lagging.clone()), Kind::Unreachable);
        assert_eq!(refinement(Write, &lagging), None);
        let kueue = Outcome::Refused(Admission::Denied {
            webhook: "vtrainjob.kb.io".into(),
            message: "runtime 'tj-rt' not found".into(),
        });
        assert_eq!(kind(Write, kueue.clone()), Kind::Unreachable);
        // On a Hold or Release the runtime copy was there all along: gone, it stays gone.
        assert_eq!(kind(HoldWrite, lagging), Kind::Rejected);
        assert_eq!(kind(HoldWrite, kueue), Kind::Rejected);
        for d in &PASSING_DENIALS {
            assert_eq!(d.refinement.map_or(Kind::Unreachable, Refinement::kind), Kind::Unreachable);
        }
    }

    #[test]
    fn any_other_denial_is_rejected_never_unauthorized() {
        let other = denied(
            "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended before or after the update",
        );
        for class in [Write, HoldWrite] {
            assert_eq!(kind(class, other.clone()), Kind::Rejected, "{class:?}");
            assert_eq!(refinement(class, &other), None);
        }
        assert_eq!(kind(Write, answered(403, "Forbidden")), Kind::Unauthorized, "RBAC's stays");
    }

    #[test]
    fn direct_requests_map_plainly() {
        for class in [PodsLog, Discovery] {
            assert_eq!(kind(class, answered(404, "")), Kind::NotFound);
            assert_eq!(kind(class, answered(401, "")), Kind::Unauthorized);
            assert_eq!(kind(class, answered(403, "")), Kind::Unauthorized);
            assert_eq!(kind(class, answered(400, "")), Kind::Rejected);
            for other in [409, 410, 422, 500, 503] {
                assert_eq!(kind(class, answered(other, "")), Kind::Unreachable, "{other}");
            }
            assert_eq!(kind(class, Outcome::SentNoAnswer), Kind::Unreachable);
        }
    }

    #[test]
    fn an_ended_context_is_unreachable_before_sending() {
        let now = Instant::now();
        let past = CallContext::with_deadline(now - Duration::from_secs(1));
        let err = before_sending(Read, &past, now).unwrap_err();
        assert_eq!((err.kind(), err.message()), (Kind::Unreachable, DEADLINE_PASSED));
        assert!(before_sending(Write, &past, now).unwrap_err().is(Kind::Unreachable));
        let (cancelled, token) = crate::cancellable(CallContext::background());
        token.cancel();
        assert!(before_sending(Read, &cancelled, now).unwrap_err().is(Kind::Unreachable));
        assert!(before_sending(Read, &CallContext::background(), now).is_ok());
    }

    #[test]
    fn a_hold_family_call_whose_deadline_passed_is_rejected() {
        let now = Instant::now();
        let err = before_sending(HoldWrite, &CallContext::with_deadline(now), now).unwrap_err();
        assert_eq!((err.kind(), err.message()), (Kind::Rejected, DEADLINE_PASSED));
    }

    /// A hold-family call meets its deadline at a read as readily as
    /// at its write.
    #[test]
    fn a_hold_family_read_whose_deadline_passed_is_rejected() {
        let now = Instant::now();
        let err = before_sending(HoldRead, &CallContext::with_deadline(now), now).unwrap_err();
        assert_eq!((err.kind(), err.message()), (Kind::Rejected, DEADLINE_PASSED));
        let err = before_sending(HoldRead, &CallContext::background(), now).unwrap_err();
        assert!(err.is(Kind::Invalid));
        assert_eq!(kind(HoldRead, Outcome::SentNoAnswer), Kind::Unreachable);
        assert_eq!(kind(HoldRead, answered(404, "")), Kind::NotFound);
        assert_eq!(Read.in_hold_family(), HoldRead);
        assert_eq!(Write.in_hold_family(), HoldWrite);
    }

    #[test]
    fn a_cancelled_hold_family_call_is_unreachable() {
        let now = Instant::now();
        let (cx, token) =
            crate::cancellable(CallContext::with_deadline(now + Duration::from_secs(5)));
        token.cancel();
        assert!(before_sending(HoldWrite, &cx, now).unwrap_err().is(Kind::Unreachable));
    }

    #[test]
    fn a_hold_family_call_without_a_deadline_is_invalid() {
        let err = before_sending(HoldWrite, &CallContext::background(), Instant::now());
        assert!(err.unwrap_err().is(Kind::Invalid));
    }
}
