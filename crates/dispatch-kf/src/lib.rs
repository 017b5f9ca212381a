//! dispatch's Kubeflow Trainer v2 backend: the [`KubeflowBackend`].
//!
//! A thin composition: the model decides (render, read-back, classification, the hold
//! family's edits, capability answers) and the client talks to the apiserver (every
//! failure already classified). This crate orders the steps, keeps what only a running
//! Backend can know (its in-flight creates, whether it is closed), and makes its own
//! refusals (read-only, observe-only, references that are not its own).
//!
//! - [`KubeflowBackend::new`]: Factory and preflight ([`Preflight`]).
//! - Start: `start.rs`, the nine steps of `docs/backend.md#start`.
//! - Find and Inspect: `find.rs`; Stop and StopJob: `stop.rs`.
//! - Open, Hold, Release: `holds.rs`.
//! - Watch and the deleted pods' evidence it keeps: `watch.rs`, `evidence.rs`.
//! - Output and Ceased: `output.rs`.
//! - [`explain()`]: any TrainJob's observation, dispatch's or not, without settings or a
//!   Backend (`explain.rs`).
//!
//! # A job on the simulated cluster
//!
//! Factory on a `dispatch-kf-sim` cluster with two GPU nodes and the stock
//! `torch-distributed` runtime, then Start, Open and Inspect through the [`Backend`]
//! trait, the way a supervisor drives it:
//!
//! ```
//! use std::time::Duration;
//!
//! use dispatch_core::{Backend, CallContext, JobId, ObjectState, StartRequest};
//! use dispatch_kf::KubeflowBackend;
//! use dispatch_kf_client::Cluster;
//! use dispatch_kf_model::Settings;
//! use dispatch_kf_sim::{Sim, SimOptions};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sim = Sim::start_demo(SimOptions::default(), 2, 8).await?;
//! sim.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}))?;
//! let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml("admin")?)?;
//! let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
//! let cluster = Cluster::from_kube_config(config, Duration::from_secs(5))?;
//!
//! let settings = Settings::from_value(&json!({
//!     "name": "kf", "namespace": "team-a",
//!     "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}],
//!     // Factory's preflight probe waits this long for the sim's controllers.
//!     "timeouts": {"request": "5s", "workload": "2s"},
//! }))?;
//! let cx = CallContext::background();
//! let backend = KubeflowBackend::with_cluster(settings, cluster, &cx).await?;
//!
//! let request: StartRequest = serde_json::from_value(json!({
//!     "job": "01JDQ4V8Z6K3M0B7X2N5R9T1CE", "submission": 1,
//!     "spec": {"command": ["python", "train.py"], "nodes": 2, "gpusPerNode": 8,
//!              "extensions": {
//!                  "dispatch/Image": {"ref": "ghcr.io/acme/train:1.4"},
//!                  "kubeflow/RuntimeRef":
//!                      {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
//!              }},
//! }))?;
//! let object = backend.start(&cx, &request).await?;
//! assert_eq!(backend.inspect(&cx, &object).await?.state, ObjectState::Gated);
//!
//! let hold_cx = CallContext::with_deadline(std::time::Instant::now() + Duration::from_secs(30));
//! backend.open(&hold_cx, &object).await?;
//! sim.settle();
//! assert_eq!(backend.inspect(&cx, &object).await?.state, ObjectState::Running);
//! let job = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE")?;
//! assert_eq!(backend.find(&cx, &job).await?.objects.len(), 1);
//! backend.close().await;
//! # Ok(())
//! # }
//! ```

/// The README's example, compiled as a doc test (it needs a cluster, so it does not run).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod coalesce;
mod edge;
mod evidence;
mod explain;
mod factory;
mod find;
mod holds;
mod hub;
mod inflight;
mod kueue_mode;
mod output;
mod probe;
mod refs;
mod start;
mod stop;
mod watch;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dispatch_core::{
    Backend, CallContext, Capability, Cessation, CessationSignal, Declarations, Discovery, Error,
    JobId, JobSpec, LogStream, ObjectObs, ObjectRef, OutputStream, RecoveryPolicy, Result,
    RuleSupport, StartRequest, Support,
};
use dispatch_kf_model::internal::capabilities::{self, Writability};

pub use explain::{Explain, ModeChoice, explain, explain_pages};
pub use factory::{Preflight, Reads};
// What a user of the Backend needs besides `dispatch-core`, so that this crate and that
// one are the two a supervisor adds (`docs/library.md`): the settings, the mode and the
// start request's reader (the model's), and a cluster connection made by hand (the
// client's, for `KubeflowBackend::with_cluster`).
pub use dispatch_kf_client::{Cluster, ClusterConfig};
pub use dispatch_kf_model::{Mode, Settings, read_request};
use inflight::InFlightMarks;

/// dispatch's backend for Kubeflow Trainer v2 on one namespace of one cluster.
#[derive(Clone)]
pub struct KubeflowBackend {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) settings: Settings,
    pub(crate) cluster: Cluster,
    pub(crate) preflight: Preflight,
    closed: AtomicBool,
    pub(crate) in_flight: InFlightMarks,
    pub(crate) evidence: Arc<evidence::Evidence>,
    pub(crate) hub: hub::Hub,
}

impl KubeflowBackend {
    /// What Factory findings: each capability's answer and whether the backend writes.
    pub fn preflight(&self) -> &Preflight {
        &self.inner.preflight
    }

    /// The settings it was made with.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }
}

impl Inner {
    /// Every call on a closed Backend is `Unreachable`.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::unreachable("the backend is closed"))
        } else {
            Ok(())
        }
    }

    /// A write other than Start: refused on a read-only or an observe-only Backend.
    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        match &self.preflight.access {
            Writability::Writable => Ok(()),
            Writability::ReadOnly => Err(Error::read_only("the backend is read-only")),
            Writability::ObserveOnly { missing } => {
                Err(Error::read_only(format!("the backend is observe-only: {missing}")))
            }
        }
    }
}

#[async_trait::async_trait]
impl CessationSignal for KubeflowBackend {
    async fn ceased(&self, cx: &CallContext, object: &ObjectRef) -> Result<Cessation> {
        self.inner.ceased(cx, object).await
    }
}

#[async_trait::async_trait]
impl Backend for KubeflowBackend {
    fn declarations(&self) -> Declarations {
        let s = &self.inner.settings;
        Declarations {
            node_loss_window: s.node_loss_window,
            polled_loss: false,
            call_bound: s.timeouts.call_bound,
        }
    }

    async fn capabilities(
        &self,
        cx: &CallContext,
        spec: Option<&JobSpec>,
    ) -> Result<BTreeMap<Capability, Support>> {
        self.inner.check_open()?;
        let runtime = match spec {
            Some(spec) => Some(self.inner.runtime_for_capabilities(cx, spec).await?),
            None => None,
        };
        Ok(capabilities::answers(&self.inner.preflight.facts, runtime.as_ref()))
    }

    async fn rules(&self, _cx: &CallContext, policy: &RecoveryPolicy) -> Result<Vec<RuleSupport>> {
        self.inner.check_open()?;
        let hold = &self.inner.preflight.capabilities[&Capability::Hold];
        Ok(policy.rules.iter().map(|rule| capabilities::rule_support(rule.action, hold)).collect())
    }

    async fn start(&self, cx: &CallContext, request: &StartRequest) -> Result<ObjectRef> {
        self.inner.start(cx, request).await
    }

    async fn find(&self, cx: &CallContext, job: &JobId) -> Result<Discovery> {
        self.inner.find(cx, job).await
    }

    async fn inspect(&self, cx: &CallContext, object: &ObjectRef) -> Result<ObjectObs> {
        self.inner.inspect(cx, object).await
    }

    async fn stop(&self, cx: &CallContext, object: &ObjectRef) -> Result<()> {
        self.inner.stop(cx, object).await
    }

    async fn stop_job(&self, cx: &CallContext, job: &JobId) -> Result<()> {
        self.inner.stop_job(cx, job).await
    }

    async fn open(&self, cx: &CallContext, object: &ObjectRef) -> Result<()> {
        self.inner.open(cx, object).await
    }

    async fn hold(&self, cx: &CallContext, object: &ObjectRef, instance: u64) -> Result<()> {
        self.inner.hold(cx, object, instance).await
    }

    async fn release(&self, cx: &CallContext, object: &ObjectRef, instance: u64) -> Result<()> {
        self.inner.release(cx, object, instance).await
    }

    async fn output(
        &self,
        cx: &CallContext,
        job: &JobId,
        submission: u32,
        stream: OutputStream,
        follow: bool,
    ) -> Result<LogStream> {
        self.inner.output(cx, job, submission, stream, follow).await
    }

    async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
    }
}
