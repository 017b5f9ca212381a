//! Fuzz target `start_request`: a start request read from bytes, validated, and
//! rendered.
//!
//! The bytes go to `read_request` (the CLI's reader: JSON or YAML, every malformed field
//! named) and to `StartRequest`'s serde deserializer (the JSON the supervisor sends).
//! Each request read is validated (`JobSpec::validate`) and rendered with fixed settings
//! (`fixtures/render/settings-plain.json`), the fixed source runtime
//! `fixtures/render/runtime-torch.json` and a fixed token suffix, as a job and as a probe.
//! Invariants: nothing panics; a refusal by `read_request` is `Invalid`; a request the
//! deserializer reads serializes back to one that reads equal (when it holds no floating
//! point number, which serde_json does not promise to round-trip); a rendered TrainJob
//! and runtime copy are named by `names::make` for the request's job and submission, and
//! the TrainJob reads back with no difference from itself.

#![no_main]

use std::sync::LazyLock;

use dispatch_core::{Kind, StartRequest};
use dispatch_kf_model::TokenSuffix;
use dispatch_kf_model::{Mode, Purpose, Settings, SourceRuntime, names, read_request};
use dispatch_kf_model::internal::readback;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The settings, source runtime and token suffix every request renders with.
static FIXED: LazyLock<(Settings, SourceRuntime, TokenSuffix)> = LazyLock::new(|| {
    let settings = Settings::read(include_bytes!("../../fixtures/render/settings-plain.json"))
        .expect("the fixture's settings are valid");
    let runtime = SourceRuntime::read(include_bytes!("../../fixtures/render/runtime-torch.json"))
        .expect("the fixture's runtime reads")
        .expect("the fixture holds a runtime");
    let suffix = TokenSuffix::parse("0123456789abcdef").expect("16 lower-case hex characters");
    (settings, runtime, suffix)
});

/// Whether `value` holds a number that is neither an i64 nor a u64.
fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// Validates and renders `request`, checking what a render promises.
fn validate_and_render(request: &StartRequest) {
    let _ = request.spec.validate();
    let (settings, runtime, suffix) = &*FIXED;
    for purpose in [Purpose::Job, Purpose::Probe] {
        let Ok(rendered) =
            dispatch_kf_model::render(settings, request, Some(runtime), suffix, purpose)
        else {
            continue;
        };
        let submission = u32::try_from(request.submission).expect("a rendered submission fits");
        let name = names::make(&request.job, submission);
        for object in [&rendered.train_job, &rendered.runtime_copy] {
            assert_eq!(object["metadata"]["name"].as_str(), Some(name.as_str()));
        }
        let differences =
            readback::differences(&rendered.train_job, &rendered.train_job, Mode::Plain);
        assert!(differences.is_empty(), "{name} differs from itself: {differences:?}");
    }
}

fuzz_target!(|bytes: &[u8]| {
    match read_request(bytes) {
        Ok(request) => validate_and_render(&request),
        Err(e) => {
            assert!(e.is(Kind::Invalid), "request refused with {:?}: {}", e.kind(), e.message())
        }
    }
    if let Ok(request) = serde_json::from_slice::<StartRequest>(bytes) {
        let value = serde_json::to_value(&request).expect("a StartRequest serializes");
        if !has_float(&value) {
            let again: StartRequest =
                serde_json::from_value(value).expect("its own JSON reads back");
            assert_eq!(again, request, "a StartRequest does not round-trip");
        }
        validate_and_render(&request);
    }
});
