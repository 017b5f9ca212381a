//! dispatch-kf-sim: a simulated Kubernetes apiserver, good enough that the real
//! `kube::Client` cannot tell it from a real one for everything dispatch's Kubeflow
//! adapter does, and able to fail on purpose.
//!
//! It is the project's test double and its embedded demo cluster, never a production
//! component. It is independent of `dispatch-kf-model` and `dispatch-core` (a bug shared
//! by both sides would pass every test): it works on JSON objects.
//!
//! - [`Sim::start`] serves HTTP/1.1 on 127.0.0.1 at an ephemeral port;
//!   [`Sim::kubeconfig_yaml`] gives a kubeconfig per [`Identity`].
//! - The store, admission and handlers follow the apiserver (`docs/sim.md` lists what
//!   is simulated and what is not yet).
//! - Controllers run on a virtual clock: [`Sim::settle`], [`Sim::advance`]; by default
//!   every mutating request settles them.
//! - [`Fault`] rules and [`Sim::set_refusing`] inject failures; [`Sim::requests`] reads
//!   back what reached the server and whether it took effect.

mod admission;
mod api;
mod apierror;
mod auth;
mod collection;
mod controllers;
mod delete;
mod demo;
mod discovery;
mod faults;
mod logs;
mod managed;
mod patch;
mod read;
mod request;
mod resources;
mod selector;
mod server;
mod sim;
mod state;
mod store;
mod verbs;
mod watch;
mod write;

pub use admission::TRAINER_CONTROLLER;
pub use apierror::ApiError;
pub use auth::{Access, Identity, Rule};
pub use delete::Propagation;
pub use demo::{kueue_setup, torch_distributed};
pub use faults::{Fault, FaultAction};
pub use managed::owner_of;
pub use resources::{RESOURCES, Resource, by_plural};
pub use selector::Selector;
pub use sim::{Sim, SimError, SimOptions};
pub use state::RequestRecord;
