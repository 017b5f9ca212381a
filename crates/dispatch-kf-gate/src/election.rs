//! Leader election's rule, pure: given the Lease as read, who this replica is and the
//! time, what to write. The same rule as client-go's `leaderelection`: a Lease held by
//! someone else is taken only once `renewTime + leaseDurationSeconds` has passed.

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

/// The next step for `me` at `now`, given the Lease's spec (`None` when it does not
/// exist yet).
pub fn next(current: Option<&LeaseSpec>, me: &str, now: Timestamp, duration_secs: i32) -> Step {
    let stamp = Some(MicroTime(now));
    let fresh = |spec: &LeaseSpec| {
        let (Some(renewed), Some(secs)) = (&spec.renew_time, spec.lease_duration_seconds) else {
            return false;
        };
        renewed.0.checked_add(SignedDuration::from_secs(secs.into())).is_ok_and(|end| end >= now)
    };
    let holder = current.and_then(|s| s.holder_identity.clone()).filter(|h| !h.is_empty());
    match (current, holder) {
        (Some(spec), Some(holder)) if holder == me => Step::Write(LeaseSpec {
            renew_time: stamp,
            lease_duration_seconds: Some(duration_secs),
            ..spec.clone()
        }),
        (Some(spec), Some(holder)) if fresh(spec) => Step::Follow { holder },
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

    #[test]
    fn a_missing_lease_is_created_held_by_me() {
        let Step::Write(spec) = next(None, "a", at(0), 15) else { panic!() };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_transitions, Some(0));
        assert_eq!(spec.renew_time, Some(MicroTime(at(0))));
    }

    #[test]
    fn my_own_lease_is_renewed_keeping_its_acquire_time() {
        let mut mine = held_by("a", 0);
        mine.acquire_time = Some(MicroTime(at(-100)));
        let Step::Write(spec) = next(Some(&mine), "a", at(5), 15) else { panic!() };
        assert_eq!(spec.renew_time, Some(MicroTime(at(5))));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(-100))));
        assert_eq!(spec.lease_transitions, Some(2), "a renewal is no transition");
    }

    #[test]
    fn another_holder_s_lease_is_followed_until_it_expires_then_taken() {
        let theirs = held_by("b", 0);
        assert_eq!(next(Some(&theirs), "a", at(15), 15), Step::Follow { holder: "b".into() });
        let Step::Write(spec) = next(Some(&theirs), "a", at(16), 15) else { panic!() };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_transitions, Some(3));
    }

    #[test]
    fn a_stepped_down_or_malformed_lease_is_taken_at_once() {
        let released = step_down(&held_by("b", 0), at(1));
        assert!(matches!(next(Some(&released), "a", at(1), 15), Step::Write(_)));
        let no_renew = LeaseSpec { holder_identity: Some("b".into()), ..LeaseSpec::default() };
        assert!(matches!(next(Some(&no_renew), "a", at(1), 15), Step::Write(_)));
    }
}
