//! The benchmark's baselines, each reading a file the way something other than classify
//! would, so `cargo xtask bench classify` can state classify's time as a multiple of
//! theirs:
//!
//! - `baseline skim FILE`: looks at every byte as JSON and keeps nothing
//!   (`serde_json::from_slice::<IgnoredAny>`), the floor for any reader; prints the byte
//!   count;
//! - `baseline value FILE`: parses into a `serde_json::Value`, as any generic JSON tool
//!   does; prints the number of List items.
//!
//! Each prints something of what it read, so the work cannot be optimised away.

use std::process::ExitCode;

use serde::de::IgnoredAny;

const USAGE: &str = "usage: baseline <skim|value> FILE";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, path] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            return ExitCode::from(3);
        }
    };
    let read = match mode.as_str() {
        "skim" => serde_json::from_slice::<IgnoredAny>(&bytes).map(|_| bytes.len()),
        "value" => serde_json::from_slice::<serde_json::Value>(&bytes)
            .map(|v| v["items"].as_array().map_or(0, Vec::len)),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match read {
        Ok(count) => {
            println!("{count}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path} is not JSON: {e}");
            ExitCode::from(3)
        }
    }
}
