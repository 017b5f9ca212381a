//! The benchmark's floor: read a file and look at every byte of it as JSON, keeping
//! nothing (`serde_json::from_slice::<IgnoredAny>`). Whatever classify does, it must at
//! least do this, so `cargo xtask bench classify` states its time as a multiple of
//! this one's. Prints the byte count, so the program does something with the input.

use std::process::ExitCode;

use serde::de::IgnoredAny;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: skim FILE");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            return ExitCode::from(3);
        }
    };
    match serde_json::from_slice::<IgnoredAny>(&bytes) {
        Ok(IgnoredAny) => {
            println!("{} bytes", bytes.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path} is not JSON: {e}");
            ExitCode::from(3)
        }
    }
}
