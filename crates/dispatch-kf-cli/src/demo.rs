//! `dispatch-kf demo [--scenario NAME]`: starts the simulated cluster in this process,
//! submits a real request through the real Backend, and narrates each step as it
//! happens: what the supervisor asked, what changed in the cluster, and what Watch
//! reported (state, cause, provenance, detail, execution).
//!
//! The scenarios are the rows of [`SCENARIOS`]; adding one is a row and an async
//! function in `demo/scenarios.rs`. Each runs on a cluster of its own, whose virtual
//! clock the scenario moves: nothing waits for real time except the Backend's own
//! short pauses (Watch gathers a burst of changes for 100 ms; StopJob looks again each
//! second).

mod cluster;
mod narrate;
mod scenarios;
mod stage;

use std::future::Future;
use std::pin::Pin;

use dispatch_core::{Error, Result};

pub use narrate::{Narration, Seen};

/// A scenario's run: it sets up its cluster, plays its story into the narration, and
/// fails when the adapter reports something the story did not expect.
pub type Play = for<'a> fn(&'a mut Narration) -> Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

/// One scenario of the demo.
pub struct Scenario {
    /// What `--scenario` takes.
    pub name: &'static str,
    /// One line on what it shows.
    pub about: &'static str,
    /// Runs it.
    pub play: Play,
}

/// Every scenario, in the order `all` runs them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "preemption",
        about: "the scheduler preempts a rank: the cause is preempted, not a failure; \
                the job runs again, and Hold then Release make a new execution",
        play: |n| Box::pin(scenarios::preemption(n)),
    },
    Scenario {
        name: "kueue",
        about: "Kueue mode: queued behind the start gate, admitted through the readmission \
                gate, preempted by Kueue and not readmitted on its own, then held and \
                released into a new execution",
        play: |n| Box::pin(scenarios::kueue(n)),
    },
    Scenario {
        name: "node-loss",
        about: "the nodes under a running job stop reporting: running with node-lost; \
                Ceased says when the old ranks cannot run; stop and resubmit",
        play: |n| Box::pin(scenarios::node_loss(n)),
    },
    Scenario {
        name: "oom",
        about: "one rank runs out of GPU memory: the cause names that rank, and the \
                other rank's exit is reported as a consequence",
        play: |n| Box::pin(scenarios::oom(n)),
    },
    Scenario {
        name: "success",
        about: "a job is started, opened, runs and completes; Output reads rank 0's log",
        play: |n| Box::pin(scenarios::success(n)),
    },
];

/// The scenario named `name`.
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Plays `scenario` into `narration`; what the adapter reported is in
/// [`Narration::seen`].
pub async fn play(scenario: &Scenario, narration: &mut Narration) -> Result<()> {
    narration.heading(scenario.name, scenario.about);
    let played = (scenario.play)(narration).await;
    narration.finish()?;
    played
}

/// `--scenario`: a row of [`SCENARIOS`], or `all`.
fn scenario_names() -> clap::builder::PossibleValuesParser {
    let all = clap::builder::PossibleValue::new("all").help("every scenario in turn");
    let rows = SCENARIOS.iter().map(|s| clap::builder::PossibleValue::new(s.name).help(s.about));
    clap::builder::PossibleValuesParser::new(std::iter::once(all).chain(rows))
}

/// `demo [--scenario NAME]`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf demo --scenario preemption")]
pub(crate) struct Args {
    /// Which scenario to run.
    #[arg(long, default_value = "all", value_parser = scenario_names())]
    scenario: String,
}

/// The commands a user can try after the demo, as `command` (`dispatch-kf`, or
/// `kubectl dispatch`) is typed.
fn next(command: &str) -> String {
    let lines = [
        ("demo --scenario oom", "one scenario again"),
        (
            "classify fixtures/dumps/failed-jobs-oom.json -o wide",
            "explain a kubectl dump, no cluster needed",
        ),
        (
            "sim serve --kubeconfig-out /tmp/sim.kubeconfig",
            "a simulated cluster to drive by hand (docs/quickstart.md)",
        ),
        ("--help", "every command, each with an example"),
    ];
    let mut text = String::from("\nWhat next:");
    for (args, what) in lines {
        text.push_str(&format!("\n  {command} {args}\n      {what}"));
    }
    text
}

/// Runs the chosen scenarios, narrating to standard output; `command` is how the user
/// typed the command, for the closing hints.
pub(crate) fn run(args: Args, command: &str) -> Result<()> {
    let chosen: Vec<&Scenario> = match scenario(&args.scenario) {
        Some(one) => vec![one],
        None if args.scenario == "all" => SCENARIOS.iter().collect(),
        None => return Err(Error::invalid(format!("no scenario {:?}", args.scenario))),
    };
    crate::connect::block_on(async {
        let mut narration = Narration::echoing();
        for scenario in chosen {
            play(scenario, &mut narration).await?;
        }
        narration.line(&next(command));
        narration.finish()
    })
}
