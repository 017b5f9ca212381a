//! How a `kube::Error` tells what happened to a request: answered, not sent, sent
//! without an answer, or maybe sent. `spec/client.md` lists the facts of kube 5 this
//! relies on.

use std::error::Error as StdError;
use std::io;

use crate::error_map::Outcome;

/// What happened to a request that failed with `err`.
pub fn outcome_of(err: &kube::Error) -> Outcome {
    match err {
        // Classify by code first: a non-JSON body (an unserved group-version answers
        // plain text) arrives with a made-up reason.
        kube::Error::Api(status) => {
            Outcome::Answered { code: status.code, reason: status.reason.clone() }
        }
        kube::Error::Auth(_) => Outcome::TokenFailed,
        other => outcome_of_chain(other),
    }
}

/// Walks the source chain for the first cause that decides.
fn outcome_of_chain(err: &(dyn StdError + 'static)) -> Outcome {
    let mut next: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(cause) = next {
        if let Some(decided) = decide(cause) {
            return decided;
        }
        next = cause.source();
    }
    Outcome::MaybeSent
}

/// The outcome one cause proves, if it proves one.
fn decide(cause: &(dyn StdError + 'static)) -> Option<Outcome> {
    if cause.is::<kube::client::AuthError>() {
        return Some(Outcome::TokenFailed);
    }
    if let Some(e) = cause.downcast_ref::<hyper_util::client::legacy::Error>() {
        // Refused, DNS, TLS handshake, connect timeout: the request never left.
        if e.is_connect() {
            return Some(Outcome::NotSent);
        }
    }
    if let Some(e) = cause.downcast_ref::<hyper::Error>() {
        if e.is_canceled() {
            return Some(Outcome::NotSent);
        }
        if e.is_incomplete_message() || e.is_timeout() || e.is_closed() {
            return Some(Outcome::SentNoAnswer);
        }
    }
    if let Some(e) = cause.downcast_ref::<io::Error>() {
        use io::ErrorKind::*;
        if matches!(
            e.kind(),
            TimedOut | ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
        ) {
            return Some(Outcome::SentNoAnswer);
        }
    }
    None
}
