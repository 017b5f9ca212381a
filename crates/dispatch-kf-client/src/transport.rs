//! How a `kube::Error` tells what happened to a request: answered, not sent, sent
//! without an answer, or maybe sent. `docs/errors.md#reading-kubes-errors-transportrs`
//! lists the facts of kube 5 this relies on.

use std::error::Error as StdError;
use std::io;

use crate::error_map::{Admission, Outcome};

/// What happened to a request that failed with `err`.
pub(crate) fn outcome_of(err: &kube::Error) -> Outcome {
    match err {
        // Classify by code first: a non-JSON body (an unserved group-version answers
        // plain text) arrives with a made-up reason.
        kube::Error::Api(status) => match Admission::read(status.code, &status.message) {
            Some(admission) => Outcome::Refused(admission),
            None => Outcome::Answered { code: status.code, reason: status.reason.clone() },
        },
        kube::Error::Auth(_) => Outcome::TokenFailed,
        other => outcome_of_chain(other),
    }
}

/// `err` as a message safe to show or log: kube's own text, except for a failed token
/// source, which is described by `token_failure` (kube's text may hold credentials).
/// For code that talks to the apiserver with its own kube client (the gate controller).
pub fn redacted(err: &kube::Error) -> String {
    match outcome_of(err) {
        Outcome::TokenFailed => format!("the token source failed: {}", token_failure(err)),
        _ => err.to_string(),
    }
}

/// What a failed token source says, with nothing that may hold a credential: kube's
/// own messages carry an exec plugin's command line (arguments can be secrets) and its
/// output (which can be the token), and a parse error can quote what it parsed. So the
/// failure is described by what kind it is, never by kube's text, and the `kube::Error`
/// is not kept as the source.
pub(crate) fn token_failure(err: &kube::Error) -> String {
    use kube::client::AuthError as A;
    let auth = match err {
        kube::Error::Auth(a) => Some(a),
        other => {
            let mut next: Option<&(dyn StdError + 'static)> = Some(other);
            let mut found = None;
            while let Some(cause) = next {
                if let Some(a) = cause.downcast_ref::<A>() {
                    found = Some(a);
                    break;
                }
                next = cause.source();
            }
            found
        }
    };
    let hidden = "not shown, because it may hold credentials";
    match auth {
        Some(A::AuthExecRun { out, .. }) => format!(
            "the exec credential plugin exited with {}; its command line and output are {hidden}: run it by hand to see why",
            out.status
        ),
        Some(A::AuthExecStart(e)) => {
            format!("the exec credential plugin could not be started: {}", e.kind())
        }
        Some(A::AuthExecParse(_) | A::ExecPluginFailed | A::AuthExec(_)) => {
            format!(
                "the exec credential plugin did not answer with a valid ExecCredential (its output is {hidden})"
            )
        }
        Some(A::ReadTokenFile(e, path)) => {
            format!("the token file {} cannot be read: {}", path.display(), e.kind())
        }
        Some(A::MissingCommand) => "the exec credential plugin has no command".to_owned(),
        Some(A::InvalidBearerToken(_) | A::InvalidBasicAuth(_)) => {
            format!("the credential is not a valid header value (it is {hidden})")
        }
        Some(A::MalformedTokenExpirationDate(_)) => {
            "the credential's expiration date is malformed".to_owned()
        }
        _ => format!("the token source failed (its details are {hidden})"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// The text kube gives for a failed exec plugin holds its command line and
    /// output; the redacted text holds neither.
    #[test]
    fn a_failed_exec_plugin_is_described_without_its_command_line_or_output() {
        let failed = kube::Error::Auth(kube::client::AuthError::AuthExecRun {
            cmd: "get-token --password=ARG-SECRET".into(),
            out: Box::new(std::process::Output {
                status: std::process::ExitStatus::from_raw(256),
                stdout: b"FAKE-TOKEN".to_vec(),
                stderr: b"FAKE-TOKEN".to_vec(),
            }),
        });
        assert!(failed.to_string().contains("FAKE-TOKEN"), "kube's own text shows it");
        let text = redacted(&failed);
        assert!(!text.contains("FAKE-TOKEN") && !text.contains("ARG-SECRET"), "{text}");
        assert!(text.contains("exec credential plugin exited"), "{text}");
        let other = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert_eq!(redacted(&other), other.to_string());
    }
}
