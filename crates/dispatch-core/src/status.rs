//! The object-only [`Status`]: what a reader with no record store can say.

use crate::ObjectObs;
use crate::named::named_enum;

/// How much a status knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StatusLevel {
    /// Computed from the scheduler's objects alone, without the job's record.
    ObjectOnly,
}

named_enum! {
    /// The state of a job as an object-only reader sees it: never terminal, because an
    /// object ending is not the job ending, and only the record knows which it was.
    pub enum StatusState {
        /// No object of the job is alive.
        Pending = "pending",
        /// Some object of the job is alive (pending, gated, held or running).
        Running = "running",
    }
}

/// A job's status without a record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Status {
    /// Always object-only here.
    pub level: StatusLevel,
    /// Running when any object is alive, else pending.
    pub state: StatusState,
}

impl Status {
    /// The object-only status of a job whose objects are `objects`.
    pub fn object_only(objects: &[ObjectObs]) -> Status {
        let alive = objects.iter().any(ObjectObs::is_alive);
        Status {
            level: StatusLevel::ObjectOnly,
            state: if alive { StatusState::Running } else { StatusState::Pending },
        }
    }
}
