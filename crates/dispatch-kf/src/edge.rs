//! The Backend's edge: the only place it reads the clock, waits on it, or draws
//! randomness, so that the model below it can take time and tokens as parameters.

use dispatch_core::{CallContext, Error, JobId, Result};
use dispatch_kf_model::TokenSuffix;
use jiff::Timestamp;

/// The wall-clock time, read once per call.
pub(crate) fn now() -> Timestamp {
    Timestamp::now()
}

/// The monotonic clock, for a deadline the Backend sets itself (a `CallContext` takes
/// a `std::time::Instant`).
pub(crate) fn instant() -> std::time::Instant {
    std::time::Instant::now()
}

/// The runtime's monotonic clock, for how long the Backend has waited: tokio's, so
/// that a test whose time is paused moves it.
pub(crate) fn timer() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::unreachable(format!("the operating system gave no random bytes: {e}"))
    })?;
    Ok(bytes)
}

/// A fresh attempt-token suffix: 16 lower-case hex characters.
pub(crate) fn token_suffix() -> Result<TokenSuffix> {
    Ok(TokenSuffix::from_bytes(random_bytes::<8>()?))
}

/// A fresh job id (a ULID of the current time), for the preflight probe.
pub(crate) fn fresh_job_id() -> Result<JobId> {
    let millis = u64::try_from(now().as_millisecond()).unwrap_or(0);
    Ok(JobId::from_parts(millis, u128::from_le_bytes(random_bytes::<16>()?)))
}

/// Resolves when the call's deadline passes; never when it has none.
pub(crate) async fn deadline(cx: &CallContext) {
    match cx.deadline {
        Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
        None => std::future::pending().await,
    }
}
