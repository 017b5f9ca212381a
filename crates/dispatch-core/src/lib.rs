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
//!
//! # A backend
//!
//! A toy backend that keeps its jobs in memory: Start records an object, Find and
//! Inspect report it pending, Stop forgets it, and what it cannot do is `Unsupported`.
//! Nothing here runs a runtime, so the example polls each call once: the toy never
//! waits.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::Mutex;
//!
//! use dispatch_core::*;
//!
//! #[derive(Default)]
//! struct Toy {
//!     jobs: Mutex<BTreeMap<JobId, ObjectRef>>,
//! }
//!
//! impl Toy {
//!     fn observe(&self, object: &ObjectRef) -> ObjectObs {
//!         ObjectObs {
//!             object: object.clone(),
//!             submission: 1,
//!             state: ObjectState::Pending,
//!             admin_held: false,
//!             hold_instance: None,
//!             cause: Cause::none(),
//!             execution: None,
//!             foreign: false,
//!             seen_at: "2026-01-01T00:00:00Z".parse().unwrap(),
//!         }
//!     }
//! }
//!
//! #[async_trait::async_trait]
//! impl Backend for Toy {
//!     fn declarations(&self) -> Declarations {
//!         let span = |s| Timespan::parse(s).unwrap();
//!         Declarations { node_loss_window: span("5m"), polled_loss: true, call_bound: span("1m") }
//!     }
//!     async fn capabilities(
//!         &self,
//!         _: &CallContext,
//!         _: Option<&JobSpec>,
//!     ) -> Result<BTreeMap<Capability, Support>> {
//!         Ok(BTreeMap::new())
//!     }
//!     async fn rules(&self, _: &CallContext, _: &RecoveryPolicy) -> Result<Vec<RuleSupport>> {
//!         Ok(Vec::new())
//!     }
//!     async fn start(&self, _: &CallContext, request: &StartRequest) -> Result<ObjectRef> {
//!         request.spec.validate()?;
//!         let object = ObjectRef {
//!             backend: "toy".into(),
//!             kind: ObjectKind::TrainJob,
//!             namespace: "memory".into(),
//!             name: format!("{}-s{}", request.job.to_lowercase(), request.submission),
//!             uid: format!("uid-{}", request.submission),
//!         };
//!         self.jobs.lock().unwrap().insert(request.job.clone(), object.clone());
//!         Ok(object)
//!     }
//!     async fn find(&self, _: &CallContext, job: &JobId) -> Result<Discovery> {
//!         let jobs = self.jobs.lock().unwrap();
//!         let objects = jobs.get(job).map(|o| self.observe(o)).into_iter().collect();
//!         Ok(Discovery { job: job.clone(), objects, in_flight: None })
//!     }
//!     async fn inspect(&self, _: &CallContext, object: &ObjectRef) -> Result<ObjectObs> {
//!         let jobs = self.jobs.lock().unwrap();
//!         match jobs.values().find(|o| *o == object) {
//!             Some(o) => Ok(self.observe(o)),
//!             None => Err(Error::not_found(format!("no object {}", object.name))),
//!         }
//!     }
//!     async fn stop(&self, _: &CallContext, object: &ObjectRef) -> Result<()> {
//!         self.jobs.lock().unwrap().retain(|_, o| o != object);
//!         Ok(())
//!     }
//!     async fn stop_job(&self, _: &CallContext, job: &JobId) -> Result<()> {
//!         self.jobs.lock().unwrap().remove(job);
//!         Ok(())
//!     }
//!     async fn open(&self, _: &CallContext, _: &ObjectRef) -> Result<()> {
//!         Err(Error::unsupported("the toy has no start gate"))
//!     }
//!     async fn hold(&self, _: &CallContext, _: &ObjectRef, _: u64) -> Result<()> {
//!         Err(Error::unsupported("the toy cannot hold"))
//!     }
//!     async fn release(&self, _: &CallContext, _: &ObjectRef, _: u64) -> Result<()> {
//!         Err(Error::unsupported("the toy cannot hold"))
//!     }
//!     async fn output(
//!         &self,
//!         _: &CallContext,
//!         _: &JobId,
//!         _: u32,
//!         _: OutputStream,
//!         _: bool,
//!     ) -> Result<LogStream> {
//!         Err(Error::unsupported("the toy keeps no output"))
//!     }
//!     async fn close(&self) {}
//! }
//!
//! /// Runs a call of the toy, which is ready at once.
//! fn now<F: std::future::Future>(call: F) -> F::Output {
//!     let mut call = std::pin::pin!(call);
//!     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
//!     match call.as_mut().poll(&mut cx) {
//!         std::task::Poll::Ready(value) => value,
//!         std::task::Poll::Pending => unreachable!("the toy never waits"),
//!     }
//! }
//!
//! let toy = Toy::default();
//! let cx = CallContext::background();
//! let job = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE")?;
//! let command = vec!["python".into(), "train.py".into()];
//! let spec = JobSpec { command, nodes: 2, ..JobSpec::default() };
//! let (generation, submission, attempt) = (0, 1, 0);
//! let request =
//!     StartRequest { job: job.clone(), generation, submission, attempt, spec, native: vec![] };
//!
//! let object = now(toy.start(&cx, &request))?;
//! assert_eq!(object.name, "01jdq4v8z6k3m0b7x2n5r9t1ce-s1");
//! let found = now(toy.find(&cx, &job))?;
//! assert_eq!(found.objects[0].state, ObjectState::Pending);
//! assert!(now(toy.hold(&cx, &object, 1)).unwrap_err().is(Kind::Unsupported));
//!
//! // A spec the toy cannot run is refused before anything is made.
//! let bad = StartRequest { spec: JobSpec::default(), ..request };
//! assert!(now(toy.start(&cx, &bad)).unwrap_err().is(Kind::Invalid));
//!
//! now(toy.stop_job(&cx, &job))?;
//! assert!(now(toy.inspect(&cx, &object)).unwrap_err().is(Kind::NotFound));
//! # Ok::<(), Error>(())
//! ```

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

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
