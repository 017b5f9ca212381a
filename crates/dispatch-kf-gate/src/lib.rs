//! `dispatch-kf-gate`: dispatch's Kueue readmission gate (`docs/gate.md`).
//!
//! An AdmissionCheck controller. While this replica holds the coordination.k8s.io
//! Lease it keeps dispatch's AdmissionChecks `Active=True` and sets each Workload's
//! check Ready (with the admission count for the pods) only when dispatch permits the
//! admission, Retry otherwise; the rule itself is `dispatch_kf_model::internal::readmission`.
//!
//! - `reconcile`: the two kube-runtime reconcilers, the work while leading;
//! - [`run`] and [`spawn`]: the replica of `dispatch_kf_replica` (the Lease campaign)
//!   with those reconcilers as its work;
//! - [`telemetry`]: where the replica stands and what it counted, which [`run`] records;
//!   `dispatch_kf_replica::probes` serves it.
//!
//! Time comes from a [`Clock`], so tests drive it with the simulated cluster's clock.

mod reconcile;
pub mod telemetry;

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use dispatch_kf_replica::Work;
pub use dispatch_kf_replica::{Clock, Running, system_clock};
use telemetry::Telemetry;

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The apiserver refused or could not be reached. Shown redacted: a failed exec
    /// credential plugin's command line and output never reach a message or a log.
    #[error("{}", dispatch_kf_client::redacted(.0))]
    Kube(#[from] kube::Error),
    /// An object could not be read as JSON.
    #[error("malformed object: {0}")]
    Malformed(String),
    /// A request went unanswered within its bound (a half-open connection, a frozen
    /// apiserver).
    #[error("no answer within {0:?}")]
    Unanswered(Duration),
}

impl GateError {
    /// A write that lost an optimistic-concurrency race.
    pub fn is_conflict(&self) -> bool {
        matches!(self, GateError::Kube(kube::Error::Api(status)) if status.is_conflict())
    }
}

/// How the gate runs: the Lease (the adapter's `kueue.lease` setting), the clock, and
/// the gate's [`Telemetry`].
pub type Options = dispatch_kf_replica::Options<Telemetry>;

/// The gate's work while it leads: its reconcilers.
pub fn work(client: kube::Client, options: &Options) -> Work {
    let (clock, telemetry) = (options.clock.clone(), options.telemetry.clone());
    Arc::new(move |stop: CancellationToken| {
        reconcile::run(client.clone(), clock.clone(), telemetry.clone(), stop).boxed()
    })
}

/// Starts [`run`] on a task of its own.
pub fn spawn(client: kube::Client, options: Options) -> Running {
    let work = work(client.clone(), &options);
    dispatch_kf_replica::spawn(client, options, work)
}

/// Campaigns for the Lease, runs the reconcilers while it leads, and on `shutdown`
/// stops them and gives the Lease up (`dispatch_kf_replica::run`, which says why a
/// second leader cannot act).
pub async fn run(client: kube::Client, options: Options, shutdown: CancellationToken) {
    let work = work(client.clone(), &options);
    dispatch_kf_replica::run(client, options, work, shutdown).await;
}
