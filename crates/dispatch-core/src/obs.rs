//! What a backend reports of one scheduler object: [`ObjectObs`] and its parts.
//!
//! Every enum encodes as its name and decoding refuses a name it does not know: a record
//! written by a newer build is refused by an older one rather than misread.

use jiff::Timestamp;

use crate::JobId;
use crate::named::named_enum;

named_enum! {
    /// The kind of scheduler object an observation is about.
    pub enum ObjectKind {
        /// A Kubeflow Trainer TrainJob: the object dispatch makes.
        TrainJob = "TrainJob",
        /// A JobSet (reported on its own only as an orphan).
        JobSet = "JobSet",
        /// A pod (reported on its own only as an orphan).
        Pod = "Pod",
        /// A runtime copy (reported on its own only as an orphan).
        TrainingRuntime = "TrainingRuntime",
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

named_enum! {
    /// The coarse state of one object.
    pub enum ObjectState {
        /// Not running yet, and not held.
        Pending = "pending",
        /// Made, with its start gate closed: waiting for Open.
        Gated = "gated",
        /// Stopped by a hold: dispatch's or someone else's.
        Held = "held",
        /// Admitted and not suspended.
        Running = "running",
        /// The scheduler is done with it.
        Ended = "ended",
    }
}

named_enum! {
    /// Why an object is in its state: a closed list, with `unknown` for what the adapter
    /// cannot map.
    pub enum CauseKind {
        /// No cause: success, or nothing to explain.
        None = "none",
        /// A higher-priority workload took its place.
        Preempted = "preempted",
        /// A node it ran on was lost.
        NodeLost = "node-lost",
        /// A rank ran out of memory.
        OutOfMemory = "out-of-memory",
        /// It reached its time limit.
        TimeLimit = "time-limit",
        /// A rank exited with a non-zero code.
        NonZeroExit = "non-zero-exit",
        /// A rank could not be started.
        LaunchFailed = "launch-failed",
        /// There is no room for it.
        NoCapacity = "no-capacity",
        /// A hold is in force.
        Held = "held",
        /// A hold was released.
        Released = "released",
        /// The scheduler put it back in its queue.
        Requeued = "requeued",
        /// Someone cancelled it.
        Cancelled = "cancelled",
        /// It is a second instance of something that must run once.
        Duplicate = "duplicate",
        /// The scheduler said something the adapter cannot map; the detail keeps its words.
        Unknown = "unknown",
    }
}

named_enum! {
    /// Who said so.
    pub enum Provenance {
        /// The scheduler (Kubernetes, JobSet, Kueue, the Trainer).
        Scheduler = "scheduler",
        /// The application: an exit code.
        Application = "application",
        /// An actor: a person or a supervisor.
        Actor = "actor",
    }
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
