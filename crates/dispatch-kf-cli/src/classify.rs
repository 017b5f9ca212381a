//! `dispatch-kf classify`: read `kubectl get ... -o json` output (one or more files, `-`
//! for standard input, merged into one snapshot) and print the observation of every
//! TrainJob and orphan in it.
//!
//! Nothing here talks to a cluster. `--now` defaults to the current time, read here at
//! the edge (the model never reads the clock).

use dispatch_core::Error;
use dispatch_kf_model::{ClassifyOptions, Mode, classify, dump};
use jiff::Timestamp;

use crate::output::{self, Format};

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ModeArg {
    /// No Kueue: the gate and holds are `spec.suspend` on the TrainJob.
    Plain,
    /// Kueue admits the TrainJobs; holds are on the Workload.
    Kueue,
}

/// Classify the objects of `kubectl get ... -o json` output, offline.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  kubectl get trainjobs,jobsets,workloads,pods,nodes,trainingruntimes -o json \
    > dump.json\n  dispatch-kf classify --mode kueue dump.json"
)]
pub(crate) struct Args {
    /// How the TrainJobs are admitted.
    #[arg(long, value_enum, default_value = "plain")]
    mode: ModeArg,
    /// The time of the observation (RFC 3339); the current time when absent.
    #[arg(long)]
    now: Option<String>,
    /// Whether the Nodes could be read. `--nodes-readable=false` never judges a pod
    /// node-lost from its Node's state. Without the flag, Nodes count as readable when
    /// the input holds at least one Node; an input with none (kubectl get without
    /// `nodes`) is classified as without permission to read them, and one line on
    /// standard error says so.
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    nodes_readable: Option<bool>,
    /// The backend name the object references carry.
    #[arg(long, default_value = "kubeflow")]
    backend: String,
    /// Output format: table on a terminal, JSON otherwise.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// The files to read (`-` for standard input), merged in order.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> Result<(), Error> {
    let now = match &args.now {
        Some(text) => text
            .parse::<Timestamp>()
            .map_err(|e| Error::invalid(format!("--now {text} is not an RFC 3339 time: {e}")))?,
        None => Timestamp::now(),
    };
    let mut inputs = Vec::with_capacity(args.files.len());
    for file in &args.files {
        inputs.push((file.as_str(), read(file)?));
    }
    // The views borrow their text from `inputs`, which thus live until the output is
    // written: the bytes are held once, and no kept string is copied.
    let snapshot = dump::borrow_all(inputs.iter().map(|(f, b)| (*f, b.as_slice())))?;
    let options = ClassifyOptions {
        mode: match args.mode {
            ModeArg::Plain => Mode::Plain,
            ModeArg::Kueue => Mode::Kueue,
        },
        nodes_readable: nodes_readable(args.nodes_readable, &snapshot),
        backend: args.backend,
    };
    let observations = classify(&snapshot, &options, now);
    // The observations own their text: the input and its views go before the output.
    drop(snapshot);
    drop(inputs);
    output::print_observations(&observations, args.output, now)
}

/// `--nodes-readable` as given, else refinement R6 (`dump::nodes_readable_by_default`):
/// an input holding no Node is read as without permission to read Nodes, said once on
/// standard error.
fn nodes_readable<S>(flag: Option<bool>, snapshot: &dispatch_kf_model::Snapshot<S>) -> bool {
    flag.unwrap_or_else(|| {
        let readable = dump::nodes_readable_by_default(snapshot);
        if !readable {
            eprintln!("{NO_NODES_NOTICE}");
        }
        readable
    })
}

/// The line on standard error when the input holds no Node and `--nodes-readable` is
/// not given.
pub(crate) const NO_NODES_NOTICE: &str = "dispatch-kf: the input holds no Node: classified \
    as without permission to read Nodes, so no pod is judged node-lost from its Node \
    (--nodes-readable says the input holds every Node there is)";

/// A file's bytes in one allocation of its size (a dump may be gigabytes; growing a
/// buffer by doubling would hold up to twice that); `-` is standard input.
fn read(file: &str) -> Result<Vec<u8>, Error> {
    if file == "-" {
        return output::read_input(file);
    }
    std::fs::read(file)
        .map_err(|e| Error::invalid(format!("cannot read {file}: {e}")).with_source(e))
}
