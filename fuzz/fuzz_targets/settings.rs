//! Fuzz target `settings`: `Settings::read`, the entry point the CLI reads a settings
//! file with (JSON or YAML bytes, then defaults and validation).
//!
//! Invariants: nothing panics, and a refusal is always `Invalid` (a settings file is
//! never `Unsupported` or an internal error).

#![no_main]

use dispatch_core::Kind;
use dispatch_kf_model::Settings;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err(e) = Settings::read(bytes) {
        assert!(e.is(Kind::Invalid), "settings refused with {:?}: {}", e.kind(), e.message());
    }
});
