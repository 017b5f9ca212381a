//! The command line itself: the subcommands, which program name it answers to
//! (`dispatch-kf`, or `kubectl dispatch` as a kubectl plugin), and dispatching to each
//! subcommand's module.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::{classify, explain, lifecycle, observe, output, preflight, render, shell};
#[cfg(feature = "sim")]
use crate::{demo, sim};

/// Which binary is running: the help and usage name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// `dispatch-kf`.
    DispatchKf,
    /// `kubectl-dispatch`, run by kubectl as `kubectl dispatch`.
    KubectlPlugin,
}

impl Program {
    /// How a user types the command.
    fn typed(self) -> &'static str {
        match self {
            Program::DispatchKf => "dispatch-kf",
            Program::KubectlPlugin => "kubectl dispatch",
        }
    }
}

/// dispatch's Kubeflow Trainer backend: render jobs into TrainJobs and say why they stopped.
#[derive(Parser)]
#[command(
    name = "dispatch-kf",
    version,
    propagate_version = true,
    after_help = "Example:\n  dispatch-kf explain -A"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a job through a scenario on an embedded simulated cluster, narrating what
    /// the adapter reports at each step.
    #[cfg(feature = "sim")]
    Demo(demo::Args),
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
    /// Why any TrainJob is where it is, dispatch's or not; without a name, every
    /// TrainJob of the namespace.
    Explain(explain::Args),
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
    #[command(after_help = "Example:\n  dispatch-kf open --settings settings.json \
        TrainJob:training/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1@<uid>")]
    Open(lifecycle::RefArgs),
    /// Put a hold instance in force.
    #[command(after_help = "Example:\n  dispatch-kf hold --settings settings.json --instance 1 \
        TrainJob:training/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1@<uid>")]
    Hold(lifecycle::HoldArgs),
    /// Release a hold instance.
    #[command(
        after_help = "Example:\n  dispatch-kf release --settings settings.json --instance 1 \
        TrainJob:training/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1@<uid>"
    )]
    Release(lifecycle::HoldArgs),
    /// Stop one object (background deletion, if it is still that instance).
    #[command(after_help = "Example:\n  dispatch-kf stop --settings settings.json \
        TrainJob:training/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1@<uid>")]
    Stop(lifecycle::RefArgs),
    /// Stop every object of a job and wait until none remains.
    StopJob(lifecycle::StopJobArgs),
    /// Whether every Node of an object's current or last execution has ceased.
    Ceased(observe::CeasedArgs),
    /// The simulated cluster: `sim serve`.
    #[cfg(feature = "sim")]
    #[command(
        after_help = "Example:\n  dispatch-kf sim serve --kubeconfig-out /tmp/sim.kubeconfig"
    )]
    Sim(sim::Args),
    /// A shell's completion script: bash, zsh or fish.
    Completions(shell::CompletionsArgs),
    /// Writes the man pages into a folder (for packagers and `cargo xtask install`).
    #[command(hide = true)]
    Man(shell::ManArgs),
}

/// The command line as `program` shows it: its name in the usage, and in every example.
pub(crate) fn command(program: Program) -> clap::Command {
    let cmd = Cli::command();
    match program {
        Program::DispatchKf => cmd,
        Program::KubectlPlugin => {
            named(cmd.name("kubectl-dispatch"), program).bin_name(program.typed())
        }
    }
}

/// Rewrites the examples of `cmd` and its subcommands for `program`.
fn named(cmd: clap::Command, program: Program) -> clap::Command {
    let example = cmd
        .get_after_help()
        .map(|h| h.to_string().replace("dispatch-kf ", &format!("{} ", program.typed())));
    let cmd = match example {
        Some(text) => cmd.after_help(text),
        None => cmd,
    };
    cmd.mut_subcommands(|sub| named(sub, program))
}

/// Runs the command as `program`: parses the arguments, runs the subcommand, and ends
/// as `output::exit` says.
pub fn main(program: Program) -> ExitCode {
    let matches = command(program).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result: dispatch_core::Result<()> = match cli.command {
        #[cfg(feature = "sim")]
        Command::Demo(args) => demo::run(args, program.typed()),
        Command::Render(args) => render::run(args),
        Command::Classify(args) => classify::run(args),
        Command::Preflight(args) => preflight::preflight(args),
        Command::Capabilities(args) => preflight::capabilities(args),
        Command::Start(args) => lifecycle::start(args),
        Command::Explain(args) => explain::run(args),
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
        #[cfg(feature = "sim")]
        Command::Sim(args) => sim::run(args),
        Command::Completions(args) => shell::completions(args, command(Program::DispatchKf)),
        Command::Man(args) => shell::man(args, command(Program::DispatchKf)),
    };
    output::exit(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command and subcommand, with its path.
    fn all(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        // clap's own `help` subcommand prints help; it has nothing to exemplify.
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let path = format!("{path} {}", sub.get_name());
            all(sub, path.clone(), out);
            out.push((path, sub.clone()));
        }
    }

    #[test]
    fn every_subcommand_has_an_example_in_its_help() {
        let mut subs = Vec::new();
        all(&Cli::command(), String::new(), &mut subs);
        assert!(subs.len() > 15, "{}", subs.len());
        for (path, sub) in subs {
            let help = sub.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(help.starts_with("Example:\n  "), "{path}: {help:?}");
            assert!(help.contains(&format!("dispatch-kf{path}")), "{path}: {help:?}");
        }
    }

    #[test]
    fn as_a_kubectl_plugin_usage_and_examples_say_kubectl_dispatch() {
        let mut cmd = command(Program::KubectlPlugin);
        let help = cmd.render_help().to_string();
        assert!(help.contains("Usage: kubectl dispatch <COMMAND>"), "{help}");
        assert!(help.contains("kubectl dispatch explain -A"), "{help}");
        let mut subs = Vec::new();
        all(&cmd, String::new(), &mut subs);
        for (path, sub) in subs {
            let help = sub.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(help.contains("kubectl dispatch "), "{path}: {help}");
            assert!(!help.contains("dispatch-kf "), "{path}: {help}");
        }
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
