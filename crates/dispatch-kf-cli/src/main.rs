//! `dispatch-kf`: the command line of dispatch's Kubeflow Trainer backend.
//!
//! Each subcommand is a module with an `Args` (clap) and a `run`; this file only
//! dispatches and turns an error into its line on standard error and its exit code.

mod classify;
mod connect;
mod console;
mod lifecycle;
mod observe;
mod output;
mod preflight;
mod render;
mod sim;
mod table;

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
enum Command {
    /// Print the runtime copy and the TrainJob that Start would create, or the refusal.
    Render(render::Args),
    /// Classify the objects of `kubectl get ... -o json` output, offline.
    Classify(classify::Args),
    /// Run Factory's checks and probe: every capability, and whether the adapter writes.
    Preflight(preflight::PreflightArgs),
    /// Every capability's answer; with a spec, for its runtime.
    Capabilities(preflight::CapabilitiesArgs),
    /// Start one submission of a job; prints the object reference.
    Start(lifecycle::StartArgs),
    /// Every object of a job, orphans included.
    Find(observe::FindArgs),
    /// A job's object-only status: running when any object is alive.
    Status(observe::StatusArgs),
    /// One object.
    Inspect(observe::InspectArgs),
    /// A line per observation of a job's objects, until interrupted.
    Watch(observe::WatchArgs),
    /// Rank 0's log of a submission's current execution.
    Logs(observe::LogsArgs),
    /// Lift a TrainJob's start gate.
    Open(lifecycle::RefArgs),
    /// Put a hold instance in force.
    Hold(lifecycle::HoldArgs),
    /// Release a hold instance.
    Release(lifecycle::HoldArgs),
    /// Stop one object (background deletion, if it is still that instance).
    Stop(lifecycle::RefArgs),
    /// Stop every object of a job and wait until none remains.
    StopJob(lifecycle::StopJobArgs),
    /// Whether every Node of an object's current or last execution has ceased.
    Ceased(observe::CeasedArgs),
    /// The simulated cluster: `sim serve`.
    Sim(sim::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: dispatch_core::Result<()> = match cli.command {
        Command::Render(args) => render::run(args),
        Command::Classify(args) => classify::run(args),
        Command::Preflight(args) => preflight::preflight(args),
        Command::Capabilities(args) => preflight::capabilities(args),
        Command::Start(args) => lifecycle::start(args),
        Command::Find(args) => observe::find(args),
        Command::Status(args) => observe::status(args),
        Command::Inspect(args) => observe::inspect(args),
        Command::Watch(args) => observe::watch(args),
        Command::Logs(args) => observe::logs(args),
        Command::Open(args) => lifecycle::open(args),
        Command::Hold(args) => lifecycle::hold(args),
        Command::Release(args) => lifecycle::release(args),
        Command::Stop(args) => lifecycle::stop(args),
        Command::StopJob(args) => lifecycle::stop_job(args),
        Command::Ceased(args) => observe::ceased(args),
        Command::Sim(args) => sim::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => output::report(&err),
    }
}
