//! The hold family's invariant, as a property over random interleavings of Open, Hold
//! and Release with conflicts and connection resets
//! (`docs/backend.md#open-hold-and-release`): a caller that retries every call with an
//! unknown outcome never ends with a hold instance other than the last one granted, and
//! never has the admission count raised twice for one Release.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use dispatch_core::{Backend, Kind, ObjectRef};
use dispatch_kf_model::keys;
use dispatch_kf_sim::{Fault, FaultAction};
use dispatch_kf_testkit::*;
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Op {
    Open,
    /// Hold with a new instance.
    Hold,
    /// Release the instance in force (or the last one, when none is).
    Release,
    /// Release an instance that was never granted.
    ReleaseStale,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![Just(Op::Open), Just(Op::Hold), Just(Op::Release), Just(Op::ReleaseStale)]
}

fn fault() -> impl Strategy<Value = Option<FaultAction>> {
    prop_oneof![
        3 => Just(None),
        2 => Just(Some(Fault::status(409, "Conflict", "the object has been modified"))),
        2 => Just(Some(FaultAction::ResetBeforeApply)),
        2 => Just(Some(FaultAction::ResetAfterApply)),
    ]
}

/// What the caller expects, from the answers it got.
#[derive(Debug, Default)]
struct Expected {
    instance: Option<u64>,
    granted: u64,
    admission: u64,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| World::new(Duration::from_secs(5)))
}

static NEXT_JOB: AtomicU32 = AtomicU32::new(5000);

/// Runs `op` once with `fault` on its first write, then retries it without faults
/// while its outcome is unknown, as the supervisor does.
fn run(
    w: &World,
    object: &ObjectRef,
    op: Op,
    k: u64,
    fault: &Option<FaultAction>,
) -> dispatch_core::Result<()> {
    if let Some(action) = fault {
        w.sim.add_fault(Fault::on("update", "trainjobs", action.clone()).named(&object.name));
    }
    let mut result = call(w, object, op, k);
    w.sim.clear_faults();
    while matches!(&result, Err(e) if e.is(Kind::OutcomeUnknown)) {
        result = call(w, object, op, k);
    }
    w.sim.settle();
    w.sim.advance(Duration::from_secs(60));
    result
}

fn call(w: &World, object: &ObjectRef, op: Op, k: u64) -> dispatch_core::Result<()> {
    let b = &w.backend;
    w.runtime.block_on(async {
        match op {
            Op::Open => b.open(&hold_cx(), object).await,
            Op::Hold => b.hold(&hold_cx(), object, k).await,
            Op::Release | Op::ReleaseStale => b.release(&hold_cx(), object, k).await,
        }
    })
}

/// The hold instance and admission count the TrainJob holds.
fn held(w: &World, object: &ObjectRef) -> (Option<u64>, u64) {
    let tj = w.sim.get("trainjobs", NS, &object.name).unwrap();
    let annotation = |k: &str| tj["metadata"]["annotations"][k].as_str().map(str::to_owned);
    let instance = annotation(keys::ANN_HOLD_INSTANCE).map(|v| v.parse().unwrap());
    let admission = annotation(keys::ANN_ADMISSION).map_or(0, |v| v.parse().unwrap());
    (instance, admission)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn holds_end_as_granted_and_each_release_counts_once(steps in proptest::collection::vec((op(), fault()), 1..7)) {
        let w = world();
        let job = job(NEXT_JOB.fetch_add(1, Ordering::Relaxed));
        let object = w.runtime.block_on(w.backend.start(&cx(), &request(&job, 1))).unwrap();
        let mut expected = Expected::default();
        for (op, fault) in &steps {
            let k = match op {
                Op::Hold => expected.granted + 1,
                Op::Release => expected.instance.unwrap_or(expected.granted.max(1)),
                Op::ReleaseStale => expected.granted + 100,
                Op::Open => 0,
            };
            let result = run(w, &object, *op, k, fault);
            match (op, expected.instance) {
                (Op::Open, _) => {
                    prop_assert!(result.is_ok(), "{:?}", result);
                    expected.admission = expected.admission.max(1);
                }
                (Op::Hold, Some(_)) | (Op::ReleaseStale, Some(_)) => {
                    prop_assert!(matches!(&result, Err(e) if e.is_stale_hold()), "{:?}", result);
                }
                (Op::Hold, None) => {
                    prop_assert!(result.is_ok(), "{:?}", result);
                    expected.instance = Some(k);
                    expected.granted = k;
                }
                (Op::Release, Some(_)) => {
                    prop_assert!(result.is_ok(), "{:?}", result);
                    expected.instance = None;
                    if expected.admission >= 1 {
                        expected.admission += 1;
                    }
                }
                (Op::Release, None) | (Op::ReleaseStale, None) => {
                    prop_assert!(result.is_ok(), "a retried or needless Release succeeds: {:?}", result);
                }
            }
            prop_assert_eq!(held(w, &object), (expected.instance, expected.admission), "after {:?} with {:?}", op, fault);
        }
    }
}
