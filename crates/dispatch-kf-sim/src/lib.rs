//! dispatch-kf-sim: a simulated Kubernetes apiserver, good enough that the real
//! `kube::Client` cannot tell it from a real one for everything dispatch's Kubeflow
//! adapter does, and able to fail on purpose.
//!
//! It is the project's test double and its embedded demo cluster, never a production
//! component. It is independent of `dispatch-kf-model` and `dispatch-core` (a bug shared
//! by both sides would pass every test): it works on JSON objects.
//!
//! - [`Sim::start`] serves HTTPS on 127.0.0.1 at an ephemeral port, with a CA made at
//!   start (plain HTTP with `SimOptions::tls = false`); [`Sim::kubeconfig_yaml`] gives
//!   a kubeconfig per [`Identity`], carrying the CA.
//! - The store, admission and handlers follow the apiserver (`docs/dev/sim.md` lists what
//!   is simulated and what is not yet).
//! - Controllers run on a virtual clock: [`Sim::settle`], [`Sim::advance`]; by default
//!   every mutating request settles them.
//! - [`Fault`] rules and [`Sim::set_refusing`] inject failures; [`Sim::requests`] reads
//!   back what reached the server and whether it took effect.
//!
//! # A cluster in a test
//!
//! A demo cluster (two Ready nodes of eight GPUs, the `torch-distributed` runtime), read
//! by a real `kube::Client` over HTTP, then a pod that does not exist on a virtual clock
//! that only moves when told:
//!
//! ```
//! use std::time::Duration;
//!
//! use dispatch_kf_sim::{Sim, SimOptions};
//! use k8s_openapi::api::core::v1::Node;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sim = Sim::start_demo(SimOptions::default(), 2, 8).await?;
//! let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml("admin")?)?;
//! let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
//! let client = kube::Client::try_from(config)?;
//!
//! let nodes = kube::Api::<Node>::all(client.clone()).list(&Default::default()).await?;
//! let names: Vec<_> = nodes.items.iter().filter_map(|n| n.metadata.name.clone()).collect();
//! assert_eq!(names, ["gpu-0", "gpu-1"]);
//! let pods = kube::Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client, "default");
//! let missing = pods.get("nothing").await.unwrap_err();
//! assert!(matches!(missing, kube::Error::Api(ref status) if status.code == 404), "{missing}");
//!
//! let before = sim.now();
//! sim.advance(Duration::from_secs(60));
//! assert_eq!(sim.now().duration_since(before).as_secs(), 60);
//! # Ok(())
//! # }
//! ```

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// The layers, bottom to top (`tests/layers.rs` keeps each to the ones below it).
mod controllers;
mod facade;
mod http;
mod plain;
mod registry;
mod store;

pub use facade::demo::{kueue_setup, torch_distributed};
pub use facade::sim::{Sim, SimError, SimOptions};
pub use http::tls::TlsError;
pub use plain::apierror::ApiError;
pub use plain::auth::{Access, Identity, Rule};
pub use plain::faults::{Fault, FaultAction};
pub use plain::managed::owner_of;
pub use plain::object::keys::TRAINER_CONTROLLER;
pub use plain::resources::{RESOURCES, Resource, by_plural};
pub use plain::schema::Releases;
pub use plain::selector::Selector;
pub use registry::Propagation;
pub use store::RequestRecord;
