//! The traits a backend implements, and the call context every call takes.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use futures_core::Stream;

use crate::{
    Action, Answer, Capability, Discovery, JobId, JobSpec, ObjectObs, ObjectRef, RecoveryPolicy,
    Result, StartRequest, Support, Timespan,
};

/// What tells a call that its caller gave up. This crate runs no runtime, so it names
/// only the shape; the client gives one on tokio (`dispatch_kf_client::cancellable`).
pub trait Cancellation: Send + Sync + std::fmt::Debug {
    /// Whether the caller has given up.
    fn is_cancelled(&self) -> bool;
    /// Resolves once the caller gives up.
    fn cancelled(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// A call's deadline and cancellation: what Go passes as `context.Context`.
///
/// The deadline is a value on the caller's monotonic clock; this crate never reads the
/// clock. The client compares it with the time when a request is about to go out.
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// When the call must be done, if ever.
    pub deadline: Option<Instant>,
    /// How the caller can give up; `None`: it never does.
    pub cancel: Option<Arc<dyn Cancellation>>,
}

impl CallContext {
    /// A context with no deadline that is never cancelled.
    pub fn background() -> CallContext {
        CallContext::default()
    }

    /// A context that must be done by `deadline`.
    pub fn with_deadline(deadline: Instant) -> CallContext {
        CallContext { deadline: Some(deadline), cancel: None }
    }

    /// Whether the caller has given up.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.is_cancelled())
    }

    /// Resolves once the caller gives up; never, for a context that cannot be cancelled.
    pub async fn cancelled(&self) {
        match &self.cancel {
            Some(cancel) => cancel.cancelled().await,
            None => std::future::pending().await,
        }
    }
}

/// What a backend declares about itself.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Declarations {
    /// How long an object may report running with cause node-lost before the
    /// supervisor treats its execution as ended.
    pub node_loss_window: Timespan,
    /// True when loss is only seen by polling; false for a [`Watcher`].
    pub polled_loss: bool,
    /// How long after a write was sent it may still take effect.
    pub call_bound: Timespan,
}

/// Whether one rule's action can be carried out here.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleSupport {
    /// The rule's action.
    pub action: Action,
    /// The answer.
    pub answer: Answer,
    /// Why.
    pub reason: String,
}

/// Which of a program's output streams to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputStream {
    /// Standard output (on Kubernetes: the interleaved log).
    Stdout,
    /// Standard error.
    Stderr,
}

/// Bytes of a log, as they come.
pub type LogStream = Pin<Box<dyn Stream<Item = Result<Vec<u8>>> + Send>>;

/// Observations, as they change. An `Err` item is the last: the watch failed (its
/// apiserver stayed unreachable, a read failed), as distinct from the clean end the
/// call's own end makes.
pub type ObsStream = Pin<Box<dyn Stream<Item = Result<ObjectObs>> + Send>>;

/// What a backend can do, start, report, stop and hold.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// What the backend declares about itself.
    fn declarations(&self) -> Declarations;

    /// A support per capability; with a spec, for that spec's runtime.
    async fn capabilities(
        &self,
        cx: &CallContext,
        spec: Option<&JobSpec>,
    ) -> Result<BTreeMap<Capability, Support>>;

    /// Whether each rule of `policy` can be carried out here.
    async fn rules(&self, cx: &CallContext, policy: &RecoveryPolicy) -> Result<Vec<RuleSupport>>;

    /// Starts one submission; returns the reference of the object made.
    async fn start(&self, cx: &CallContext, request: &StartRequest) -> Result<ObjectRef>;

    /// Every object of the job, orphans included.
    async fn find(&self, cx: &CallContext, job: &JobId) -> Result<Discovery>;

    /// One object.
    async fn inspect(&self, cx: &CallContext, object: &ObjectRef) -> Result<ObjectObs>;

    /// Stops one object; an object already gone is success.
    async fn stop(&self, cx: &CallContext, object: &ObjectRef) -> Result<()>;

    /// Stops every object of the job and waits until none remains.
    async fn stop_job(&self, cx: &CallContext, job: &JobId) -> Result<()>;

    /// Lifts the object's start gate.
    async fn open(&self, cx: &CallContext, object: &ObjectRef) -> Result<()>;

    /// Puts hold `instance` (1 or more) in force.
    async fn hold(&self, cx: &CallContext, object: &ObjectRef, instance: u64) -> Result<()>;

    /// Releases hold `instance`.
    async fn release(&self, cx: &CallContext, object: &ObjectRef, instance: u64) -> Result<()>;

    /// Rank 0's output of the submission's current execution.
    async fn output(
        &self,
        cx: &CallContext,
        job: &JobId,
        submission: u32,
        stream: OutputStream,
        follow: bool,
    ) -> Result<LogStream>;

    /// Closes the backend; every later call is `Unreachable`.
    async fn close(&self);
}

/// A backend that pushes changes rather than being polled.
#[async_trait::async_trait]
pub trait Watcher: Send + Sync {
    /// Observations of the job's objects: all of them first, then each that changes.
    /// The stream ends without an error only when the call ends (or the caller drops
    /// it); a watch that fails ends with an `Err` item saying why: subscribe again.
    async fn watch(&self, cx: &CallContext, job: &JobId) -> Result<ObsStream>;
}

/// One node's part in a cessation answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeState {
    /// The node's name.
    pub node: String,
    /// Whether the node can no longer run anything of the object.
    pub ceased: bool,
    /// What the node's state is: deleted, out of service, Ready, ...
    pub state: String,
}

/// Whether everything an object ran on has ceased.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cessation {
    /// True when every node of the object's current or last execution has ceased.
    pub ceased: bool,
    /// Each node's state.
    pub nodes: Vec<NodeState>,
}

/// A backend that can prove an object's execution can no longer run.
#[async_trait::async_trait]
pub trait CessationSignal: Send + Sync {
    /// Whether every node of the object's current or last execution has ceased.
    async fn ceased(&self, cx: &CallContext, object: &ObjectRef) -> Result<Cessation>;
}
