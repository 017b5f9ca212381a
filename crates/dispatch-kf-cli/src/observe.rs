//! The commands that read a cluster and write nothing: `find`, `status`, `inspect`,
//! `watch`, `logs`. Factory runs without its probe for them.

use dispatch_core::{Backend, Error, JobId, OutputStream, Result, Status, Watcher};
use futures::StreamExt;

use crate::connect::{ClusterArgs, DEFAULT_TIMEOUT, Need, block_on, parse_ref};
use crate::output::{self, Format};
use crate::table;

/// A job given on the command line.
fn job(text: &str) -> Result<JobId> {
    JobId::parse(text)
}

/// `find JOB`: every object of the job, orphans included.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf find 01JDQ4V8Z6K3M0B7X2N5R9T1CE")]
pub(crate) struct FindArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Output format: table on a terminal, JSON otherwise (the objects and the
    /// in-flight mark, as with `-o json`).
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// The job (a ULID).
    job: String,
}

pub(crate) fn find(args: FindArgs) -> Result<()> {
    let job = job(&args.job)?;
    block_on(async {
        let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
        let found = args.cluster.backend(Need::Read, &cx).await?.find(&cx, &job).await?;
        // Machine-readable output is always the whole answer, in-flight mark included:
        // without `-o` off a terminal as under `-o json` (docs/cli.md).
        match Format::or_default(args.output) {
            f @ (Format::Json | Format::Yaml) => output::print_structured(&found, f),
            format => {
                output::print_observations(&found.objects, Some(format), jiff::Timestamp::now())?;
                if let Some(flight) = &found.in_flight {
                    eprintln!(
                        "submission {} is in flight until {}",
                        flight.submission, flight.until
                    );
                }
                Ok(())
            }
        }
    })
}

/// `status JOB`: the object-only status: running when any object is alive.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf status 01JDQ4V8Z6K3M0B7X2N5R9T1CE")]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Output format: a word, or JSON or YAML.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// The job (a ULID).
    job: String,
}

pub(crate) fn status(args: StatusArgs) -> Result<()> {
    let job = job(&args.job)?;
    block_on(async {
        let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
        let found = args.cluster.backend(Need::Read, &cx).await?.find(&cx, &job).await?;
        let status = Status::object_only(&found.objects);
        match args.output {
            Some(f @ (Format::Json | Format::Yaml)) => output::print_structured(&status, f),
            _ => {
                let word = serde_json::to_value(status.state).unwrap_or_default();
                output::write_stdout(
                    format!("{} (object-only)\n", word.as_str().unwrap_or("")).as_bytes(),
                )
            }
        }
    })
}

/// `inspect REF`: one object.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  dispatch-kf inspect training/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1@<uid>"
)]
pub(crate) struct InspectArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Output format: table on a terminal, JSON otherwise.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// `[Kind:]<namespace>/<name>@<uid>`, as start prints it.
    reference: String,
}

pub(crate) fn inspect(args: InspectArgs) -> Result<()> {
    block_on(async {
        let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
        let backend = args.cluster.backend(Need::Read, &cx).await?;
        let object = parse_ref(&args.reference, &backend.settings().name)?;
        let obs = backend.inspect(&cx, &object).await?;
        match args.output {
            Some(f @ (Format::Json | Format::Yaml)) => output::print_structured(&obs, f),
            format => output::print_observations(&[obs], format, jiff::Timestamp::now()),
        }
    })
}

/// `watch JOB`: a line (or a JSON object) per observation, until interrupted.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf watch -o json 01JDQ4V8Z6K3M0B7X2N5R9T1CE")]
pub(crate) struct WatchArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Output format: table rows on a terminal, JSON Lines otherwise.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// The job (a ULID).
    job: String,
}

pub(crate) fn watch(args: WatchArgs) -> Result<()> {
    let job = job(&args.job)?;
    block_on(output::until_interrupted(
        None,
        output::until_reader_gone(async {
            let setup = args.cluster.call(DEFAULT_TIMEOUT)?;
            let backend = args.cluster.backend(Need::Read, &setup).await?;
            let format = Format::or_default(args.output);
            let layout = table::Layout::stdout(args.output == Some(Format::Wide));
            let mut header = true;
            let mut columns = table::Columns::still();
            // The stream runs until interrupted, or until the watch fails (its apiserver
            // stays unreachable): then the command ends with that error.
            let forever = dispatch_core::CallContext::background();
            loop {
                let mut stream = backend.watch(&forever, &job).await?;
                while let Some(obs) = stream.next().await {
                    let obs = obs?;
                    let text = match format {
                        Format::Json | Format::Yaml => {
                            let line = serde_json::to_string(&obs)
                                .map_err(|e| Error::invalid(e.to_string()))?;
                            format!("{line}\n")
                        }
                        Format::Name => format!("{}\n", output::kubectl_name(&obs.object)),
                        Format::Table | Format::Wide => {
                            let now = jiff::Timestamp::now();
                            let table = table::render_in(&[obs], now, layout, &mut columns);
                            let skip = if header { 0 } else { 1 };
                            header = false;
                            table.lines().skip(skip).map(|l| format!("{l}\n")).collect()
                        }
                    };
                    output::write_stdout(text.as_bytes())?;
                }
            }
        }),
    ))
}

/// `logs JOB --submission N [-f]`: rank 0's log of the submission's current execution.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf logs 01JDQ4V8Z6K3M0B7X2N5R9T1CE --submission 1 -f")]
pub(crate) struct LogsArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The submission N.
    #[arg(long)]
    submission: u32,
    /// Keep following the log as it is written.
    #[arg(short = 'f', long)]
    follow: bool,
    /// The job (a ULID).
    job: String,
}

pub(crate) fn logs(args: LogsArgs) -> Result<()> {
    let job = job(&args.job)?;
    block_on(output::until_interrupted(
        None,
        output::until_reader_gone(async {
            let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
            let backend = args.cluster.backend(Need::Read, &cx).await?;
            let read = if args.follow { dispatch_core::CallContext::background() } else { cx };
            let mut log = backend
                .output(&read, &job, args.submission, OutputStream::Stdout, args.follow)
                .await?;
            while let Some(chunk) = log.next().await {
                output::write_stdout(&chunk?)?;
            }
            Ok(())
        }),
    ))
}

/// `ceased REF`: whether every Node of the object's current or last execution is gone
/// or out of service.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  dispatch-kf ceased training/dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1@<uid>"
)]
pub(crate) struct CeasedArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Output format: text, or JSON or YAML.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// `[Kind:]<namespace>/<name>@<uid>`, as start prints it.
    reference: String,
}

pub(crate) fn ceased(args: CeasedArgs) -> Result<()> {
    block_on(async {
        let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
        let backend = args.cluster.backend(Need::Read, &cx).await?;
        let object = parse_ref(&args.reference, &backend.settings().name)?;
        let cessation = dispatch_core::CessationSignal::ceased(&backend, &cx, &object).await?;
        match args.output {
            Some(f @ (Format::Json | Format::Yaml)) => output::print_structured(&cessation, f),
            _ => {
                let mut text = format!("ceased: {}\n", cessation.ceased);
                for node in &cessation.nodes {
                    text.push_str(&format!("  {}: {}\n", node.node, node.state));
                }
                output::write_stdout(text.as_bytes())
            }
        }
    })
}
