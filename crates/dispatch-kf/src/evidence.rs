//! Deleted pods' evidence (`docs/backend.md#watch-and-the-deleted-pods-evidence`): while
//! a Watch is open, a deleted pod of the job leaves its last state (exit code,
//! DisruptionTarget) here, against its TrainJob. Every later classification by this
//! Backend reads them. What is kept grows with the job's own ranks, not a constant: for
//! each TrainJob name, its newest instances, and of each the pods of its newest
//! executions, however many ranks they have (the rank that failed first, whose pod a
//! teardown deletes first, is the cause). It lives in this Backend's memory only, and
//! no longer than it can matter: once no Watch of the job is open, a Find that no
//! longer sees a TrainJob forgets its evidence.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dispatch_core::JobId;
use dispatch_kf_model::internal::evidence::Kept;
use dispatch_kf_model::view::Pod;
use dispatch_kf_model::{Snapshot, keys, names};

/// The captured pods, and the Watches open, by job.
#[derive(Default)]
pub(crate) struct Evidence {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The captured pods, by job, then by TrainJob name.
    pods: HashMap<JobId, HashMap<String, Kept>>,
    /// How many Watches of each job are open.
    watches: HashMap<JobId, usize>,
    /// When the watch of pods last lost its place while a Watch of the job was open:
    /// pods deleted before then may be missing.
    gaps: HashMap<JobId, jiff::Timestamp>,
}

/// One open Watch of a job: while any is open, the job's evidence is kept whole.
pub(crate) struct Watching {
    evidence: Arc<Evidence>,
    job: JobId,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut state = self.evidence.lock();
        if let Some(open) = state.watches.get_mut(&self.job) {
            *open -= 1;
            if *open == 0 {
                state.watches.remove(&self.job);
            }
        }
    }
}

impl Evidence {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a Watch of `job` open until the guard is dropped.
    pub(crate) fn watching(self: &Arc<Self>, job: &JobId) -> Watching {
        *self.lock().watches.entry(job.clone()).or_default() += 1;
        Watching { evidence: self.clone(), job: job.clone() }
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
        let mut state = self.lock();
        state.pods.entry(job.clone()).or_default().entry(train_job).or_default().keep(pod);
    }

    /// The watch of pods lost its place and listed anew at `at`, while a Watch of `job`
    /// was open: its deleted pods of before then may be missing.
    pub(crate) fn mark_gap(&self, job: &JobId, at: jiff::Timestamp) {
        self.lock().gaps.insert(job.clone(), at);
    }

    /// When `job`'s evidence last had a gap, if it did.
    pub(crate) fn gap_of(&self, job: &JobId) -> Option<jiff::Timestamp> {
        self.lock().gaps.get(job).copied()
    }

    /// Every captured pod of `job`, by TrainJob, instance and execution.
    pub(crate) fn of_job(&self, job: &JobId) -> Vec<Pod> {
        let state = self.lock();
        let mut train_jobs: Vec<_> = state.pods.get(job).into_iter().flatten().collect();
        train_jobs.sort_by(|a, b| a.0.cmp(b.0));
        train_jobs.into_iter().flat_map(|(_, kept)| kept.pods().cloned()).collect()
    }

    /// After a read of `job`'s objects: with no Watch of the job open, forgets the
    /// evidence of every TrainJob `read` no longer holds.
    pub(crate) fn forget_gone(&self, job: &JobId, read: &Snapshot) {
        let mut state = self.lock();
        if state.watches.contains_key(job) {
            return;
        }
        if read.train_jobs.is_empty() {
            state.gaps.remove(job);
        }
        let Some(kept) = state.pods.get_mut(job) else { return };
        kept.retain(|name, _| read.train_jobs.iter().any(|t| t.meta.name() == name));
        if kept.is_empty() {
            state.pods.remove(job);
        }
    }

    /// How many jobs have evidence kept: what memory it holds grows with.
    #[cfg(test)]
    fn jobs_kept(&self) -> usize {
        self.lock().pods.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_kf_model::internal::answer::read_object;
    use dispatch_kf_model::view::View;
    use serde_json::json;

    const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";
    const TRAIN_JOB: &str = "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1";

    /// Deleted pod `i` of the TrainJob: of `instance` (a JobSet UID) and of execution
    /// (A, J) when given.
    fn placed(i: usize, instance: &str, execution: Option<(u64, u64)>) -> Pod {
        let mut labels = json!({keys::JOBSET_NAME: TRAIN_JOB, keys::JOBSET_UID: instance});
        let mut annotations = json!({});
        if let Some((a, j)) = execution {
            labels[keys::JOBSET_RESTART_ATTEMPT] = json!(j.to_string());
            annotations[keys::ANN_ADMISSION] = json!(a.to_string());
        }
        let bytes = serde_json::to_vec(&json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{TRAIN_JOB}-node-0-{i}-abcde"), "uid": format!("u{i}"),
                         "labels": labels, "annotations": annotations}
        }))
        .unwrap();
        let View::Pod(pod) = read_object(&bytes).unwrap() else { panic!("a Pod is read as a Pod") };
        pod
    }

    fn pod(i: usize) -> Pod {
        placed(i, "js-1", Some((1, 0)))
    }

    fn uids(pods: &[Pod]) -> Vec<&str> {
        pods.iter().map(|p| p.meta.uid()).collect()
    }

    /// A 1,024-rank job whose rank out of memory is deleted first, then the other
    /// 1,023 by the teardown: every one is kept, the first too, so the cause is that
    /// rank's, not one the teardown killed.
    #[test]
    fn every_rank_of_a_large_execution_is_kept_the_first_deleted_too() {
        let evidence = Evidence::default();
        let job = JobId::parse(JOB).unwrap();
        for i in 0..1024 {
            evidence.capture(&job, pod(i));
        }
        let kept = evidence.of_job(&job);
        assert_eq!(kept.len(), 1024);
        assert_eq!(kept[0].meta.uid(), "u0", "the first deleted is kept");
    }

    /// What can no longer matter goes: executions older than the newest two of an
    /// instance (by R, then A), instances older than the newest two, and pods that
    /// carry no execution beyond the newest 256.
    #[test]
    fn only_the_newest_executions_and_instances_are_kept() {
        let evidence = Evidence::default();
        let job = JobId::parse(JOB).unwrap();
        // Executions (A, J) = (1, 0), then (1, 1), then (2, 0): R = 1, 2, 2.
        evidence.capture(&job, placed(1, "js-1", Some((1, 0))));
        evidence.capture(&job, placed(2, "js-1", Some((1, 1))));
        evidence.capture(&job, placed(3, "js-1", Some((2, 0))));
        assert_eq!(uids(&evidence.of_job(&job)), ["u2", "u3"], "(1, 0) is the oldest");
        // Two more instances of the name: the first goes.
        evidence.capture(&job, placed(4, "js-2", Some((1, 0))));
        evidence.capture(&job, placed(5, "js-3", Some((1, 0))));
        assert_eq!(uids(&evidence.of_job(&job)), ["u4", "u5"]);
        // Pods without an execution: the newest 256.
        for i in 100..400 {
            evidence.capture(&job, placed(i, "js-3", None));
        }
        let kept = evidence.of_job(&job);
        assert_eq!(kept.len(), 2 + dispatch_kf_model::internal::evidence::UNPLACED_KEPT);
        assert!(uids(&kept).contains(&"u144") && !uids(&kept).contains(&"u143"));
    }

    fn snapshot_with(train_jobs: &[&str]) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for name in train_jobs {
            let bytes =
                serde_json::to_vec(&json!({"kind": "TrainJob", "metadata": {"name": name}}));
            snapshot.push(read_object(&bytes.unwrap()).unwrap());
        }
        snapshot
    }

    #[test]
    fn evidence_goes_once_no_watch_is_open_and_its_train_job_is_gone() {
        let evidence = Arc::new(Evidence::default());
        let job = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE").unwrap();
        let (one, other) = (evidence.watching(&job), evidence.watching(&job));
        evidence.capture(&job, pod(1));
        let train_job = TRAIN_JOB;
        evidence.forget_gone(&job, &snapshot_with(&[]));
        assert_eq!(evidence.of_job(&job).len(), 1, "kept while a Watch is open");
        drop(one);
        evidence.forget_gone(&job, &snapshot_with(&[]));
        assert_eq!(evidence.of_job(&job).len(), 1, "kept while the other Watch is open");
        drop(other);
        evidence.forget_gone(&job, &snapshot_with(&[train_job]));
        assert_eq!(evidence.of_job(&job).len(), 1, "kept while its TrainJob exists");
        evidence.forget_gone(&job, &snapshot_with(&[]));
        assert!(evidence.of_job(&job).is_empty());
        assert_eq!(evidence.jobs_kept(), 0, "nothing is kept of the job");
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
