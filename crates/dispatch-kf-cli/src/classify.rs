//! `dispatch-kf classify`: read `kubectl get ... -o json` output (one or more files, `-`
//! for standard input, merged into one snapshot) and print the observation of every
//! TrainJob and orphan in it.
//!
//! Nothing here talks to a cluster. `--now` defaults to the current time, read here at
//! the edge (the model never reads the clock).

use std::io::Read;

use dispatch_core::Error;
use dispatch_kf_model::view::Shared;
use dispatch_kf_model::{ClassifyOptions, Detail, Mode, Snapshot, classify, dump};
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
    let mut snapshot = Snapshot::default();
    for file in &args.files {
        snapshot.extend(read(file)?);
    }
    let options = ClassifyOptions {
        mode: match args.mode {
            ModeArg::Plain => Mode::Plain,
            ModeArg::Kueue => Mode::Kueue,
        },
        nodes_readable: nodes_readable(args.nodes_readable, &snapshot),
        backend: args.backend,
        detail: Detail::WithNotes,
    };
    let observations = classify(&snapshot, &options, now);
    // The observations own their text, and the command ends once they are printed:
    // the views are left for the end of the process to take back whole, as freeing
    // the objects of a large dump one by one takes a tenth of the run.
    std::mem::forget(snapshot);
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

/// A file's objects, read a piece at a time (`-` is standard input): a dump may be
/// gigabytes, and no more of it than one piece is held beside the views it keeps.
fn read(file: &str) -> Result<Snapshot<Shared>, Error> {
    let cannot =
        |e: std::io::Error| Error::invalid(format!("cannot read {file}: {e}")).with_source(e);
    let mut input: Box<dyn Read> = match file {
        "-" => Box::new(std::io::stdin().lock()),
        path => Box::new(std::fs::File::open(path).map_err(cannot)?),
    };
    let mut reader = dump::Reader::new(file);
    loop {
        match input.read(reader.buffer()) {
            Ok(0) => return reader.finish(),
            Ok(n) => reader.filled(n)?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(cannot(e)),
        }
    }
}
