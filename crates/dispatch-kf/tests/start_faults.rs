//! The supervisor's rule, as a property over random fault schedules on every request
//! Start makes (Start's invariant, `docs/backend.md#start`):
//!
//! - success: exactly the TrainJob it names exists;
//! - a refusal (Invalid, Unsupported, Rejected): no TrainJob of the submission is left;
//! - Unreachable: no TrainJob is left: none was created, or Start stopped the one it
//!   made after a passing fault and names it;
//! - OutcomeUnknown: the TrainJob exists, or Find reports the job InFlight, or the
//!   TrainJob Start made was deleted by its own stop;
//! - never two TrainJobs for one submission.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use dispatch_core::{Backend, Kind};
use dispatch_kf_model::names;
use dispatch_kf_sim::{Fault, FaultAction, RequestRecord};
use dispatch_kf_testkit::*;
use proptest::prelude::*;
use serde_json::json;

/// Every request Start can make, as (verb, resource).
const REQUESTS: [(&str, &str); 8] = [
    ("get", "clustertrainingruntimes"),
    ("create", "trainingruntimes"),
    ("get", "trainingruntimes"),
    ("delete", "trainingruntimes"),
    ("create", "trainjobs"),
    ("patch", "trainingruntimes"),
    ("get", "trainjobs"),
    ("delete", "trainjobs"),
];

fn action() -> impl Strategy<Value = FaultAction> {
    prop_oneof![
        3 => Just(FaultAction::ResetBeforeApply),
        3 => Just(FaultAction::ResetAfterApply),
        2 => Just(Fault::status(409, "Conflict", "the object has been modified")),
        2 => Just(Fault::status(422, "Invalid", "spec: Invalid value")),
        2 => Just(Fault::status(500, "InternalError", "etcd leader changed")),
        1 => Just(Fault::status(403, "Forbidden", "forbidden")),
        1 => Just(FaultAction::Delay(Duration::from_millis(1500))),
    ]
}

fn schedule() -> impl Strategy<Value = Vec<Fault>> {
    let fault = (0..REQUESTS.len(), prop_oneof![3 => Just(1u32), 1 => Just(2u32)], action())
        .prop_map(|(i, nth, action)| {
            let (verb, resource) = REQUESTS[i];
            Fault::on(verb, resource, action).nth(nth)
        });
    proptest::collection::vec(fault, 1..4)
}

/// One cluster and one Backend for every case, with a short request timeout so that a
/// delayed answer is a timeout.
fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| World::new(Duration::from_secs(1)))
}

fn took_effect(records: &[RequestRecord], verb: &str, resource: &str, name: &str) -> bool {
    records.iter().any(|r| r.verb == verb && r.resource == resource && r.name == name && r.effect)
}

fn created_train_job(records: &[RequestRecord], name: &str) -> bool {
    // A create carries its name in the body, not the path: the log names it after the fact.
    records.iter().any(|r| {
        r.verb == "create"
            && r.resource == "trainjobs"
            && r.effect
            && (r.name == name || r.name.is_empty())
    })
}

static NEXT_JOB: AtomicU32 = AtomicU32::new(1000);

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn start_never_leaves_a_job_half_made_or_running_twice(faults in schedule()) {
        let w = world();
        let job = job(NEXT_JOB.fetch_add(1, Ordering::Relaxed));
        let name = names::make(&job, 1);
        w.sim.clear_faults();
        w.sim.clear_requests();
        for fault in faults.clone() {
            w.sim.add_fault(fault.named_or_any(&name));
        }
        let result = w.runtime.block_on(w.backend.start(&cx(), &request(&job, 1)));
        w.sim.clear_faults();
        let records = w.sim.requests();
        let exists = w.sim.get("trainjobs", NS, &name);
        let count = w.sim.list("trainjobs", NS).iter().filter(|t| t["metadata"]["name"] == name.as_str()).count();
        prop_assert!(count <= 1);
        match &result {
            Ok(object) => {
                let uid = exists.as_ref().map(|t| t["metadata"]["uid"].clone());
                prop_assert_eq!(uid, Some(json!(object.uid)), "success names the TrainJob that exists");
            }
            Err(e) if e.is_refusal() => {
                prop_assert!(exists.is_none(), "a refusal ({:?}) left the TrainJob: {:?}; faults {:?}", e, records, faults);
            }
            Err(e) if e.is(Kind::Unreachable) => {
                prop_assert!(exists.is_none(), "Unreachable with the TrainJob left: {:?}", e);
                if created_train_job(&records, &name) {
                    let stopped = took_effect(&records, "delete", "trainjobs", &name);
                    prop_assert!(stopped && e.object().is_some(), "Unreachable after a TrainJob was created and not stopped by Start: {:?}", e);
                }
            }
            Err(e) if e.is(Kind::OutcomeUnknown) => {
                let in_flight = w.runtime.block_on(w.backend.find(&cx(), &job)).map(|d| d.in_flight.is_some()).unwrap_or(false);
                let stopped = took_effect(&records, "delete", "trainjobs", &name);
                prop_assert!(exists.is_some() || in_flight || stopped, "OutcomeUnknown with nothing to show for it: {:?}", e);
            }
            Err(e) => {
                // Unauthorized (a forbidden request): the supervisor treats it as an
                // unknown outcome. NotFound is never an answer of Start.
                prop_assert!(e.is(Kind::Unauthorized), "{:?}; faults {:?}", e, faults);
            }
        }
    }
}

/// Faults on named requests match this case's objects only; creates carry no name in
/// their path, and the source runtime is shared, so those match any.
trait NamedOrAny {
    fn named_or_any(self, name: &str) -> Fault;
}

impl NamedOrAny for Fault {
    fn named_or_any(self, name: &str) -> Fault {
        let unnamed = self.verb.as_deref() == Some("create")
            || self.resource.as_deref() == Some("clustertrainingruntimes");
        if unnamed { self } else { self.named(name) }
    }
}
