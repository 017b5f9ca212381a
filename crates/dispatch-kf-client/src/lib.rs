//! The apiserver for dispatch's Kubeflow backend, with every failure classified.
//!
//! Every request goes through [`Cluster::call`], which decides the two cases that are
//! settled before a request goes out and turns any failure into the sentinel of
//! `docs/errors.md#how-the-client-classifies-a-failed-request` through the one table in
//! [`error_map`]. Nothing above this crate inspects a `kube::Error`.
//!
//! # Wrapping a kube client
//!
//! [`Cluster::connect`] loads a kubeconfig (or the in-cluster configuration);
//! [`Cluster::from_kube_config`] takes a `kube::Config` already made. Either way, a
//! request is a closure over a `kube::Client` handed to [`Cluster::call`] with its
//! [`RequestClass`](error_map::RequestClass); what comes back is a `dispatch_core::Error` whose
//! [`Kind`](dispatch_core::Kind) the supervisor acts on. This example runs without a
//! cluster: nothing listens at the address, so the read is `Unreachable`.
//!
//! ```
//! use std::time::{Duration, Instant};
//!
//! use dispatch_core::{CallContext, Kind};
//! use dispatch_kf_client::Cluster;
//! use dispatch_kf_client::error_map::{DEADLINE_PASSED, RequestClass};
//! use k8s_openapi::api::core::v1::Namespace;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> dispatch_core::Result<()> {
//! // Any kube configuration; here, an apiserver address where nothing listens.
//! let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
//! let cluster = Cluster::from_kube_config(config, Duration::from_secs(5))?;
//!
//! // Every request goes through `call`, which turns its failure into a sentinel.
//! let get = |client: kube::Client| async move {
//!     kube::Api::<Namespace>::all(client).get("default").await
//! };
//! let cx = CallContext::background();
//! let error = cluster.call(&cx, RequestClass::Read, "get Namespace default", get).await;
//! let error = error.unwrap_err();
//! assert!(error.is(Kind::Unreachable), "{error}");
//!
//! // A write whose deadline has passed is never sent: Unreachable for a plain write,
//! // Rejected for Open, Hold and Release (the hold family).
//! let late = CallContext::with_deadline(Instant::now());
//! let create = |client: kube::Client| async move {
//!     let namespaces = kube::Api::<Namespace>::all(client);
//!     namespaces.create(&Default::default(), &Namespace::default()).await
//! };
//! let error = cluster.call(&late, RequestClass::HoldWrite, "create Namespace", create).await;
//! let error = error.unwrap_err();
//! assert!(error.is(Kind::Rejected) && error.message().ends_with(DEADLINE_PASSED), "{error}");
//! # Ok(())
//! # }
//! ```

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod cancel;
mod cluster;
pub mod error_map;
mod gets;
mod identity;
mod nodes;
mod objects;
mod pages;
mod probe;
pub mod resources;
mod snapshot;
mod streams;
mod survey;
mod transport;
mod watch;

pub use cancel::cancellable;
pub use cluster::{Cluster, ClusterConfig, WATCH_TIMEOUT};
pub use identity::Identity;
pub use nodes::{HOSTNAME_LABEL, NodeReads};
pub use objects::{
    CONFLICT_TRIES, Created, Deleted, JOB_LIST_PAGE, LIST_PAGE, LIST_RESTARTS, Objects,
};
pub use pages::{Pages, storage_order, storage_order_of};
pub use probe::Permission;
pub use snapshot::{JobQuery, Known, KnownNames};
pub use survey::Scope;
pub use transport::redacted;
pub use watch::{Change, Changes, DEAD_WATCHES};
