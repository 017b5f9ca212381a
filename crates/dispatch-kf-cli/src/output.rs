//! What every subcommand shares: output formats, reading input files, writing standard
//! output, and how a command ends: the error line and exit code of each sentinel, the
//! quiet status 0 when standard output's reader has gone (`dispatch-kf ... | head`),
//! and status 130 on Ctrl-C.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

use dispatch_core::{Error, Kind};

/// `-o/--output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// One row per object, cut to the terminal.
    Table,
    /// One row per object, whole.
    Wide,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// A line per object, `<resource>.<group>/<name>`, as `kubectl get -o name` prints.
    Name,
}

impl Format {
    /// The format when `-o` is not given: a table on a terminal, JSON otherwise. A
    /// script thus always gets the same shape as under `-o json`.
    pub(crate) fn or_default(format: Option<Format>) -> Format {
        use std::io::IsTerminal;
        format.unwrap_or(match std::io::stdout().is_terminal() {
            true => Format::Table,
            false => Format::Json,
        })
    }
}

/// The exit code of each sentinel; usage errors exit 2 (clap's own).
pub(crate) fn exit_code(kind: Kind) -> u8 {
    match kind {
        Kind::Invalid => 3,
        Kind::Unsupported => 4,
        Kind::Rejected => 5,
        Kind::NotFound => 6,
        Kind::Unauthorized => 7,
        Kind::Unreachable => 8,
        Kind::OutcomeUnknown => 9,
        Kind::ReadOnly => 10,
    }
}

/// How a command ends. Success is 0. Standard output closed by its reader (`| head`
/// has what it wanted) is 0 too, with nothing on standard error, as ripgrep and kubectl
/// do. Any other error prints `dispatch-kf: <kind>: <message>` to standard error and
/// returns its sentinel's exit code.
pub(crate) fn exit(result: Result<(), Error>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if closed_stdout(&err) => ExitCode::SUCCESS,
        Err(ref err) if let Some(Interrupted(note)) = marker::<Interrupted>(err) => {
            if let Some(note) = note {
                eprintln!("dispatch-kf: {note}");
            }
            ExitCode::from(130)
        }
        Err(err) => {
            eprintln!("dispatch-kf: {}: {}", err.kind(), err.message());
            ExitCode::from(exit_code(err.kind()))
        }
    }
}

/// The source of the error [`write_stdout`] returns when standard output's reader has
/// closed it: a type of its own, so that a broken pipe elsewhere (a connection to the
/// apiserver) is never mistaken for it.
#[derive(Debug)]
struct StdoutClosed(std::io::Error);

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "standard output closed: {}", self.0)
    }
}

impl std::error::Error for StdoutClosed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Whether `err` is [`write_stdout`]'s closed standard output.
fn closed_stdout(err: &Error) -> bool {
    marker::<StdoutClosed>(err).is_some()
}

/// The source of `err` when it is an `M`: how this module marks the errors that end a
/// command without being failures.
fn marker<M: std::error::Error + 'static>(err: &Error) -> Option<&M> {
    std::error::Error::source(err).and_then(|s| s.downcast_ref::<M>())
}

/// The source of the error [`until_interrupted`] returns on Ctrl-C, with the line (if
/// any) the command has to say about what it leaves behind.
#[derive(Debug)]
struct Interrupted(Option<&'static str>);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// Runs `future` until it ends, or until Ctrl-C (SIGINT): then the command ends with
/// status 130, as a shell reports a command that SIGINT ended, with `note` (if any) as
/// its one line on standard error, and no error text. For the commands a user ends
/// with Ctrl-C: `watch`, `logs -f`, `stop-job`.
pub(crate) async fn until_interrupted<T>(
    note: Option<&'static str>,
    future: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let interrupted = async {
        // Without a handler (it cannot be installed) Ctrl-C ends the process as usual.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        result = future => result,
        () = interrupted => Err(Error::unreachable("interrupted").with_source(Interrupted(note))),
    }
}

/// Runs a command that streams (`watch`, `logs -f`) until it ends, or until standard
/// output is a pipe whose reader has gone: then it ends as at a write into a closed
/// pipe, quietly with status 0. A stream gone quiet (a job that does not change, a log
/// that is not written) would otherwise learn of it only at a next write that may never
/// come; `tail -f` of GNU coreutils watches its output the same way.
pub(crate) async fn until_reader_gone<T>(
    future: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::select! {
        result = future => result,
        () = reader_gone(std::io::stdout()) => {
            Err(stdout_error(std::io::ErrorKind::BrokenPipe.into()))
        }
    }
}

/// Resolves once `out` is a pipe whose reader has closed it (or a terminal that hung
/// up, which takes no more output either); never for a file, `/dev/null` or anything
/// else that reports no such end. A thread of its own waits in `poll(2)`, detached: it
/// holds up neither the runtime's end nor the process's.
async fn reader_gone(out: impl AsFd + Send + 'static) {
    let (tell, told) = tokio::sync::oneshot::channel();
    let watcher = std::thread::Builder::new().name("stdout-reader".to_owned()).spawn(move || {
        if wait_for_reader_gone(&out) {
            let _ = tell.send(());
        }
    });
    if watcher.is_ok() && told.await.is_ok() {
        return;
    }
    std::future::pending().await
}

/// Blocks until `out`'s reader is gone (true), which `poll(2)` reports without a write
/// as an error or hang-up on the writing end, asked for no event at all; false at once
/// when the poll fails or ends with anything else.
fn wait_for_reader_gone(out: &impl AsFd) -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    let mut fds = [PollFd::new(out, PollFlags::empty())];
    loop {
        match poll(&mut fds, None) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return false,
            Ok(_) => return fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP),
        }
    }
}

/// Runs `future`, showing on standard error, when it is a terminal, `waiting` and the
/// seconds waited so far, once a second after the first, cleared when it ends: a long
/// wait (`stop-job`, `preflight`'s probe) is seen to be alive. Off a terminal nothing is
/// written, so scripts and logs see only the result.
pub(crate) async fn with_progress<T>(
    waiting: &str,
    future: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    use std::io::IsTerminal;
    let terminal = std::io::stderr().is_terminal().then(std::io::stderr);
    progress_to(terminal, waiting, future).await
}

/// [`with_progress`], written to `out` when there is one.
async fn progress_to<T>(
    mut out: Option<impl Write>,
    waiting: &str,
    future: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let Some(out) = out.as_mut() else { return future.await };
    let started = tokio::time::Instant::now();
    let second = std::time::Duration::from_secs(1);
    let mut ticks = tokio::time::interval_at(started + second, second);
    let mut future = std::pin::pin!(future);
    let mut shown = false;
    let result = loop {
        tokio::select! {
            result = &mut future => break result,
            _ = ticks.tick() => {
                let _ = write!(out, "\r\x1b[K{waiting} ({}s)", started.elapsed().as_secs());
                let _ = out.flush();
                shown = true;
            }
        }
    };
    if shown {
        let _ = write!(out, "\r\x1b[K");
        let _ = out.flush();
    }
    result
}

/// Reads a whole input file, or standard input for `-`; a file that cannot be read is
/// `Invalid`, naming it.
pub(crate) fn read_input(path: &str) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    let read = if path == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)).map(|_| ())
    };
    read.map_err(|e| Error::invalid(format!("cannot read {path}: {e}")).with_source(e))?;
    Ok(bytes)
}

/// Writes `value` to standard output as JSON (pretty) or YAML. JSON is written as it
/// is serialized, through one buffer, so the whole text never sits in memory (the
/// observations of a dump of gigabytes make tens of megabytes of it).
pub(crate) fn print_structured<T: serde::Serialize>(
    value: &T,
    format: Format,
) -> Result<(), Error> {
    match format {
        Format::Yaml => {
            let text = serde_yaml_ng::to_string(value)
                .map_err(|e| Error::invalid(format!("cannot write YAML: {e}")))?;
            write_stdout(text.as_bytes())
        }
        _ => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            serde_json::to_writer_pretty(&mut out, value).map_err(|e| match e.io_error_kind() {
                Some(kind) => stdout_error(std::io::Error::from(kind)),
                None => Error::invalid(format!("cannot write JSON: {e}")),
            })?;
            out.write_all(b"\n").and_then(|()| out.flush()).map_err(stdout_error)
        }
    }
}

/// Prints observations as the format asks: a table on a terminal, JSON otherwise.
pub(crate) fn print_observations(
    observations: &[dispatch_core::ObjectObs],
    format: Option<Format>,
    now: jiff::Timestamp,
) -> Result<(), Error> {
    let format = Format::or_default(format);
    match format {
        Format::Table | Format::Wide => {
            let layout = crate::table::Layout::stdout(format == Format::Wide);
            write_stdout(crate::table::render(observations, now, layout).as_bytes())
        }
        Format::Json | Format::Yaml => print_structured(&observations, format),
        Format::Name => write_stdout(name_lines(observations).as_bytes()),
    }
}

/// A line per observation's object, as `kubectl get -o name` prints it.
pub(crate) fn name_lines(observations: &[dispatch_core::ObjectObs]) -> String {
    observations.iter().map(|o| format!("{}\n", kubectl_name(&o.object))).collect()
}

/// An object as `kubectl get -o name` prints it, `<resource>.<group>/<name>` (a core
/// kind has no group), so that `kubectl delete` and friends take the lines as they are.
pub(crate) fn kubectl_name(object: &dispatch_core::ObjectRef) -> String {
    use dispatch_core::ObjectKind;
    use dispatch_kf_model::keys;
    let resource = match object.kind {
        ObjectKind::TrainJob => format!("trainjob.{}", keys::TRAINER_GROUP),
        ObjectKind::TrainingRuntime => format!("trainingruntime.{}", keys::TRAINER_GROUP),
        ObjectKind::JobSet => format!("jobset.{}", keys::JOBSET_GROUP),
        ObjectKind::Pod => "pod".to_owned(),
    };
    format!("{resource}/{}", object.name)
}

/// Writes bytes to standard output: the one place the command writes there. When the
/// reader has closed it (EPIPE), the error ends the command, and [`exit`] makes that a
/// quiet status 0. A command that streams (`watch`, `logs -f`) learns of it without a
/// write too ([`until_reader_gone`]).
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(stdout_error)
}

/// The error a failed write to standard output ends the command with: a closed reader
/// (EPIPE) is marked [`StdoutClosed`], so that [`exit`] makes it a quiet status 0.
fn stdout_error(e: std::io::Error) -> Error {
    let message = format!("cannot write to standard output: {e}");
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => Error::unreachable(message).with_source(StdoutClosed(e)),
        _ => Error::unreachable(message).with_source(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sentinel_has_its_own_code_from_3_to_10() {
        let codes: Vec<u8> = Kind::ALL.into_iter().map(exit_code).collect();
        assert_eq!(codes, [3, 4, 5, 6, 7, 8, 9, 10]);
    }

    #[test]
    fn only_a_closed_standard_output_ends_quietly() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let closed = Error::unreachable("write").with_source(StdoutClosed(pipe));
        assert!(closed_stdout(&closed));
        assert_eq!(exit(Err(closed)), ExitCode::SUCCESS);
        // A broken pipe to the apiserver is an error like any other.
        let socket = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let other = Error::unreachable("watch").with_source(socket);
        assert!(!closed_stdout(&other));
        assert!(!closed_stdout(&Error::unreachable("watch")));
    }

    #[test]
    fn ctrl_c_ends_with_130_and_only_an_interruption_does() {
        assert_eq!(exit(Err(Error::unreachable("x").with_source(Interrupted(None)))), 130.into());
        let note = Some("deletions go on");
        assert_eq!(exit(Err(Error::unreachable("x").with_source(Interrupted(note)))), 130.into());
        assert_eq!(exit(Err(Error::unreachable("x"))), ExitCode::from(8));
    }

    #[test]
    fn a_pipe_whose_reader_is_gone_is_seen_without_a_write_and_a_file_never() {
        use futures::FutureExt as _;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (reader, writer) = std::io::pipe().unwrap();
            let mut gone = std::pin::pin!(reader_gone(writer));
            assert!(gone.as_mut().now_or_never().is_none(), "the reader is still there");
            drop(reader);
            // A guard against a hang, not a measure of speed.
            let limit = std::time::Duration::from_secs(60);
            tokio::time::timeout(limit, gone).await.expect("the closed pipe is seen");

            let dir = std::env::temp_dir().join(format!("dispatch-kf-gone-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let file = std::fs::File::create(dir.join("out")).unwrap();
            assert!(std::pin::pin!(reader_gone(file)).now_or_never().is_none());
            std::fs::remove_dir_all(&dir).unwrap();
        });
    }

    #[test]
    fn a_long_wait_shows_its_seconds_on_a_terminal_then_clears_them() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let waited = async {
            tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
            Ok::<_, Error>(7)
        };
        let mut shown = Vec::new();
        let result = runtime.block_on(progress_to(Some(&mut shown), "waiting", waited));
        assert_eq!(result.unwrap(), 7);
        let shown = String::from_utf8(shown).unwrap();
        assert_eq!(shown, "\r\x1b[Kwaiting (1s)\r\x1b[Kwaiting (2s)\r\x1b[K");
        let quick =
            runtime.block_on(progress_to(Some(Vec::new()), "w", async { Ok::<_, Error>(1) }));
        assert_eq!(quick.unwrap(), 1, "a short wait writes nothing");
        let off = runtime.block_on(progress_to(None::<Vec<u8>>, "w", async { Ok::<_, Error>(2) }));
        assert_eq!(off.unwrap(), 2);
    }
}
