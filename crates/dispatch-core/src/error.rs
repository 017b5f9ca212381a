//! The one error type, classified by a sentinel [`Kind`].
//!
//! The sentinel decides what the supervisor records: [`Error::is_refusal`] is true for
//! the three kinds that prove nothing was left running. The cause beneath an error is
//! kept as its [`std::error::Error::source`].

use std::fmt;

use crate::ObjectRef;
use crate::named::named_enum;

/// The result of a backend call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

named_enum! {
    /// A sentinel: the class of a failure, as the supervisor sees it.
    pub enum Kind {
        /// The caller's input is wrong; nothing was done.
        Invalid = "invalid",
        /// This backend cannot do it here; nothing was done.
        Unsupported = "unsupported",
        /// The scheduler or the adapter refused; nothing is left running.
        Rejected = "rejected",
        /// No such object (for this backend, in this namespace, of this UID).
        NotFound = "not-found",
        /// Credentials or permissions.
        Unauthorized = "unauthorized",
        /// No definite answer for a read, or a write provably not sent.
        Unreachable = "unreachable",
        /// A write that may have taken effect.
        OutcomeUnknown = "outcome-unknown",
        /// A write on a backend that may not write.
        ReadOnly = "read-only",
    }
}

/// An adapter-specific sentinel that refines a [`Kind`] and still tests as it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refinement {
    /// A hold or release named an instance that is not the one in force (a `Rejected`).
    StaleHold,
    /// Open or Release while pods of the object remain (an `Unreachable`): retry later.
    PodsRemain,
}

impl Refinement {
    /// The kind this refinement tests as.
    pub fn kind(self) -> Kind {
        match self {
            Refinement::StaleHold => Kind::Rejected,
            Refinement::PodsRemain => Kind::Unreachable,
        }
    }
}

/// A classified failure: a sentinel, a message, and the cause kept as the source.
///
/// Messages are lower-case sentences without a trailing period that name the thing
/// refused. Start's late failures also carry the reference of the object they stopped.
#[derive(thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: Kind,
    refinement: Option<Refinement>,
    message: String,
    object: Option<Box<ObjectRef>>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error { kind, refinement: None, message: message.into(), object: None, source: None }
    }

    /// A refined sentinel; it tests as the refinement's kind.
    pub fn refined(refinement: Refinement, message: impl Into<String>) -> Error {
        Error { refinement: Some(refinement), ..Error::new(refinement.kind(), message) }
    }

    /// `Invalid`: the caller's input is wrong.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(Kind::Invalid, message)
    }

    /// `Unsupported`: this backend cannot do it here.
    pub fn unsupported(message: impl Into<String>) -> Error {
        Error::new(Kind::Unsupported, message)
    }

    /// `Rejected`: refused, nothing left running.
    pub fn rejected(message: impl Into<String>) -> Error {
        Error::new(Kind::Rejected, message)
    }

    /// `NotFound`: no such object.
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new(Kind::NotFound, message)
    }

    /// `Unauthorized`: credentials or permissions.
    pub fn unauthorized(message: impl Into<String>) -> Error {
        Error::new(Kind::Unauthorized, message)
    }

    /// `Unreachable`: no definite answer for a read, or a write provably not sent.
    pub fn unreachable(message: impl Into<String>) -> Error {
        Error::new(Kind::Unreachable, message)
    }

    /// `OutcomeUnknown`: a write that may have taken effect.
    pub fn outcome_unknown(message: impl Into<String>) -> Error {
        Error::new(Kind::OutcomeUnknown, message)
    }

    /// `ReadOnly`: a write on a backend that may not write.
    pub fn read_only(message: impl Into<String>) -> Error {
        Error::new(Kind::ReadOnly, message)
    }

    /// Keeps `source` as the cause beneath this error.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Error {
        self.source = Some(Box::new(source));
        self
    }

    /// Attaches the reference of the object the failed call made (Start's late failures).
    pub fn with_object(mut self, object: ObjectRef) -> Error {
        self.object = Some(Box::new(object));
        self
    }

    /// The sentinel.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The refinement, when the sentinel is an adapter-specific one.
    pub fn refinement(&self) -> Option<Refinement> {
        self.refinement
    }

    /// The message, without the sentinel.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The object the failed call made, when it made one.
    pub fn object(&self) -> Option<&ObjectRef> {
        self.object.as_deref()
    }

    /// Whether this error tests as `kind` (a refinement tests as its kind).
    pub fn is(&self, kind: Kind) -> bool {
        self.kind == kind
    }

    /// A hold or release named an instance that is not the one in force.
    pub fn is_stale_hold(&self) -> bool {
        self.refinement == Some(Refinement::StaleHold)
    }

    /// Open or Release while pods of the object remain.
    pub fn is_pods_remain(&self) -> bool {
        self.refinement == Some(Refinement::PodsRemain)
    }

    /// Invalid, Unsupported or Rejected: the supervisor records a refused attempt,
    /// because the error proves nothing was left running.
    pub fn is_refusal(&self) -> bool {
        matches!(self.kind, Kind::Invalid | Kind::Unsupported | Kind::Rejected)
    }

    /// Prefixes the message with context, keeping the sentinel and the source.
    pub fn context(mut self, context: impl fmt::Display) -> Error {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(r) = self.refinement {
            d.field("refinement", &r);
        }
        if let Some(o) = &self.object {
            d.field("object", o);
        }
        if let Some(s) = &self.source {
            d.field("source", &s.to_string());
        }
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_exactly_invalid_unsupported_rejected() {
        let refusals: Vec<Kind> =
            Kind::ALL.into_iter().filter(|k| Error::new(*k, "x").is_refusal()).collect();
        assert_eq!(refusals, [Kind::Invalid, Kind::Unsupported, Kind::Rejected]);
    }

    #[test]
    fn refinements_test_as_their_kind() {
        let stale = Error::refined(Refinement::StaleHold, "hold 3 is not in force");
        assert!(stale.is(Kind::Rejected) && stale.is_stale_hold() && !stale.is_pods_remain());
        assert!(stale.is_refusal());
        let remain = Error::refined(Refinement::PodsRemain, "pods remain");
        assert!(remain.is(Kind::Unreachable) && remain.is_pods_remain());
        assert!(!remain.is_refusal());
    }

    #[test]
    fn source_is_kept_and_context_keeps_the_kind() {
        let io = std::io::Error::other("connection reset");
        let err = Error::outcome_unknown("create trainjob").with_source(io).context("start");
        assert_eq!(err.to_string(), "start: create trainjob");
        assert!(err.is(Kind::OutcomeUnknown));
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("connection reset"));
    }
}
