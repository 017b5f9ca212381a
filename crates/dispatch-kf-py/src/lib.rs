//! The native half of the Python package `dispatch_kf`: `classify_json`, which the
//! package's `classify` calls with the document as JSON text (`python/dispatch_kf`).
//!
//! It reads the text with the model's dump reader, the grammar and leniency
//! `dispatch-kf classify` reads files with, classifies the snapshot, and returns the
//! observations as the JSON `dispatch-kf classify -o json` prints. The only thing it
//! reads from outside is the clock, when no `now` is given. Every refusal is a
//! `ValueError` carrying the sentinel's message. The model does not panic; were it to,
//! the panic is caught here and raised as a `RuntimeError`, which `except Exception`
//! catches (PyO3's own `PanicException` is not an `Exception`). The classification runs
//! with the GIL released, so other Python threads run meanwhile.

use dispatch_core::Error;
use dispatch_kf_model::{ClassifyOptions, Detail, Mode, classify, dump};
use jiff::Timestamp;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// What the document is called in error messages, as the CLI names a file.
const DOCUMENT: &str = "document";

/// The backend name the observations' references carry, as `dispatch-kf classify`'s
/// default `--backend`.
const BACKEND: &str = "kubeflow";

/// The observations of `document` (a Kubernetes object or List, as JSON text) as JSON
/// text: `mode` is `plain` or `kueue`, `nodes_readable` as given or, when `None`, as
/// `dispatch-kf classify` decides it (refinement R6: whether the document holds a
/// Node), `now` an RFC 3339 time or `None` for the current time.
fn classify_text(
    document: &str,
    mode: &str,
    nodes_readable: Option<bool>,
    now: Option<&str>,
) -> Result<String, Error> {
    let mode = match mode {
        "plain" => Mode::Plain,
        "kueue" => Mode::Kueue,
        other => {
            return Err(Error::invalid(format!("mode {other:?} is not \"plain\" or \"kueue\"")));
        }
    };
    let now = match now {
        Some(text) => text
            .parse::<Timestamp>()
            .map_err(|e| Error::invalid(format!("now {text:?} is not an RFC 3339 time: {e}")))?,
        None => Timestamp::now(),
    };
    let snapshot = dump::read(DOCUMENT, document.as_bytes())?;
    let nodes_readable =
        nodes_readable.unwrap_or_else(|| dump::nodes_readable_by_default(&snapshot));
    let options = ClassifyOptions {
        mode,
        nodes_readable,
        backend: BACKEND.to_owned(),
        detail: Detail::WithNotes,
    };
    let observations = classify(&snapshot, &options, now);
    serde_json::to_string(&observations)
        .map_err(|e| Error::invalid(format!("cannot write the observations as JSON: {e}")))
}

/// `classify_json(document, mode, nodes_readable, now)`: see [`classify_text`]; run
/// with the GIL released, a panic raised as `RuntimeError`.
#[pyfunction]
#[pyo3(signature = (document, mode, nodes_readable=None, now=None))]
fn classify_json(
    py: Python<'_>,
    document: &str,
    mode: &str,
    nodes_readable: Option<bool>,
    now: Option<&str>,
) -> PyResult<String> {
    let classified = py
        .detach(|| std::panic::catch_unwind(|| classify_text(document, mode, nodes_readable, now)));
    match classified {
        Ok(answer) => answer.map_err(|e| PyValueError::new_err(e.message().to_owned())),
        Err(panic) => Err(PyRuntimeError::new_err(format!(
            "dispatch-kf's classifier failed on this document (a bug: please report it with the document): {}",
            panic_message(panic.as_ref())
        ))),
    }
}

/// What a caught panic said.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// The module `dispatch_kf._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(classify_json, module)?)
}
