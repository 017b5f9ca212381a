//! The ledger's rules by hand, and as a property over any sequence of reads, takes and
//! deletions.

use std::collections::{BTreeMap, BTreeSet};

use dispatch_core::{Cause, CauseKind, ObjectKind, ObjectRef, ObjectState};
use proptest::prelude::*;

use super::*;
use crate::signal::Trigger;

const SETTLE: SignedDuration = SignedDuration::from_secs(1);
const CATCH_UP: SignedDuration = SignedDuration::from_secs(300);

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_764_783_000 + seconds).unwrap()
}

fn moment(job: u8, trigger: Trigger, at: i64) -> Moment {
    Moment {
        namespace: "team".into(),
        name: format!("train-{job}"),
        uid: format!("{job:08x}-0000"),
        trigger,
        at: Some(t(at)),
    }
}

fn obs(job: u8, kind: CauseKind) -> ObjectObs {
    ObjectObs {
        object: ObjectRef {
            backend: "kf".into(),
            kind: ObjectKind::TrainJob,
            namespace: "team".into(),
            name: format!("train-{job}"),
            uid: format!("{job:08x}-0000"),
        },
        submission: 0,
        state: ObjectState::Ended,
        admin_held: false,
        hold_instance: None,
        cause: Cause { kind, ..Cause::none() },
        execution: None,
        foreign: true,
        seen_at: t(0),
    }
}

fn due(reckonings: &[Reckoning]) -> Vec<(String, CauseKind)> {
    reckonings
        .iter()
        .filter_map(|r| match r {
            Reckoning::Due(m, o) => Some((m.event_name(), o.cause.kind)),
            Reckoning::Lapsed(_) => None,
        })
        .collect()
}

#[test]
fn a_moment_shown_at_first_sight_is_never_reported() {
    let mut ledger = Ledger::new(SETTLE, CATCH_UP);
    let ended = moment(1, Trigger::Ended, 0);
    ledger.saw(std::slice::from_ref(&ended), &obs(1, CauseKind::OutOfMemory), true, t(10));
    ledger.saw(std::slice::from_ref(&ended), &obs(1, CauseKind::OutOfMemory), false, t(20));
    assert_eq!(ledger.take(t(100)), []);
}

#[test]
fn a_moment_seen_later_is_due_after_settling_with_its_last_observation_until_reported() {
    let mut ledger = Ledger::new(SETTLE, CATCH_UP);
    ledger.saw(&[], &obs(1, CauseKind::None), true, t(0));
    let ended = moment(1, Trigger::Ended, 5);
    ledger.saw(std::slice::from_ref(&ended), &obs(1, CauseKind::Unknown), false, t(5));
    assert_eq!(ledger.take(t(5)), [], "not settled yet");
    // The deleted rank's last state arrives: the observation now names the cause.
    ledger.saw(std::slice::from_ref(&ended), &obs(1, CauseKind::OutOfMemory), false, t(5));
    let name = ended.event_name();
    assert_eq!(due(&ledger.take(t(6))), [(name.clone(), CauseKind::OutOfMemory)]);
    // The create failed: still due.
    assert_eq!(due(&ledger.take(t(7))), [(name.clone(), CauseKind::OutOfMemory)]);
    ledger.reported(&name);
    assert_eq!(ledger.take(t(8)), []);
    ledger.saw(std::slice::from_ref(&ended), &obs(1, CauseKind::OutOfMemory), false, t(9));
    assert_eq!(ledger.take(t(10)), [], "a re-list shows it again: still reported");
}

#[test]
fn a_moment_unreported_within_catch_up_lapses_once() {
    let mut ledger = Ledger::new(SETTLE, CATCH_UP);
    let evicted = moment(2, Trigger::Evicted, 0);
    ledger.saw(std::slice::from_ref(&evicted), &obs(2, CauseKind::Preempted), false, t(0));
    assert_eq!(ledger.take(t(0) + CATCH_UP), [Reckoning::Lapsed(evicted.clone())]);
    assert_eq!(ledger.take(t(0) + CATCH_UP), []);
    assert_eq!(ledger.pending(), 0);
}

#[test]
fn a_train_job_run_again_ends_again_as_another_moment_and_forgetting_it_frees_its_names() {
    let mut ledger = Ledger::new(SETTLE, CATCH_UP);
    let first = moment(3, Trigger::Ended, 0);
    ledger.saw(std::slice::from_ref(&first), &obs(3, CauseKind::NonZeroExit), true, t(0));
    let again = moment(3, Trigger::Ended, 600);
    ledger.saw(std::slice::from_ref(&again), &obs(3, CauseKind::NonZeroExit), false, t(600));
    assert_eq!(due(&ledger.take(t(601))), [(again.event_name(), CauseKind::NonZeroExit)]);
    ledger.forget(&again.uid);
    assert!(ledger.entries.is_empty() && ledger.names.is_empty());
}

/// One step of a replica's life.
#[derive(Clone, Debug)]
enum Step {
    /// TrainJob `job` is read with these moments (by trigger and time).
    Saw { job: u8, moments: Vec<(bool, u8)> },
    /// Time passes, and the replica takes what is due; each due Event's create
    /// succeeds unless `fails`.
    Take { seconds: u16, fails: bool },
    /// The TrainJob is deleted.
    Gone { job: u8 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..4u8, proptest::collection::vec((any::<bool>(), 0..4u8), 0..3))
            .prop_map(|(job, moments)| Step::Saw { job, moments }),
        (0..400u16, any::<bool>()).prop_map(|(seconds, fails)| Step::Take { seconds, fails }),
        (0..4u8).prop_map(|job| Step::Gone { job }),
    ]
}

proptest! {
    /// Whatever the steps: no Event is created twice by one replica; no moment shown
    /// at a TrainJob's first sight is ever due; nothing is due before it settled or
    /// after it lapsed.
    #[test]
    fn a_replica_reports_each_moment_at_most_once_and_none_from_before_it_saw_the_job(
        steps in proptest::collection::vec(step(), 0..60),
    ) {
        let mut ledger = Ledger::new(SETTLE, CATCH_UP);
        let mut now = t(0);
        let mut known: BTreeSet<u8> = BTreeSet::new();
        let mut gone: BTreeSet<u8> = BTreeSet::new();
        let mut before: BTreeSet<String> = BTreeSet::new();
        let mut first_seen: BTreeMap<String, Timestamp> = BTreeMap::new();
        let mut created: BTreeSet<String> = BTreeSet::new();
        for step in steps {
            match step {
                Step::Saw { job, moments } if !gone.contains(&job) => {
                    let moments: Vec<Moment> = moments
                        .into_iter()
                        .map(|(ended, at)| {
                            let trigger = if ended { Trigger::Ended } else { Trigger::Evicted };
                            moment(job, trigger, i64::from(at) * 1000)
                        })
                        .collect();
                    let first = known.insert(job);
                    for m in &moments {
                        let name = m.event_name();
                        if first && !first_seen.contains_key(&name) {
                            before.insert(name.clone());
                        }
                        first_seen.entry(name).or_insert(now);
                    }
                    ledger.saw(&moments, &obs(job, CauseKind::Unknown), first, now);
                }
                Step::Saw { .. } => {}
                Step::Take { seconds, fails } => {
                    now += SignedDuration::from_secs(i64::from(seconds));
                    for r in ledger.take(now) {
                        let Reckoning::Due(m, _) = r else { continue };
                        let name = m.event_name();
                        prop_assert!(!before.contains(&name), "due from before: {name}");
                        let since = first_seen[&name];
                        prop_assert!(now >= since + SETTLE && now < since + CATCH_UP);
                        if !fails {
                            prop_assert!(created.insert(name.clone()), "created twice: {name}");
                            ledger.reported(&name);
                        }
                    }
                }
                Step::Gone { job } => {
                    // A deleted TrainJob's UID never comes back.
                    ledger.forget(&format!("{job:08x}-0000"));
                    gone.insert(job);
                }
            }
        }
    }
}
