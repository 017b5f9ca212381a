//! The preflight probe (`docs/backend.md#the-preflight-probe`): its request, how long a
//! probe may last, and when the objects a probe left behind are abandoned.
//!
//! A probe removes its own objects, but a process killed mid-probe (a command stopped
//! by its user, a machine gone) cannot, and its job id is random, so no supervisor
//! would ever stop it; in Kueue mode its Workload may hold quota. So a probe's TrainJob
//! and runtime copy carry the label [`keys::LABEL_PURPOSE`]`: probe` and the annotation
//! [`keys::ANN_PROBE_EXPIRES`], the moment by which the probe that made them has ended
//! whatever happened, and the next probe in the namespace removes those past it.
//!
//! Nothing here reads a clock: `now` is a parameter.

use std::time::Duration;

use dispatch_core::{JobId, JobSpec, StartRequest, ext};
use jiff::Timestamp;
use serde_json::json;

use crate::keys;
use crate::object::Meta;
use crate::settings::{Settings, Timeouts};

/// The preflight probe's request (`docs/render.md#the-preflight-probe`): the image
/// `dispatch.invalid/never:probe`, the command `true`, one node, submission 1, attempt
/// 1, generation 0, on the settings' `probeRuntime`. `job` is made by the caller (a
/// fresh ULID), so that two probes never share a name.
pub fn request(settings: &Settings, job: JobId) -> StartRequest {
    let extensions = [
        (ext::IMAGE.to_owned(), json!({"ref": keys::PROBE_IMAGE})),
        (keys::EXT_RUNTIME_REF.to_owned(), settings.probe_runtime.to_value()),
    ];
    StartRequest {
        job,
        generation: 0,
        submission: 1,
        attempt: 1,
        spec: JobSpec {
            command: vec!["true".to_owned()],
            nodes: 1,
            extensions: extensions.into_iter().collect(),
            ..JobSpec::default()
        },
        native: Vec::new(),
    }
}

/// Requests' worth of time (`timeouts.request` each) the probe's steps may take beyond
/// `timeouts.workload`: its Start (the copy, the TrainJob, the read-back) and its Hold
/// and Release, each a read and a write, with room for a retry.
const STEP_REQUESTS: u32 = 8;

/// Requests' worth of time the probe's clean-up may take, on a context of its own: the
/// caller's may have ended.
const CLEAN_UP_REQUESTS: u32 = 4;

/// How far apart the clocks of the process that probed and the one that sweeps may be:
/// an object is abandoned only this long after its expiry.
pub const CLOCK_ALLOWANCE: Duration = Duration::from_secs(120);

/// The time a probe may take, from the settings' timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Start, the plain-mode look for a Workload, and the Hold and Release round trip:
    /// the probe's steps run under a deadline this far off, or the caller's if sooner.
    pub steps: Duration,
    /// The removal of the probe's objects afterwards, and the sweep of abandoned ones.
    pub clean_up: Duration,
}

impl Budget {
    /// The budget under `timeouts`.
    pub fn of(timeouts: &Timeouts) -> Budget {
        let request = timeouts.request.to_std().unwrap_or_default();
        let workload = timeouts.workload.to_std().unwrap_or_default();
        Budget { steps: workload + request * STEP_REQUESTS, clean_up: request * CLEAN_UP_REQUESTS }
    }

    /// When a probe that begins at `now` has ended, its clean-up included.
    pub fn expires(&self, now: Timestamp) -> Timestamp {
        let whole = jiff::SignedDuration::try_from(self.steps + self.clean_up)
            .unwrap_or(jiff::SignedDuration::MAX);
        now.saturating_add(whole).unwrap_or(Timestamp::MAX)
    }
}

/// The label selector of the objects probes make.
pub fn selector() -> String {
    format!("{}={}", keys::LABEL_PURPOSE, keys::PURPOSE_PROBE)
}

/// Whether the probe object `meta` describes was left behind: it carries the probe's
/// label and an expiry, and `now` is [`CLOCK_ALLOWANCE`] past it. An object without a
/// readable expiry is never abandoned: nothing says its probe has ended.
pub fn abandoned(meta: &Meta, now: Timestamp) -> bool {
    if meta.label(keys::LABEL_PURPOSE) != Some(keys::PURPOSE_PROBE) {
        return false;
    }
    let Some(expires) = meta.annotation(keys::ANN_PROBE_EXPIRES) else { return false };
    let Ok(expires) = expires.parse::<Timestamp>() else { return false };
    let allowance = jiff::SignedDuration::try_from(CLOCK_ALLOWANCE).unwrap_or_default();
    expires.saturating_add(allowance).is_ok_and(|gone| now > gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(labels: serde_json::Value, annotations: serde_json::Value) -> Meta {
        serde_json::from_value(json!({"name": "x", "labels": labels, "annotations": annotations}))
            .unwrap()
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn the_budget_covers_the_steps_and_the_clean_up() {
        let span = |t: &str| dispatch_core::Timespan::parse(t).unwrap();
        let timeouts = Timeouts {
            request: span("20s"),
            workload: span("30s"),
            stop_job: span("5m"),
            call_bound: span("60s"),
        };
        let budget = Budget::of(&timeouts);
        assert_eq!(budget.steps, Duration::from_secs(30 + 8 * 20));
        assert_eq!(budget.clean_up, Duration::from_secs(4 * 20));
        assert_eq!(budget.expires(at("2026-12-05T12:00:00Z")), at("2026-12-05T12:04:30Z"));
    }

    #[test]
    fn a_probe_object_is_abandoned_only_past_its_expiry_and_the_clock_allowance() {
        let probe = json!({(keys::LABEL_PURPOSE): keys::PURPOSE_PROBE});
        let expiry = json!({(keys::ANN_PROBE_EXPIRES): "2026-12-05T12:00:00Z"});
        let m = meta(probe.clone(), expiry.clone());
        assert!(!abandoned(&m, at("2026-12-05T11:59:00Z")), "its probe may still run");
        assert!(!abandoned(&m, at("2026-12-05T12:02:00Z")), "within the clock allowance");
        assert!(abandoned(&m, at("2026-12-05T12:02:01Z")));
    }

    #[test]
    fn an_object_not_marked_or_not_dated_is_never_abandoned() {
        let late = at("2099-01-01T00:00:00Z");
        let probe = json!({(keys::LABEL_PURPOSE): keys::PURPOSE_PROBE});
        let expiry = json!({(keys::ANN_PROBE_EXPIRES): "2026-12-05T12:00:00Z"});
        assert!(!abandoned(&meta(json!({}), expiry.clone()), late), "a job's object");
        assert!(!abandoned(&meta(probe.clone(), json!({})), late), "no expiry");
        let garbled = json!({(keys::ANN_PROBE_EXPIRES): "soon"});
        assert!(!abandoned(&meta(probe, garbled), late), "an expiry that does not parse");
    }
}
