//! Pure, deterministic render and classification for dispatch's Kubeflow Trainer
//! backend: no I/O, no clock, no randomness.
//!
//! Time enters as a `now` parameter and tokens as arguments made by the caller, so the
//! same inputs always give byte-identical objects and observations. Nothing here talks
//! to a cluster: the client reads, this crate decides, the Backend composes the two.

pub mod answer;
pub mod capabilities;
pub mod classify;
pub mod dump;
pub mod gates;
pub mod json;
pub mod keys;
pub mod kueue;
pub mod last_setters;
pub mod lenient;
pub mod mode;
pub mod names;
pub mod object;
pub mod snapshot;
pub mod view;

pub use classify::{ClassifyOptions, classify};
pub use mode::Mode;
pub use snapshot::Snapshot;
pub mod prologue;
pub mod ranks;
pub mod readback;
pub mod readmission;
pub mod render;
pub mod runtime;
pub mod settings;

pub use render::request::read_request;
pub use render::{Purpose, Rendered, probe_request, render};
pub use runtime::{RuntimeKind, RuntimeRef, SourceRuntime};
pub use settings::Settings;
