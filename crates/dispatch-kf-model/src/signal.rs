//! A TrainJob's execution that ended or was interrupted, as a Kubernetes signal: the
//! moments a TrainJob's objects show ([`moments`]), each named alike by every replica
//! and every restart of the cause controller ([`Moment::event_name`]); the Event that
//! tells one ([`report`]); and which moments a replica reports, once each ([`Ledger`]).
//! `docs/events.md` says why each rule is what it is.
//!
//! A moment is read off the objects, not off a change of observation, so that two
//! processes that read the same objects name the same moments:
//!
//! - [`Trigger::Ended`]: the TrainJob carries `Complete=True` or `Failed=True`; the
//!   moment's time is that condition's `lastTransitionTime`, which the Trainer copies
//!   from the JobSet's. A failed TrainJob the Trainer runs again (its JobSet gone to a
//!   TTL) ends again with the new JobSet's time: another moment.
//! - [`Trigger::Evicted`]: the TrainJob's Kueue Workload carries `Evicted=True`; the
//!   time is that condition's. Kueue sets it `False` again when it next reserves quota,
//!   so each eviction has a time of its own.

mod ledger;
mod moment;
mod report;

pub use ledger::{Ledger, Reckoning};
pub use moment::{Moment, Trigger, moments};
pub use report::{NOTE_LIMIT, Report, reason, report, runtime_label};
