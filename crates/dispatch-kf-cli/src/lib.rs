//! `dispatch-kf` (and the kubectl plugin `kubectl-dispatch`): the command line of
//! dispatch's Kubeflow Trainer backend.
//!
//! The command lives in this library so that both binaries share it: [`main`] parses
//! the arguments as the named [`Program`], runs the subcommand and turns an error into
//! its line on standard error and its exit code. Each subcommand is a module with an
//! `Args` (clap) and a `run`. [`demo`] is public so that its scenarios can be run and
//! checked from tests.

mod classify;
mod cli;
mod connect;
#[cfg(feature = "sim")]
mod console;
#[cfg(feature = "sim")]
pub mod demo;
mod explain;
mod lifecycle;
mod observe;
mod output;
mod paged;
mod preflight;
mod preflight_cache;
mod private_file;
mod render;
mod settings;
mod shell;
#[cfg(feature = "sim")]
mod sim;
mod table;

pub use cli::{Program, main};
