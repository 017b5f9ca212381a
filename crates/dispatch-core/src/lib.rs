//! The vocabulary that every dispatch backend shares.
//!
//! Pure and deterministic: no I/O, no clock, no randomness. Nothing here knows about
//! Kubernetes; a Slurm backend could depend on this crate alone.
//!
//! - [`Error`] and its sentinel [`Kind`]: what the supervisor records for a failure.
//! - [`JobId`], [`StartRequest`], [`JobSpec`]: what a backend is asked to run.
//! - [`ObjectObs`] and its parts: what a backend reports of one scheduler object.
//! - [`Capability`], [`Support`], [`RecoveryPolicy`]: what a backend can do.
//! - [`Backend`], [`Watcher`], [`CessationSignal`]: the traits a backend implements.

mod backend;
mod capability;
mod error;
mod id;
mod named;
mod obs;
mod recovery;
mod spec;
mod status;
mod timespan;

pub use backend::{
    Backend, CallContext, Cancellation, Cessation, CessationSignal, Declarations, LogStream,
    NodeState, ObsStream, OutputStream, RuleSupport, Watcher,
};
pub use capability::{Answer, Capability, Source, Support};
pub use error::{Error, Kind, Refinement, Result};
pub use id::JobId;
pub use named::UnknownName;
pub use obs::{
    Cause, CauseKind, Discovery, Execution, InFlight, ObjectKind, ObjectObs, ObjectRef,
    ObjectState, Provenance,
};
pub use recovery::{Action, RecoveryPolicy, Rule};
pub use spec::{Extensions, ImageExt, JobSpec, StartRequest, decode_extension, ext};
pub use status::{Status, StatusLevel, StatusState};
pub use timespan::Timespan;
