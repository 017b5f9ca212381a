//! Pure, deterministic render and classification for dispatch's Kubeflow Trainer
//! backend: no I/O, no clock, no randomness.
//!
//! Time enters as a `now` parameter and tokens as arguments made by the caller, so the
//! same inputs always give byte-identical objects and observations. Nothing here talks
//! to a cluster: the client reads, this crate decides, the Backend composes the two.

pub mod keys;
pub mod mode;
pub mod names;

pub use mode::Mode;
