//! What each replica of dispatch's controllers (the readmission gate, the cause
//! controller) runs around its own work.
//!
//! - [`election`]: who leads, decided from the Lease (pure);
//! - `lease`: the Lease on the apiserver;
//! - [`run`]: campaigns, runs the controller's [`Work`] while it leads, and steps down
//!   on shutdown; [`spawn`] runs it on a task of its own;
//! - [`Telemetry`]: where the replica stands and its metrics, which [`run`] records;
//! - [`probes`]: `/healthz`, `/readyz` and `/metrics` served from that;
//! - [`process`]: the binary around it all: flags, the client, logs, signals.
//!
//! Time comes from a [`Clock`], so tests drive it with the simulated cluster's clock.

pub mod election;
mod lease;
pub mod probes;
pub mod process;
mod role;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use lease::{Campaign, LeaseLock};
pub use role::{Role, RoleCell, Telemetry};

/// Where the time comes from: the wall clock in production, a virtual one in tests.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The wall clock.
pub fn system_clock() -> Clock {
    Arc::new(Timestamp::now)
}

/// What a replica does while it leads: started each time it takes the Lease, with a
/// token cancelled when it must stop. It should return soon after.
pub type Work = Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;

/// Why a campaign failed.
#[derive(Debug, thiserror::Error)]
enum CampaignError {
    /// The apiserver refused or could not be reached. Shown redacted: a failed exec
    /// credential plugin's command line and output never reach a log.
    #[error("{}", dispatch_kf_client::redacted(.0))]
    Kube(#[from] kube::Error),
    /// The request went unanswered within the renew deadline.
    #[error("no answer within {0:?}")]
    Unanswered(Duration),
}

/// How a replica campaigns, and where it records what it does.
#[derive(Clone)]
pub struct Options<T> {
    /// The Lease's namespace.
    pub lease_namespace: String,
    /// The Lease's name.
    pub lease_name: String,
    /// This replica's identity in the Lease (unique per replica: its pod name).
    pub identity: String,
    /// `leaseDurationSeconds`: how long a silent leader keeps the Lease.
    pub lease_duration: Duration,
    /// A leader that could not renew for this long stops acting (well inside the
    /// lease duration, so it stops before anyone else may start).
    pub renew_deadline: Duration,
    /// How often the Lease is renewed or tried.
    pub retry_period: Duration,
    /// The clock.
    pub clock: Clock,
    /// Where the replica's role and counters are recorded (for the probe server).
    pub telemetry: T,
}

impl<T: Telemetry + Clone + Default> Options<T> {
    /// client-go's defaults: a 15 s Lease, a 10 s renew deadline, tries every 2 s.
    pub fn new(lease_namespace: &str, lease_name: &str, identity: &str) -> Options<T> {
        Options {
            lease_namespace: lease_namespace.to_owned(),
            lease_name: lease_name.to_owned(),
            identity: identity.to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            clock: system_clock(),
            telemetry: T::default(),
        }
    }
}

/// The work while this replica leads. It stops on a timer of its own, on tokio's
/// monotonic clock, once the last renewal's deadline passes without another, whatever
/// any request is doing: a Lease request hanging on a half-open connection cannot keep
/// it acting while another replica takes the Lease.
struct Leading {
    stop: CancellationToken,
    /// When the work must have stopped unless the Lease is renewed before.
    until: watch::Sender<Instant>,
    task: JoinHandle<()>,
}

impl Leading {
    /// Starts the work, to act until `until` unless renewed.
    fn start(
        work: &Work,
        telemetry: Arc<dyn Telemetry>,
        parent: &CancellationToken,
        until: Instant,
    ) -> Leading {
        let stop = parent.child_token();
        let (renewed, deadline) = watch::channel(until);
        let acting = work(stop.clone());
        let task = tokio::spawn(async move {
            tokio::select! {
                () = acting => {}
                () = passes(deadline) => {
                    tracing::warn!("renew deadline passed: the work stops");
                    telemetry.set_role(Role::Starting);
                }
            }
        });
        Leading { stop, until: renewed, task }
    }

    /// The Lease was renewed: the work may act until `until`.
    fn renewed(&self, until: Instant) {
        self.until.send_replace(until);
    }

    /// Whether the renew deadline passed and stopped the work.
    fn lapsed(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the work and waits until it has (no longer than the deadline).
    async fn end(mut self) {
        self.stop.cancel();
        let _ = (&mut self.task).await;
    }
}

/// Returns once the latest deadline `until` gives has passed.
async fn passes(mut until: watch::Receiver<Instant>) {
    loop {
        let deadline = *until.borrow_and_update();
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            changed = until.changed() => {
                if changed.is_err() {
                    return tokio::time::sleep_until(deadline).await;
                }
            }
        }
    }
}

impl Drop for Leading {
    /// The work never outlives its leadership: if [`run`] itself is dropped (its task
    /// aborted), it stops too, rather than act on without the Lease.
    fn drop(&mut self) {
        self.stop.cancel();
        self.task.abort();
    }
}

/// A replica running on a task of its own (what an embedding program, such as
/// `dispatch-kf sim serve --gate` or a test, holds).
pub struct Running {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// Starts [`run`] on a task of its own.
pub fn spawn<T: Telemetry + Clone>(
    client: kube::Client,
    options: Options<T>,
    work: Work,
) -> Running {
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(client, options, work, stop.clone()));
    Running { stop, task }
}

impl Running {
    /// A clean shutdown: the work stops and the Lease is given up.
    pub async fn shut_down(mut self) {
        self.stop.cancel();
        let _ = (&mut self.task).await;
    }

    /// A crash: nothing more is written, and the Lease stays until it expires.
    pub async fn abort(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for Running {
    /// Dropped without [`Running::shut_down`]: it stops at its next step.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Campaigns for the Lease every `retry_period`, runs `work` while it leads, stops it
/// when it loses the Lease or cannot renew within `renew_deadline` (each campaign is
/// bounded by it too), and on `shutdown` stops it and gives the Lease up. Returns when
/// `shutdown` is cancelled.
///
/// Safe against a second leader as long as `renew_deadline < lease_duration`: the work
/// stops `renew_deadline` after the start of the last campaign that renewed, and
/// another replica takes the Lease no sooner than `lease_duration` after it saw that
/// renewal land (see [`election`]).
pub async fn run<T: Telemetry + Clone>(
    client: kube::Client,
    options: Options<T>,
    work: Work,
    shutdown: CancellationToken,
) {
    let mut lock = LeaseLock {
        api: Api::<Lease>::namespaced(client, &options.lease_namespace),
        name: options.lease_name.clone(),
        identity: options.identity.clone(),
        duration_secs: i32::try_from(options.lease_duration.as_secs()).unwrap_or(i32::MAX),
        seen: None,
    };
    let alive = role::Alive::start(Arc::new(options.telemetry.clone()));
    let telemetry = &alive.0;
    let mut leading: Option<Leading> = None;
    loop {
        if leading.as_ref().is_some_and(Leading::lapsed) {
            leading = None;
        }
        let started = Instant::now();
        let campaign =
            tokio::time::timeout(options.renew_deadline, lock.campaign((options.clock)()));
        let outcome = tokio::select! {
            outcome = campaign => match outcome {
                Ok(answered) => answered.map_err(CampaignError::from),
                Err(_) => Err(CampaignError::Unanswered(options.renew_deadline)),
            },
            () = shutdown.cancelled() => break,
        };
        match outcome {
            Ok(Campaign::Leading) => {
                let until = started + options.renew_deadline;
                match &leading {
                    Some(l) => l.renewed(until),
                    None => {
                        tracing::info!(identity = %options.identity, "leading: the work starts");
                        let acting = Leading::start(&work, telemetry.clone(), &shutdown, until);
                        leading = Some(acting);
                        telemetry.set_role(Role::Leading);
                    }
                }
            }
            Ok(Campaign::Following(holder)) => {
                if let Some(l) = leading.take() {
                    tracing::warn!(?holder, "lost the Lease: the work stops");
                    l.end().await;
                }
                telemetry.set_role(Role::StandingBy);
            }
            Err(error) => {
                tracing::warn!(%error, "could not renew or read the Lease");
                telemetry.campaign_failed();
                if leading.is_none() {
                    // Not leading and blind to the Lease: not a standby one can count on.
                    telemetry.set_role(Role::Starting);
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(options.retry_period) => {}
            () = shutdown.cancelled() => break,
        }
    }
    if let Some(l) = leading.take() {
        l.end().await;
        let step_down =
            tokio::time::timeout(options.renew_deadline, lock.step_down((options.clock)()));
        match step_down.await {
            Ok(Ok(())) => tracing::info!("stepped down"),
            Ok(Err(error)) => {
                let error = CampaignError::from(error);
                tracing::warn!(%error, "could not give the Lease up; it expires on its own")
            }
            Err(_) => tracing::warn!("giving the Lease up went unanswered; it expires on its own"),
        }
    }
}
