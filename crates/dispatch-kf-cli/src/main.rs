//! `dispatch-kf`: the command line of dispatch's Kubeflow Trainer backend.
//!
//! Each subcommand is a module with an `Args` (clap) and a `run`; this file only
//! dispatches and turns an error into its line on standard error and its exit code.

mod output;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// dispatch's Kubeflow Trainer backend: render jobs into TrainJobs and say why they stopped.
#[derive(Parser)]
#[command(name = "dispatch-kf", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: dispatch_core::Result<()> = match cli.command {};
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => output::report(&err),
    }
}
