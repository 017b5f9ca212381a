//! Deleted pods' evidence (`docs/backend.md#watch-and-the-deleted-pods-evidence`): while
//! a Watch is open, a deleted pod of the job leaves its last state (exit code,
//! DisruptionTarget) here, against its TrainJob, the newest 256 per TrainJob. Every
//! later classification by this Backend reads them. It lives in this Backend's memory
//! only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use dispatch_core::JobId;
use dispatch_kf_model::view::Pod;
use dispatch_kf_model::{keys, names};

/// How many deleted pods are kept per TrainJob; the oldest go first.
pub(crate) const KEPT_PER_TRAIN_JOB: usize = 256;

/// The captured pods, by job, then by TrainJob name.
#[derive(Default)]
pub(crate) struct Evidence {
    pods: Mutex<HashMap<JobId, HashMap<String, VecDeque<Pod>>>>,
}

impl Evidence {
    fn lock(&self) -> MutexGuard<'_, HashMap<JobId, HashMap<String, VecDeque<Pod>>>> {
        self.pods.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `pod`'s last state against its TrainJob (the JobSet it belongs to has the
    /// TrainJob's name). A pod of no TrainJob of `job` is not evidence.
    pub(crate) fn capture(&self, job: &JobId, pod: Pod) {
        let train_job = match pod.meta.label(keys::JOBSET_NAME) {
            Some(name) => name.to_owned(),
            None => match names::parse_prefix(pod.meta.name()) {
                Some((j, n)) => names::make(&j, n),
                None => return,
            },
        };
        let mut all = self.lock();
        let kept = all.entry(job.clone()).or_default().entry(train_job).or_default();
        kept.retain(|p| p.meta.uid() != pod.meta.uid());
        kept.push_back(pod);
        while kept.len() > KEPT_PER_TRAIN_JOB {
            kept.pop_front();
        }
    }

    /// Every captured pod of `job`, oldest first per TrainJob.
    pub(crate) fn of_job(&self, job: &JobId) -> Vec<Pod> {
        let all = self.lock();
        let mut train_jobs: Vec<_> = all.get(job).into_iter().flatten().collect();
        train_jobs.sort_by(|a, b| a.0.cmp(b.0));
        train_jobs.into_iter().flat_map(|(_, pods)| pods.iter().cloned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_kf_model::object::RawObject;
    use dispatch_kf_model::view::View;
    use serde_json::json;

    fn pod(i: usize) -> Pod {
        let raw: RawObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1-node-0-{i}-abcde"), "uid": format!("u{i}"),
                         "labels": {keys::JOBSET_NAME: "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1"}}
        }))
        .unwrap();
        let View::Pod(pod) = View::from(raw) else { panic!("a Pod is read as a Pod") };
        pod
    }

    #[test]
    fn three_hundred_deleted_pods_keep_the_newest_256() {
        let evidence = Evidence::default();
        let job = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE").unwrap();
        for i in 0..300 {
            evidence.capture(&job, pod(i));
        }
        let kept = evidence.of_job(&job);
        assert_eq!(kept.len(), KEPT_PER_TRAIN_JOB);
        assert_eq!(kept[0].meta.uid(), "u44", "the oldest 44 are dropped");
        assert_eq!(kept[255].meta.uid(), "u299");
    }

    #[test]
    fn a_pod_captured_twice_is_kept_once() {
        let evidence = Evidence::default();
        let job = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE").unwrap();
        evidence.capture(&job, pod(1));
        evidence.capture(&job, pod(1));
        assert_eq!(evidence.of_job(&job).len(), 1);
    }
}
