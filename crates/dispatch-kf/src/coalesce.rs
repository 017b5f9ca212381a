//! Watch's coalescer (`docs/backend.md#watch-and-the-deleted-pods-evidence`): changes
//! that come close together make one Find. A plain state machine on a clock it is
//! given, in quinn-proto's shape: [`Coalescer::handle`] takes a change in,
//! [`Coalescer::poll_timeout`] says when to look again if nothing else happens, and
//! [`Coalescer::poll_find`] says whether a Find is due. The pump owns the waiting.

use std::time::Duration;

use tokio::time::Instant;

/// Changes that arrive within this of each other make one Find.
pub(crate) const QUIET: Duration = Duration::from_millis(100);
/// A steady stream of changes still gets a Find at least this often.
pub(crate) const AT_MOST: Duration = Duration::from_secs(1);

/// The burst of changes being gathered, if any.
#[derive(Debug, Default)]
pub(crate) struct Coalescer {
    burst: Option<Burst>,
}

#[derive(Debug)]
struct Burst {
    started: Instant,
    last: Instant,
}

impl Coalescer {
    /// A change of the job arrived at `now` (the hub routes a Watch only its job's).
    pub(crate) fn handle(&mut self, now: Instant) {
        match &mut self.burst {
            Some(burst) => burst.last = now,
            None => self.burst = Some(Burst { started: now, last: now }),
        }
    }

    /// When the burst ends if no change comes first: after [`QUIET`] without one, or
    /// [`AT_MOST`] after it began. `None` when no burst is open: wait for a change.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let burst = self.burst.as_ref()?;
        Some((burst.last + QUIET).min(burst.started + AT_MOST))
    }

    /// Whether a Find is due at `now`: the burst has ended (and is closed).
    pub(crate) fn poll_find(&mut self, now: Instant) -> bool {
        if self.poll_timeout().is_none_or(|end| now < end) {
            return false;
        }
        self.burst.take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_burst_of_changes_makes_one_find_once_quiet() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        assert_eq!(c.poll_timeout(), None, "nothing to wait for");
        for i in 0..50 {
            c.handle(t0 + ms(i));
            assert!(!c.poll_find(t0 + ms(i)), "not while changes keep coming");
        }
        assert_eq!(c.poll_timeout(), Some(t0 + ms(49) + QUIET));
        assert!(!c.poll_find(t0 + ms(148)));
        assert!(c.poll_find(t0 + ms(149)));
        assert!(!c.poll_find(t0 + ms(500)), "one Find per burst");
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn a_steady_stream_gets_a_find_at_least_every_second() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        let mut finds = Vec::new();
        for i in 0..60 {
            let now = t0 + ms(50 * i);
            if c.poll_find(now) {
                finds.push(now - t0);
            }
            c.handle(now);
        }
        assert_eq!(finds, [ms(1000), ms(2000)], "each burst is cut at {AT_MOST:?}");
    }
}
