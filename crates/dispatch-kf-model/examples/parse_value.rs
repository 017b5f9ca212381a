//! The benchmark's baseline: read a file and parse it with `serde_json` into a `Value`,
//! as any generic JSON reader would. `cargo xtask bench classify` times this against
//! `dispatch-kf classify` on the same bytes. Prints the number of List items so the
//! parse cannot be optimised away.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse_value FILE");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            return ExitCode::from(3);
        }
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(v) => {
            println!("{}", v["items"].as_array().map_or(0, Vec::len));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path} is not JSON: {e}");
            ExitCode::from(3)
        }
    }
}
