//! `dispatch-kf render`: print the runtime copy and the TrainJob that Start would create
//! for a request, as a v1 `List`, or the refusal with its exit code.
//!
//! Nothing here talks to a cluster. The attempt token's 16 hex characters come from
//! `--token`, or are drawn from the operating system's random source when it is absent
//! (the only randomness in a render, drawn here at the edge, never in the model).

use dispatch_core::Error;
use dispatch_kf_model::TokenSuffix;
use dispatch_kf_model::internal::probe;
use dispatch_kf_model::read_request;
use dispatch_kf_model::{Purpose, Settings, SourceRuntime, render};

use crate::output::{self, Format};

/// The formats render prints in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ListFormat {
    /// YAML, as `kubectl get -o yaml` prints a List.
    Yaml,
    /// JSON.
    Json,
}

/// Print the runtime copy and the TrainJob that Start would create, or the refusal.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf render --settings settings.yaml \
    --runtime torch-distributed.yaml --request job.json --token 0123456789abcdef -o json")]
pub(crate) struct Args {
    /// The adapter's settings (JSON or YAML).
    #[arg(long)]
    settings: String,
    /// The runtime the request's kubeflow/RuntimeRef names, as `kubectl get -o yaml`
    /// prints it (JSON or YAML).
    #[arg(long)]
    runtime: String,
    /// The start request (JSON or YAML); `-` reads standard input.
    #[arg(long)]
    request: String,
    /// The attempt token's 16 lower-case hex characters; drawn at random when absent.
    #[arg(long)]
    token: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    output: ListFormat,
    /// Render the preflight probe's objects (adds the node selector no node matches,
    /// and the probe's label and expiry: now plus the settings' probe budget).
    #[arg(long)]
    probe: bool,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> Result<(), Error> {
    let settings = Settings::read(&output::read_input(&args.settings)?)
        .map_err(|e| e.context(&args.settings))?;
    let runtime = SourceRuntime::read(&output::read_input(&args.runtime)?)
        .map_err(|e| e.context(&args.runtime))?;
    let request =
        read_request(&output::read_input(&args.request)?).map_err(|e| e.context(&args.request))?;
    let suffix = match &args.token {
        Some(hex) => TokenSuffix::parse(hex).map_err(|e| e.context("--token"))?,
        None => random_suffix()?,
    };
    let purpose = if args.probe {
        let budget = probe::Budget::of(&settings.timeouts);
        Purpose::Probe { expires: budget.expires(jiff::Timestamp::now()) }
    } else {
        Purpose::Job
    };
    let rendered = render(&settings, &request, runtime.as_ref(), &suffix, purpose)?;
    let format = match args.output {
        ListFormat::Yaml => Format::Yaml,
        ListFormat::Json => Format::Json,
    };
    output::print_structured(&rendered.to_list(), format)
}

/// 16 hex characters from the operating system's random source.
fn random_suffix() -> Result<TokenSuffix, Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::unreachable(format!("cannot draw a random attempt token ({e}): pass --token"))
    })?;
    Ok(TokenSuffix::from_bytes(bytes))
}
