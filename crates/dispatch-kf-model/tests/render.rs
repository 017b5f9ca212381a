//! Render over every fixture in `fixtures/render/<case>/`: each case is a test, and its
//! snapshot (the v1 List of the runtime copy and the TrainJob, or the refusal's sentinel
//! and message) is the assertion.
//!
//! A case holds `request.json` and, when it differs from the shared default,
//! `settings.json` (default `fixtures/render/settings-plain.json`) and `runtime.json`
//! (default `fixtures/render/runtime-torch.json`; `null` means the runtime does not
//! exist). `options.json` may set `purpose` (`job` or `probe`) and the token `suffix`
//! (default `0123456789abcdef`). A case named `accept-*` must render and read back with
//! no difference; one named `refuse-*` must be refused.

use std::path::Path;

use dispatch_core::{Error, JobId};
use dispatch_kf_model::internal::{probe, readback};
use dispatch_kf_model::{Purpose, Settings, SourceRuntime, TokenSuffix, read_request, render};
use serde_json::{Value, json};

const DEFAULT_SUFFIX: &str = "0123456789abcdef";

fn read(dir: &Path, file: &str, shared: &str) -> Vec<u8> {
    let own = dir.join(file);
    let path = if own.exists() { own } else { dir.parent().unwrap().join(shared) };
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Everything one case needs, read from its directory.
struct Case {
    settings: Result<Settings, Error>,
    request: Result<dispatch_core::StartRequest, Error>,
    runtime: Option<SourceRuntime>,
    purpose: Purpose,
    suffix: TokenSuffix,
}

fn load(dir: &Path) -> Case {
    let settings = Settings::read(&read(dir, "settings.json", "settings-plain.json"));
    let request = read_request(&read(dir, "request.json", "request.json"));
    let runtime: Value =
        serde_json::from_slice(&read(dir, "runtime.json", "runtime-torch.json")).unwrap();
    let runtime = (!runtime.is_null()).then(|| SourceRuntime::from_value(&runtime).unwrap());
    let options: Value = match std::fs::read(dir.join("options.json")) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(_) => json!({}),
    };
    let purpose = match options.get("purpose").and_then(Value::as_str) {
        Some("probe") => {
            let expires = options["expires"].as_str().expect("a probe case's expiry");
            Purpose::Probe { expires: expires.parse().unwrap() }
        }
        _ => Purpose::Job,
    };
    let suffix = options.get("suffix").and_then(Value::as_str).unwrap_or(DEFAULT_SUFFIX);
    Case { settings, request, runtime, purpose, suffix: TokenSuffix::parse(suffix).unwrap() }
}

/// The one place the API is called: render the case, or say why not.
fn outcome(case: Case) -> Result<(Settings, dispatch_kf_model::Rendered), Error> {
    let settings = case.settings?;
    let request = case.request?;
    let rendered = render(&settings, &request, case.runtime.as_ref(), &case.suffix, case.purpose)?;
    Ok((settings, rendered))
}

#[test]
fn render_fixtures() {
    insta::glob!("../../../fixtures", "render/*/request.json", |path| {
        let dir = path.parent().unwrap();
        let name = dir.file_name().unwrap().to_str().unwrap();
        let case = load(dir);
        let snapshot = match outcome(case) {
            Ok((settings, rendered)) => {
                assert!(name.starts_with("accept-"), "{name} rendered but should be refused");
                let diff =
                    readback::differences(&rendered.train_job, &rendered.train_job, settings.mode);
                assert_eq!(diff, Vec::<String>::new(), "{name}");
                rendered.to_list()
            }
            Err(err) => {
                assert!(name.starts_with("refuse-"), "{name} refused: {err}");
                json!({"refusal": {"kind": err.kind().name(), "message": err.message()}})
            }
        };
        insta::assert_yaml_snapshot!(snapshot);
    });
}

#[test]
fn the_probe_fixture_is_what_probe_request_builds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/render/accept-probe");
    let case = load(&dir);
    let settings = case.settings.unwrap();
    let job = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1PR").unwrap();
    assert_eq!(case.request.unwrap(), probe::request(&settings, job));
    assert!(matches!(case.purpose, Purpose::Probe { .. }));
}
