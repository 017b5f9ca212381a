//! Fuzz target `sim_selector`: the sim's label selector parser, `Selector::parse` (the
//! `labelSelector` query value of a list or watch), then `Selector::matches`.
//!
//! Invariants: nothing panics (a malformed selector is a 400 BadRequest, never a crash),
//! and a selector that parses can be matched against objects with and without labels.
//! The empty selector matches everything. The sim's path and query routing is
//! crate-private and not fuzzed here (docs/dev/fuzzing.md says why).

#![no_main]

use dispatch_kf_sim::Selector;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let Ok(selector) = Selector::parse(text) else { return };
    let objects = [
        json!({}),
        json!({"metadata": {}}),
        json!({"metadata": {"labels": {}}}),
        json!({"metadata": {"labels": {"app": "train", "tier": "gpu", "x": ""}}}),
        json!({"metadata": {"labels": {"app": 7, "tier": null}}}),
    ];
    let matched: Vec<bool> = objects.iter().map(|o| selector.matches(o)).collect();
    if text.trim().is_empty() {
        assert!(matched.iter().all(|m| *m), "the empty selector refused an object");
    }
});
