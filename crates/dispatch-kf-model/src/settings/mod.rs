//! [`Settings`]: one adapter instance's configuration, read strictly from JSON or YAML
//! (`docs/settings.md`): a document that is malformed, or holds an unknown key, a null,
//! or a value that fails validation, is *invalid*.
//!
//! An unknown key, a null, a wrong type or a failed validation is `Invalid`, and the
//! message names the key path (`timeouts.stopJob`). Defaults are in [`defaults`].

pub(crate) mod strict;

use dispatch_core::{Error, Timespan};
use serde_json::Value;

use crate::Mode;
use crate::keys;
use crate::runtime::RuntimeRef;
use strict::{Obj, is_rfc1123_label, is_rfc1123_subdomain};

/// The defaults of the keys that may be left out (documented in `docs/settings.md`).
pub(crate) mod defaults {
    use dispatch_core::Timespan;

    /// `timeouts.request`: one apiserver request.
    pub(crate) const REQUEST: Timespan = Timespan::from_secs(30);
    /// `timeouts.workload`: how long Start waits for Kueue's Workload.
    pub(crate) const WORKLOAD: Timespan = Timespan::from_secs(60);
    /// `timeouts.stopJob`: StopJob's default deadline.
    pub(crate) const STOP_JOB: Timespan = Timespan::from_secs(300);
    /// `timeouts.callBound`: the apiserver's default request timeout (60s) plus the
    /// client's own (30s).
    pub(crate) const CALL_BOUND: Timespan = Timespan::from_secs(90);
    /// `nodeLossWindow`: how long a NotReady node may stay so before its pods count as lost.
    pub(crate) const NODE_LOSS_WINDOW: Timespan = Timespan::from_secs(600);
    /// `kueue.admissionCheck`.
    pub(crate) const ADMISSION_CHECK: &str = "dispatch-readmission";
    /// `kueue.lease.namespace`.
    pub(crate) const LEASE_NAMESPACE: &str = "dispatch-system";
    /// `kueue.lease.name`.
    pub(crate) const LEASE_NAME: &str = "dispatch-readmission-gate";
}

/// One adapter instance's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The backend's name, written into object references: an RFC 1123 label.
    pub name: String,
    /// The namespace every TrainJob and runtime copy lives in.
    pub namespace: String,
    /// Where credentials come from; `None` is in-cluster, then the default kubeconfig.
    pub kubeconfig: Option<Kubeconfig>,
    /// Whether the adapter may not write.
    pub read_only: bool,
    /// Plain or Kueue admission.
    pub mode: Mode,
    /// The runtimes jobs may name; never empty, no duplicates.
    pub runtimes: Vec<RuntimeRef>,
    /// The runtime the preflight probe runs on: one of `runtimes`.
    pub probe_runtime: RuntimeRef,
    /// The extended resource GPUs are asked for under.
    pub gpu_resource: String,
    /// Kueue's queue, check and lease; present exactly in Kueue mode.
    pub kueue: Option<KueueSettings>,
    /// Deadlines.
    pub timeouts: Timeouts,
    /// How long a NotReady node may stay so before its pods count as lost.
    pub node_loss_window: Timespan,
}

/// `kubeconfig`: a file and a context in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kubeconfig {
    /// The file; `None` is the default kubeconfig.
    pub path: Option<String>,
    /// The context; `None` is the file's current context.
    pub context: Option<String>,
}

/// `kueue`: what Kueue mode needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KueueSettings {
    /// The LocalQueue written in the queue-name label.
    pub queue: String,
    /// The AdmissionCheck that gates readmission.
    pub admission_check: String,
    /// The Lease the gate controller holds.
    pub lease: Lease,
}

/// `kueue.lease`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// `timeouts`: each a positive duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// One apiserver request.
    pub request: Timespan,
    /// Start's wait for the Workload (Kueue mode).
    pub workload: Timespan,
    /// StopJob's default deadline.
    pub stop_job: Timespan,
    /// How long after it was sent a write may still take effect; at least `request`.
    pub call_bound: Timespan,
}

const TOP: &[&str] = &[
    "name",
    "namespace",
    "kubeconfig",
    "readOnly",
    "mode",
    "runtimes",
    "probeRuntime",
    "gpuResource",
    "kueue",
    "timeouts",
    "nodeLossWindow",
];

impl Settings {
    /// Reads settings from JSON or YAML bytes.
    pub fn read(bytes: &[u8]) -> Result<Settings, Error> {
        Settings::from_value(&Settings::read_document(bytes)?)
    }

    /// Parses JSON or YAML bytes into the settings document, without validating it: for
    /// a caller that changes the document (the command line's overrides) before
    /// [`Settings::from_value`].
    pub fn read_document(bytes: &[u8]) -> Result<Value, Error> {
        strict::parse_document("settings", bytes)
    }

    /// Reads settings from a parsed document, applying defaults and validation.
    pub fn from_value(doc: &Value) -> Result<Settings, Error> {
        let top = Obj::new("settings", "", doc, TOP)?;
        let name = top.required("name", top.str("name")?)?;
        label(&top, "name", name)?;
        let namespace = top.required("namespace", top.str("namespace")?)?;
        label(&top, "namespace", namespace)?;
        let kubeconfig = match top.object("kubeconfig", &["path", "context"])? {
            None => None,
            Some(k) => Some(Kubeconfig {
                path: non_empty(&k, "path")?,
                context: non_empty(&k, "context")?,
            }),
        };
        let mode = match top.str("mode")? {
            None | Some("plain") => Mode::Plain,
            Some("kueue") => Mode::Kueue,
            Some(other) => {
                return Err(top.err("mode", &format!("is {other:?}: want plain or kueue")));
            }
        };
        let runtimes = read_runtimes(&top)?;
        let probe_runtime = match top.get("probeRuntime") {
            None => runtimes[0].clone(),
            Some(v) => {
                let r = RuntimeRef::from_value("settings", "probeRuntime", v)?;
                if !runtimes.contains(&r) {
                    return Err(top.err("probeRuntime", &format!("is {r}: want one of runtimes")));
                }
                r
            }
        };
        let gpu_resource = top.str("gpuResource")?.unwrap_or(keys::DEFAULT_GPU_RESOURCE);
        if !is_extended_resource(gpu_resource) {
            return Err(top.err(
                "gpuResource",
                &format!(
                    "is {gpu_resource:?}: want an extended resource name such as nvidia.com/gpu"
                ),
            ));
        }
        let kueue = read_kueue(&top, mode)?;
        let timeouts = read_timeouts(&top)?;
        let node_loss_window =
            top.timespan("nodeLossWindow")?.unwrap_or(defaults::NODE_LOSS_WINDOW);
        positive(&top, "nodeLossWindow", node_loss_window)?;
        Ok(Settings {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            kubeconfig,
            read_only: top.bool("readOnly")?.unwrap_or(false),
            mode,
            runtimes,
            probe_runtime,
            gpu_resource: gpu_resource.to_owned(),
            kueue,
            timeouts,
            node_loss_window,
        })
    }
}

fn read_runtimes(top: &Obj<'_>) -> Result<Vec<RuntimeRef>, Error> {
    let list = top.required("runtimes", top.array("runtimes")?)?;
    if list.is_empty() {
        return Err(top.err("runtimes", "is empty: want at least one runtime"));
    }
    let mut runtimes: Vec<RuntimeRef> = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let path = format!("runtimes[{i}]");
        let r = RuntimeRef::from_value("settings", &top.path(&path), v)?;
        if runtimes.contains(&r) {
            return Err(top.err(&path, &format!("repeats {r}: list each runtime once")));
        }
        runtimes.push(r);
    }
    Ok(runtimes)
}

fn read_kueue(top: &Obj<'_>, mode: Mode) -> Result<Option<KueueSettings>, Error> {
    let kueue = top.object("kueue", &["queue", "admissionCheck", "lease"])?;
    let k = match (mode, kueue) {
        (Mode::Plain, None) => return Ok(None),
        (Mode::Plain, Some(_)) => {
            return Err(top.err("kueue", "is set in plain mode: remove it or set mode to kueue"));
        }
        (Mode::Kueue, None) => return Err(top.err("kueue", "is missing: kueue mode needs it")),
        (Mode::Kueue, Some(k)) => k,
    };
    let queue = k.required("queue", k.str("queue")?)?;
    label(&k, "queue", queue)?;
    let check = k.str("admissionCheck")?.unwrap_or(defaults::ADMISSION_CHECK);
    subdomain(&k, "admissionCheck", check)?;
    let lease = match k.object("lease", &["namespace", "name"])? {
        None => {
            Lease { namespace: defaults::LEASE_NAMESPACE.into(), name: defaults::LEASE_NAME.into() }
        }
        Some(l) => {
            let namespace = l.str("namespace")?.unwrap_or(defaults::LEASE_NAMESPACE);
            label(&l, "namespace", namespace)?;
            let name = l.str("name")?.unwrap_or(defaults::LEASE_NAME);
            subdomain(&l, "name", name)?;
            Lease { namespace: namespace.into(), name: name.into() }
        }
    };
    Ok(Some(KueueSettings { queue: queue.into(), admission_check: check.into(), lease }))
}

fn read_timeouts(top: &Obj<'_>) -> Result<Timeouts, Error> {
    let Some(t) = top.object("timeouts", &["request", "workload", "stopJob", "callBound"])? else {
        return Ok(Timeouts {
            request: defaults::REQUEST,
            workload: defaults::WORKLOAD,
            stop_job: defaults::STOP_JOB,
            call_bound: defaults::CALL_BOUND,
        });
    };
    let read = |key: &str, default: Timespan| -> Result<Timespan, Error> {
        let span = t.timespan(key)?.unwrap_or(default);
        positive(&t, key, span)?;
        Ok(span)
    };
    let timeouts = Timeouts {
        request: read("request", defaults::REQUEST)?,
        workload: read("workload", defaults::WORKLOAD)?,
        stop_job: read("stopJob", defaults::STOP_JOB)?,
        call_bound: read("callBound", defaults::CALL_BOUND)?,
    };
    if timeouts.call_bound < timeouts.request {
        return Err(t.err(
            "callBound",
            &format!(
                "is {}, shorter than timeouts.request {}: a write may take effect until the request's own timeout",
                timeouts.call_bound, timeouts.request
            ),
        ));
    }
    Ok(timeouts)
}

fn label(obj: &Obj<'_>, key: &str, value: &str) -> Result<(), Error> {
    if is_rfc1123_label(value) {
        return Ok(());
    }
    Err(obj.err(
        key,
        &format!(
            "is {value:?}: want an RFC 1123 label (lower-case letters, digits and '-', at most 63)"
        ),
    ))
}

fn subdomain(obj: &Obj<'_>, key: &str, value: &str) -> Result<(), Error> {
    if is_rfc1123_subdomain(value) {
        return Ok(());
    }
    Err(obj.err(
        key,
        &format!(
            "is {value:?}: want a Kubernetes object name (lower-case letters, digits, '-' and '.')"
        ),
    ))
}

fn non_empty(obj: &Obj<'_>, key: &str) -> Result<Option<String>, Error> {
    match obj.str(key)? {
        Some("") => Err(obj.err(key, "is empty: give a value or leave it out")),
        other => Ok(other.map(str::to_owned)),
    }
}

fn positive(obj: &Obj<'_>, key: &str, span: Timespan) -> Result<(), Error> {
    if span.is_positive() {
        return Ok(());
    }
    Err(obj.err(key, &format!("is {span}: want a duration above zero")))
}

/// `<domain>/<name>`: a DNS subdomain, a slash, and a name of letters, digits, `-`, `_`
/// and `.` that starts and ends with a letter or digit.
fn is_extended_resource(text: &str) -> bool {
    let Some((domain, name)) = text.split_once('/') else { return false };
    let b = name.as_bytes();
    is_rfc1123_subdomain(domain)
        && domain.contains('.')
        && !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests;
