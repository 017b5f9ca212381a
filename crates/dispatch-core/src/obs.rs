//! What a backend reports of one scheduler object: [`ObjectObs`] and its parts.
//!
//! Every enum encodes as its name and decoding refuses a name it does not know: a record
//! written by a newer build is refused by an older one rather than misread.

use jiff::Timestamp;

use crate::JobId;

/// The kind of scheduler object an observation is about.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ObjectKind {
    /// A Kubeflow Trainer TrainJob: the object dispatch makes.
    TrainJob,
    /// A JobSet (reported on its own only as an orphan).
    JobSet,
    /// A pod (reported on its own only as an orphan).
    Pod,
    /// A runtime copy (reported on its own only as an orphan).
    TrainingRuntime,
}

impl ObjectKind {
    /// The Kubernetes kind.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::TrainJob => "TrainJob",
            ObjectKind::JobSet => "JobSet",
            ObjectKind::Pod => "Pod",
            ObjectKind::TrainingRuntime => "TrainingRuntime",
        }
    }
}

/// Names one object of one backend: what Start returns and Inspect, Stop and the hold
/// family take.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    /// The backend's configured name.
    pub backend: String,
    /// The object's kind.
    pub kind: ObjectKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its UID: the instance of the name.
    pub uid: String,
}

/// The coarse state of one object.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectState {
    /// Not running yet, and not held.
    Pending,
    /// Made, with its start gate closed: waiting for Open.
    Gated,
    /// Stopped by a hold: dispatch's or someone else's.
    Held,
    /// Admitted and not suspended.
    Running,
    /// The scheduler is done with it.
    Ended,
}

/// Why an object is in its state: a closed list, with `unknown` for what the adapter
/// cannot map.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CauseKind {
    /// No cause: success, or nothing to explain.
    None,
    /// A higher-priority workload took its place.
    Preempted,
    /// A node it ran on was lost.
    NodeLost,
    /// A rank ran out of memory.
    OutOfMemory,
    /// It reached its time limit.
    TimeLimit,
    /// A rank exited with a non-zero code.
    NonZeroExit,
    /// A rank could not be started.
    LaunchFailed,
    /// There is no room for it.
    NoCapacity,
    /// A hold is in force.
    Held,
    /// A hold was released.
    Released,
    /// The scheduler put it back in its queue.
    Requeued,
    /// Someone cancelled it.
    Cancelled,
    /// It is a second instance of something that must run once.
    Duplicate,
    /// The scheduler said something the adapter cannot map; the detail keeps its words.
    Unknown,
}

impl CauseKind {
    /// Every kind, in the list's order.
    pub const ALL: [CauseKind; 14] = [
        CauseKind::None,
        CauseKind::Preempted,
        CauseKind::NodeLost,
        CauseKind::OutOfMemory,
        CauseKind::TimeLimit,
        CauseKind::NonZeroExit,
        CauseKind::LaunchFailed,
        CauseKind::NoCapacity,
        CauseKind::Held,
        CauseKind::Released,
        CauseKind::Requeued,
        CauseKind::Cancelled,
        CauseKind::Duplicate,
        CauseKind::Unknown,
    ];

    /// The name dispatch prints: `node-lost`, `non-zero-exit`, ...
    pub fn name(self) -> &'static str {
        match self {
            CauseKind::None => "none",
            CauseKind::Preempted => "preempted",
            CauseKind::NodeLost => "node-lost",
            CauseKind::OutOfMemory => "out-of-memory",
            CauseKind::TimeLimit => "time-limit",
            CauseKind::NonZeroExit => "non-zero-exit",
            CauseKind::LaunchFailed => "launch-failed",
            CauseKind::NoCapacity => "no-capacity",
            CauseKind::Held => "held",
            CauseKind::Released => "released",
            CauseKind::Requeued => "requeued",
            CauseKind::Cancelled => "cancelled",
            CauseKind::Duplicate => "duplicate",
            CauseKind::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for CauseKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for ObjectState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ObjectState::Pending => "pending",
            ObjectState::Gated => "gated",
            ObjectState::Held => "held",
            ObjectState::Running => "running",
            ObjectState::Ended => "ended",
        })
    }
}

/// Who said so.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// The scheduler (Kubernetes, JobSet, Kueue, the Trainer).
    Scheduler,
    /// The application: an exit code.
    Application,
    /// An actor: a person or a supervisor.
    Actor,
}

/// The cause of an object's state.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cause {
    /// The kind, from the closed list.
    pub kind: CauseKind,
    /// Who said so, when known.
    pub provenance: Option<Provenance>,
    /// The actor, when there was one.
    pub actor: Option<String>,
    /// The scheduler's own words, verbatim.
    pub detail: String,
    /// The exit code, when there was one.
    pub exit_code: Option<i32>,
    /// When it happened, when the objects say.
    pub at: Option<Timestamp>,
}

impl Cause {
    /// The cause of an object with nothing to explain.
    pub fn none() -> Cause {
        Cause {
            kind: CauseKind::None,
            provenance: None,
            actor: None,
            detail: String::new(),
            exit_code: None,
            at: None,
        }
    }
}

/// One execution: a set of pods that ran together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Execution {
    /// A: the admission count.
    pub admission: u64,
    /// J: JobSet's restart attempt.
    pub restart_attempt: u64,
    /// R = A + J, which orders executions.
    pub index: u64,
}

impl Execution {
    /// The execution of admission `admission` and restart attempt `restart_attempt`.
    pub fn new(admission: u64, restart_attempt: u64) -> Execution {
        Execution { admission, restart_attempt, index: admission.saturating_add(restart_attempt) }
    }
}

/// What a backend reports of one object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectObs {
    /// The object.
    pub object: ObjectRef,
    /// The submission N it belongs to.
    pub submission: u32,
    /// Its coarse state.
    pub state: ObjectState,
    /// True when someone other than dispatch holds it.
    pub admin_held: bool,
    /// dispatch's hold instance in force, if any.
    pub hold_instance: Option<u64>,
    /// Why it is in its state.
    pub cause: Cause,
    /// The execution it is on, when any pod counts towards one.
    pub execution: Option<Execution>,
    /// True when something about it contradicts dispatch having made it.
    pub foreign: bool,
    /// The `now` the observation was made at.
    pub seen_at: Timestamp,
}

impl ObjectObs {
    /// Whether the object is alive: pending, gated, held or running.
    pub fn is_alive(&self) -> bool {
        self.state != ObjectState::Ended
    }
}

/// A create this backend sent that went unanswered, until its call bound passes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InFlight {
    /// The submission whose create went unanswered.
    pub submission: u32,
    /// When the create can no longer take effect.
    pub until: Timestamp,
}

/// What Find returns: every object of the job, orphans included.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Discovery {
    /// The job.
    pub job: JobId,
    /// The observation of each object.
    pub objects: Vec<ObjectObs>,
    /// An unanswered create of this backend, while it may still take effect.
    pub in_flight: Option<InFlight>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cause_kinds_encode_as_their_names_and_refuse_unknown_ones() {
        for kind in CauseKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<CauseKind>(&json).unwrap(), kind);
        }
        assert!(serde_json::from_str::<CauseKind>("\"evicted\"").is_err());
        assert!(serde_json::from_str::<ObjectState>("\"failed\"").is_err());
        assert!(serde_json::from_str::<Provenance>("\"user\"").is_err());
    }

    #[test]
    fn execution_index_is_the_sum() {
        assert_eq!(Execution::new(2, 1).index, 3);
    }
}
