//! The generator of `fixtures/dumps/`: compact Rust descriptions of each case, built
//! into real-shaped `kubectl get -o json` Lists. `tests/fixtures_up_to_date.rs` checks
//! the committed files match (and rewrites them with `FIXTURES_UPDATE=1`).

#![allow(dead_code, unreachable_pub)]

pub mod cases_foreign;
pub mod cases_hold;
pub mod cases_kueue;
pub mod cases_plain;
pub mod cases_running;
pub mod k8s;
pub mod scene;

use std::path::PathBuf;

/// Where the dumps live.
pub fn dumps_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps")
}

/// Every generated dump: (file name, pretty JSON with a trailing newline).
pub fn generated() -> Vec<(String, String)> {
    let mut cases = cases_plain::all();
    cases.extend(cases_kueue::all());
    cases
        .into_iter()
        .map(|(stem, v)| {
            let mut text = serde_json::to_string_pretty(&v).unwrap();
            text.push('\n');
            (format!("{stem}.json"), text)
        })
        .collect()
}
