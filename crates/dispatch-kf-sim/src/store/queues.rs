//! The controllers' work queues, as data: per queue the keys woken and not yet
//! reconciled, timers that wake a key at a time, the keys born during a loop, and
//! whether everything is due. Which change wakes which key is the controllers' rule
//! (`controllers/wake.rs`); the queues know nothing of it.

use std::collections::BTreeSet;

use jiff::Timestamp;

use super::Key;

/// The woken keys of every queue (a queue is a controller's number).
pub(crate) struct WorkQueues {
    /// The keys woken per queue.
    pub(crate) dirty: Vec<BTreeSet<Key>>,
    /// Every unit of every queue is due at the next look: nothing was seen yet, the
    /// clock moved, a setting the controllers read changed, or a settle stopped before
    /// its end.
    pub(crate) everything: bool,
    /// Objects created since the running controller's loop began (a pass over every
    /// unit would not have listed them).
    pub(crate) born: BTreeSet<Key>,
    /// Keys due at a time, earliest first, with their queue.
    pub(crate) timers: BTreeSet<(Timestamp, usize, Key)>,
    /// Units reconciled since the sim started.
    pub(crate) reconciled: u64,
}

impl Default for WorkQueues {
    fn default() -> Self {
        Self {
            dirty: Vec::new(),
            everything: true,
            born: BTreeSet::new(),
            timers: BTreeSet::new(),
            reconciled: 0,
        }
    }
}

impl WorkQueues {
    /// Makes every unit of every queue due.
    pub(crate) fn everything(&mut self) {
        self.everything = true;
    }

    /// The woken keys of `queue`.
    pub(crate) fn queue(&mut self, queue: usize) -> &mut BTreeSet<Key> {
        if self.dirty.len() <= queue {
            self.dirty.resize_with(queue + 1, BTreeSet::new);
        }
        &mut self.dirty[queue]
    }
}
