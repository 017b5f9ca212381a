//! What every subcommand shares: output formats, reading input files, and the error
//! line and exit code of each sentinel.

use std::io::{Read, Write};
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

/// Prints `dispatch-kf: <kind>: <message>` to standard error and returns the exit code.
pub(crate) fn report(err: &Error) -> ExitCode {
    eprintln!("dispatch-kf: {}: {}", err.kind(), err.message());
    ExitCode::from(exit_code(err.kind()))
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

/// Writes `value` to standard output as JSON (pretty) or YAML.
pub(crate) fn print_structured<T: serde::Serialize>(
    value: &T,
    format: Format,
) -> Result<(), Error> {
    let text = match format {
        Format::Yaml => serde_yaml_ng::to_string(value)
            .map_err(|e| Error::invalid(format!("cannot write YAML: {e}")))?,
        _ => {
            let mut s = serde_json::to_string_pretty(value)
                .map_err(|e| Error::invalid(format!("cannot write JSON: {e}")))?;
            s.push('\n');
            s
        }
    };
    write_stdout(text.as_bytes())
}

/// Prints observations as the format asks: a table on a terminal, JSON otherwise.
pub(crate) fn print_observations(
    observations: &[dispatch_core::ObjectObs],
    format: Option<Format>,
    now: jiff::Timestamp,
) -> Result<(), Error> {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal();
    let format = format.unwrap_or(if terminal { Format::Table } else { Format::Json });
    match format {
        Format::Table | Format::Wide => {
            let layout = crate::table::Layout::stdout(format == Format::Wide);
            write_stdout(crate::table::render(observations, now, layout).as_bytes())
        }
        Format::Json | Format::Yaml => print_structured(&observations, format),
    }
}

/// Writes bytes to standard output; a closed pipe is not an error worth a message.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::unreachable(format!("cannot write to standard output: {e}")))
        }
        _ => Ok(()),
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
}
