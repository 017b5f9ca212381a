//! The apiserver for dispatch's Kubeflow backend, with every failure classified.
//!
//! Every request goes through [`Cluster::call`], which decides the two cases that are
//! settled before a request goes out and turns any failure into the sentinel of
//! `docs/errors.md#how-the-client-classifies-a-failed-request` through the one table in
//! [`error_map`]. Nothing above this crate inspects a `kube::Error`.

mod cancel;
mod cluster;
pub mod error_map;
mod objects;
mod probe;
pub mod resources;
mod snapshot;
mod streams;
mod transport;

pub use cancel::cancellable;
pub use cluster::{Cluster, ClusterConfig};
pub use dispatch_kf_model::gates::Edit;
pub use error_map::{Case, Outcome, RequestClass};
pub use objects::{CONFLICT_TRIES, Created, Deleted, LIST_RESTARTS, Objects};
pub use probe::Permission;
pub use resources::Resource;
pub use snapshot::JobQuery;
pub use streams::{Change, DEAD_WATCHES, WATCH_TIMEOUT};
pub use transport::redacted;
