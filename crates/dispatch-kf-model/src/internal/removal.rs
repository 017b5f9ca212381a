//! What StopJob does to a job's objects beyond deleting them
//! (`docs/background-deletion.md#what-stopjob-does`).
//!
//! The Job controller puts its tracking finalizer ([`keys::JOB_TRACKING_FINALIZER`]) on
//! every pod of a Job and takes it off once it has counted the pod, or once the pod's
//! Job is gone. It misses some of the latter: when the Job's deletion is handled, it
//! takes the finalizer off the Job's pods one patch at a time, and a patch that fails
//! then (the apiserver restarting, say) is logged and not tried again. Such a pod, once
//! deleted, stays Terminating for good, and StopJob would wait for it until its
//! deadline. So StopJob does for a pod what the Job controller does for an orphan:
//! when the pod is being deleted, holds the finalizer, and no Job that exists controls
//! it, StopJob takes the finalizer off, conditionally on the pod's UID and on the
//! finalizer still standing where it was read.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::keys;
use crate::lenient::Str;
use crate::object::Meta;

/// The JSON patch (RFC 6902) that takes the Job controller's tracking finalizer off
/// `pod`, when StopJob should: the pod is being deleted, holds the finalizer, and its
/// controller is none of `live_jobs` (the UIDs of the Jobs that exist). The patch's
/// `test` operations make it fail, with nothing written, if the pod is another instance
/// or its finalizers moved since it was read.
pub fn release_from_gone_job<S: Str>(pod: &Meta<S>, live_jobs: &BTreeSet<&str>) -> Option<Value> {
    let place = pod.job_tracking.place()?;
    let deleting = pod.deletion_timestamp.get().is_some();
    let job_gone = pod.controller().is_none_or(|o| !live_jobs.contains(o.uid.or_empty()));
    let path = format!("/metadata/finalizers/{place}");
    (deleting && job_gone).then(|| {
        json!([
            {"op": "test", "path": "/metadata/uid", "value": pod.uid()},
            {"op": "test", "path": path, "value": keys::JOB_TRACKING_FINALIZER},
            {"op": "remove", "path": path},
        ])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(deleting: bool, finalizers: &[&str], controller: Option<&str>) -> Meta {
        let mut meta = json!({"name": "p", "uid": "pod-1", "finalizers": finalizers});
        if deleting {
            meta["deletionTimestamp"] = json!("2026-12-05T15:00:00Z");
        }
        if let Some(uid) = controller {
            meta["ownerReferences"] = json!([{"uid": uid, "controller": true}]);
        }
        serde_json::from_value(meta).unwrap()
    }

    const TRACKING: &str = keys::JOB_TRACKING_FINALIZER;

    #[test]
    fn a_deleted_pod_whose_job_is_gone_is_released_at_the_finalizers_place() {
        let live = BTreeSet::from(["job-2"]);
        let patch = release_from_gone_job(&pod(true, &["x", TRACKING], Some("job-1")), &live);
        let expected = json!([
            {"op": "test", "path": "/metadata/uid", "value": "pod-1"},
            {"op": "test", "path": "/metadata/finalizers/1", "value": TRACKING},
            {"op": "remove", "path": "/metadata/finalizers/1"},
        ]);
        assert_eq!(patch, Some(expected));
        let uncontrolled = release_from_gone_job(&pod(true, &[TRACKING], None), &live);
        assert!(uncontrolled.is_some(), "a pod no Job controls is released too");
    }

    #[test]
    fn a_pod_whose_job_exists_or_not_deleted_or_without_the_finalizer_is_left() {
        let live = BTreeSet::from(["job-1"]);
        let cases = [
            pod(true, &[TRACKING], Some("job-1")),
            pod(false, &[TRACKING], Some("job-2")),
            pod(true, &["x"], Some("job-2")),
            pod(true, &[], None),
        ];
        for case in &cases {
            assert_eq!(release_from_gone_job(case, &live), None, "{case:?}");
        }
    }
}
