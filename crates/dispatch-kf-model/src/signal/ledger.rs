//! [`Ledger`]: which moments a replica of the cause controller reports, once each.
//!
//! - A moment the TrainJob's objects already showed when this process first saw the
//!   TrainJob is never reported by it: that execution ended before it was watching.
//! - A moment seen later waits `settle` (evidence that comes a little after the
//!   condition, a deleted rank's last state, is folded into its observation), then is
//!   due until it is reported.
//! - A moment still unreported `catch_up` after this process first saw it lapses. Its
//!   Event is named by the moment ([`Moment::event_name`](super::Moment::event_name)),
//!   so a replica that takes over creates the Events of moments it saw within
//!   `catch_up` and the apiserver refuses those the last leader made; a moment older
//!   than that may have had an Event that has expired since, and creating it anew
//!   would tell it twice.
//!
//! No clock: every call is given `now`.

use std::collections::HashMap;

use dispatch_core::ObjectObs;
use jiff::{SignedDuration, Timestamp};

use super::moment::Moment;

/// One moment, by its Event name.
#[derive(Clone, Debug)]
enum Entry {
    /// Shown when this process first saw its TrainJob: never reported by it.
    Before,
    /// Seen since: to report.
    Pending {
        moment: Moment,
        /// When this process first saw it.
        since: Timestamp,
        /// The TrainJob's observation the last time its objects showed the moment.
        obs: Box<ObjectObs>,
    },
    /// Reported (by this process or, found so, by another), or lapsed.
    Settled,
}

/// What [`Ledger::take`] hands over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reckoning {
    /// Report this moment, from this observation; it stays due until
    /// [`Ledger::reported`].
    Due(Moment, Box<ObjectObs>),
    /// Unreported within `catch_up`: never reported by this process now.
    Lapsed(Moment),
}

/// The moments one process has seen, and what became of each.
#[derive(Debug)]
pub struct Ledger {
    settle: SignedDuration,
    catch_up: SignedDuration,
    entries: HashMap<String, Entry>,
    /// The Event names of each TrainJob, by UID, so that they go with it.
    names: HashMap<String, Vec<String>>,
}

impl Ledger {
    /// An empty ledger: a moment is due `settle` after it is first seen, and lapses
    /// `catch_up` after (`catch_up` greater than `settle`).
    pub fn new(settle: SignedDuration, catch_up: SignedDuration) -> Ledger {
        Ledger { settle, catch_up, entries: HashMap::new(), names: HashMap::new() }
    }

    /// What this process reads of one TrainJob now: the moments its objects show, and
    /// its observation. `first_sight`: the process had not seen the TrainJob before
    /// (its first list of the cluster, or the TrainJob is new).
    pub fn saw(&mut self, moments: &[Moment], obs: &ObjectObs, first_sight: bool, now: Timestamp) {
        for moment in moments {
            let name = moment.event_name();
            match self.entries.get_mut(&name) {
                Some(Entry::Pending { obs: last, .. }) => **last = obs.clone(),
                Some(Entry::Before | Entry::Settled) => {}
                None => {
                    let entry = if first_sight {
                        Entry::Before
                    } else {
                        let obs = Box::new(obs.clone());
                        Entry::Pending { moment: moment.clone(), since: now, obs }
                    };
                    self.names.entry(moment.uid.clone()).or_default().push(name.clone());
                    self.entries.insert(name, entry);
                }
            }
        }
    }

    /// The moments due now, sorted, and those that lapsed (settled as they are
    /// handed over).
    pub fn take(&mut self, now: Timestamp) -> Vec<Reckoning> {
        let mut out = Vec::new();
        for entry in self.entries.values_mut() {
            let Entry::Pending { moment, since, obs } = entry else { continue };
            if now >= *since + self.catch_up {
                out.push(Reckoning::Lapsed(moment.clone()));
                *entry = Entry::Settled;
            } else if now >= *since + self.settle {
                out.push(Reckoning::Due(moment.clone(), obs.clone()));
            }
        }
        out.sort_by(|a, b| moment_of(a).cmp(moment_of(b)));
        out
    }

    /// The Event named `name` exists now (created, or found made by another
    /// replica): never due again.
    pub fn reported(&mut self, name: &str) {
        if let Some(entry) = self.entries.get_mut(name) {
            *entry = Entry::Settled;
        }
    }

    /// The TrainJob of `uid` is gone: its moments go with it.
    pub fn forget(&mut self, uid: &str) {
        for name in self.names.remove(uid).unwrap_or_default() {
            self.entries.remove(&name);
        }
    }

    /// How many moments are pending.
    pub fn pending(&self) -> usize {
        self.entries.values().filter(|e| matches!(e, Entry::Pending { .. })).count()
    }
}

fn moment_of(r: &Reckoning) -> &Moment {
    match r {
        Reckoning::Due(m, _) | Reckoning::Lapsed(m) => m,
    }
}

#[cfg(test)]
mod tests;
