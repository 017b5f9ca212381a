//! Where a replica stands ([`Role`]), and what its controller records it in
//! ([`Telemetry`]): the probes read both.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Where a replica stands. Only [`Role::StandingBy`] and [`Role::Leading`] are ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Role {
    /// The campaign loop has not decided yet, or cannot read the Lease and does not lead.
    Starting = 0,
    /// Another replica holds the Lease; this one is ready to take over.
    StandingBy = 1,
    /// This replica holds the Lease and its work runs.
    Leading = 2,
    /// The campaign loop is not running: not started yet, or it returned (shut down,
    /// aborted or panicked).
    NotRunning = 3,
}

impl Role {
    fn from_u8(value: u8) -> Role {
        match value {
            1 => Role::StandingBy,
            2 => Role::Leading,
            3 => Role::NotRunning,
            _ => Role::Starting,
        }
    }

    /// `/healthz`: the campaign loop runs.
    pub fn live(self) -> bool {
        self != Role::NotRunning
    }

    /// `/readyz`: leading, or a healthy standby.
    pub fn ready(self) -> bool {
        matches!(self, Role::StandingBy | Role::Leading)
    }
}

/// A [`Role`] shared between threads; [`Role::NotRunning`] until set.
#[derive(Debug)]
pub struct RoleCell(AtomicU8);

impl Default for RoleCell {
    fn default() -> Self {
        RoleCell(AtomicU8::new(Role::NotRunning as u8))
    }
}

impl RoleCell {
    /// The role now.
    pub fn get(&self) -> Role {
        Role::from_u8(self.0.load(Ordering::SeqCst))
    }

    /// Records the role.
    pub fn set(&self, role: Role) {
        self.0.store(role as u8, Ordering::SeqCst);
    }
}

/// What a controller records of its replica, and what the probe server reads.
pub trait Telemetry: Send + Sync + 'static {
    /// Where the replica stands now.
    fn role(&self) -> Role;
    /// Records where the replica stands (a `leading` gauge follows it).
    fn set_role(&self, role: Role);
    /// Counts one Lease campaign that could not read or write the Lease.
    fn campaign_failed(&self);
    /// The metrics in the OpenMetrics text format, which Prometheus reads.
    fn metrics_text(&self) -> String;
}

/// Marks the replica live while held; dropping it (the loop returned, was aborted or
/// panicked) marks it not running.
pub(crate) struct Alive(pub(crate) Arc<dyn Telemetry>);

impl Alive {
    pub(crate) fn start(telemetry: Arc<dyn Telemetry>) -> Alive {
        telemetry.set_role(Role::Starting);
        Alive(telemetry)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.set_role(Role::NotRunning);
    }
}
