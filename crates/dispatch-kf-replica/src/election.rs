//! Leader election's rule, pure: given the Lease as read, what this replica last saw of
//! it and when, who this replica is and the time, what to write. The same rule as
//! client-go's `leaderelection`: a Lease held by someone else is taken only once
//! `leaseDurationSeconds` have passed, by this replica's own clock, since it last saw
//! the Lease's record change. The holder's `renewTime` is the holder's clock and is never
//! compared with this one's, so clock skew between replicas cannot hand a live Lease
//! over.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// What to do with the Lease.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Write this spec (create, renew, or take over): on success this replica leads.
    Write(LeaseSpec),
    /// Someone else holds a fresh Lease: follow.
    Follow {
        /// The holder.
        holder: String,
    },
}

/// The Lease's record as this replica last saw it change, and when, by its own clock
/// (client-go's `observedRecord` and `observedTime`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sighting {
    record: Option<LeaseSpec>,
    since: Timestamp,
}

impl Sighting {
    /// The sighting after reading `current` at `now`: its time moves only when the
    /// record differs from the one last seen (a renewal changes `renewTime`, so a live
    /// holder's record changes at every renewal).
    pub fn after(
        previous: Option<Sighting>,
        current: Option<&LeaseSpec>,
        now: Timestamp,
    ) -> Sighting {
        match previous {
            Some(seen) if seen.record.as_ref() == current => seen,
            _ => Sighting { record: current.cloned(), since: now },
        }
    }

    /// Whether the record seen may still be live at `now`: held, and seen changing
    /// less than its `leaseDurationSeconds` ago.
    fn live_at(&self, now: Timestamp) -> bool {
        let Some(spec) = &self.record else { return false };
        let held = spec.holder_identity.as_deref().is_some_and(|h| !h.is_empty());
        let Some(secs) = spec.lease_duration_seconds.filter(|_| held) else { return false };
        self.since.checked_add(SignedDuration::from_secs(secs.into())).is_ok_and(|end| end >= now)
    }
}

/// The next step for `me` at `now`, given the Lease's spec as just read (`None` when it
/// does not exist yet) and `seen`, the [`Sighting`] after that read.
pub fn next(
    current: Option<&LeaseSpec>,
    seen: &Sighting,
    me: &str,
    now: Timestamp,
    duration_secs: i32,
) -> Step {
    let stamp = Some(MicroTime(now));
    let holder = current.and_then(|s| s.holder_identity.clone()).filter(|h| !h.is_empty());
    match (current, holder) {
        (Some(spec), Some(holder)) if holder == me => Step::Write(LeaseSpec {
            renew_time: stamp,
            lease_duration_seconds: Some(duration_secs),
            ..spec.clone()
        }),
        (Some(_), Some(holder)) if seen.live_at(now) => Step::Follow { holder },
        (current, _) => Step::Write(LeaseSpec {
            holder_identity: Some(me.to_owned()),
            acquire_time: stamp.clone(),
            renew_time: stamp,
            lease_duration_seconds: Some(duration_secs),
            lease_transitions: Some(
                current.map_or(0, |s| s.lease_transitions.unwrap_or(0).saturating_add(1)),
            ),
            ..LeaseSpec::default()
        }),
    }
}

/// The spec that gives the Lease up on a clean shutdown (client-go's
/// `ReleaseOnCancel`): no holder, so another replica takes it at once.
pub fn step_down(current: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        renew_time: Some(MicroTime(now)),
        lease_duration_seconds: Some(1),
        ..current.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn held_by(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Some(MicroTime(at(renewed))),
            lease_duration_seconds: Some(15),
            lease_transitions: Some(2),
            ..LeaseSpec::default()
        }
    }

    /// `me`'s step at `now`, having first seen `current` at `first_seen`.
    fn step(current: Option<&LeaseSpec>, first_seen: i64, now: i64) -> Step {
        let seen = Sighting::after(None, current, at(first_seen));
        let seen = Sighting::after(Some(seen), current, at(now));
        next(current, &seen, "a", at(now), 15)
    }

    #[test]
    fn a_missing_lease_is_created_held_by_me() {
        let Step::Write(spec) = step(None, 0, 0) else { panic!() };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_transitions, Some(0));
        assert_eq!(spec.renew_time, Some(MicroTime(at(0))));
    }

    #[test]
    fn my_own_lease_is_renewed_keeping_its_acquire_time() {
        let mut mine = held_by("a", 0);
        mine.acquire_time = Some(MicroTime(at(-100)));
        let Step::Write(spec) = step(Some(&mine), 0, 5) else { panic!() };
        assert_eq!(spec.renew_time, Some(MicroTime(at(5))));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(-100))));
        assert_eq!(spec.lease_transitions, Some(2), "a renewal is no transition");
    }

    #[test]
    fn another_holder_s_lease_is_followed_until_it_expires_then_taken() {
        let theirs = held_by("b", 0);
        assert_eq!(step(Some(&theirs), 0, 15), Step::Follow { holder: "b".into() });
        let Step::Write(spec) = step(Some(&theirs), 0, 16) else { panic!() };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_transitions, Some(3));
    }

    #[test]
    fn expiry_is_counted_from_when_the_record_was_seen_changing_not_from_its_renew_time() {
        // The holder's clock runs an hour behind this replica's: its renewTime is always
        // an hour old here, yet it renews, so its Lease is live.
        let mut seen = None;
        for t in 0..60 {
            let theirs = held_by("b", t - 3_600);
            let sighting = Sighting::after(seen.take(), Some(&theirs), at(t));
            assert_eq!(
                next(Some(&theirs), &sighting, "a", at(t), 15),
                Step::Follow { holder: "b".into() }
            );
            seen = Some(sighting);
        }
        // The holder's clock runs an hour ahead, and it stopped renewing at 0: this
        // replica takes the Lease 15 s after it saw the last renewal, not in an hour.
        let ahead = held_by("b", 3_600);
        assert_eq!(step(Some(&ahead), 0, 15), Step::Follow { holder: "b".into() });
        assert!(matches!(step(Some(&ahead), 0, 16), Step::Write(_)));
    }

    #[test]
    fn a_replica_that_just_started_waits_a_whole_lease_duration_before_taking_over() {
        // It cannot know when the holder last renewed; client-go waits the same.
        let theirs = held_by("b", -60);
        assert_eq!(step(Some(&theirs), 100, 100), Step::Follow { holder: "b".into() });
        assert!(matches!(step(Some(&theirs), 100, 116), Step::Write(_)));
    }

    #[test]
    fn a_stepped_down_or_malformed_lease_is_taken_at_once() {
        let released = step_down(&held_by("b", 0), at(1));
        assert!(matches!(step(Some(&released), 1, 1), Step::Write(_)));
        let no_duration = LeaseSpec { holder_identity: Some("b".into()), ..LeaseSpec::default() };
        assert!(matches!(step(Some(&no_duration), 1, 1), Step::Write(_)));
    }
}
