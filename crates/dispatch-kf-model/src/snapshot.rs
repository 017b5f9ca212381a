//! [`Snapshot`]: everything one classification reads, as a plain struct.
//!
//! The Backend fills one from its reads of the cluster (and the pods its Watch
//! captured); `dispatch-kf classify` fills one from `kubectl get -o json` output
//! ([`crate::dump`]). Whether Nodes could be read is a classification option, not part
//! of the snapshot.

use crate::lenient::Str;
use crate::view::{JobSet, Node, Pod, RuntimeCopy, TrainJob, View, Workload};

/// The objects of one classification.
#[derive(Clone, Debug)]
pub struct Snapshot<S = String> {
    /// TrainJobs.
    pub train_jobs: Vec<TrainJob<S>>,
    /// JobSets.
    pub job_sets: Vec<JobSet<S>>,
    /// Kueue Workloads.
    pub workloads: Vec<Workload<S>>,
    /// Pods that exist now, Terminating ones included.
    pub pods: Vec<Pod<S>>,
    /// The last state of pods that have been deleted, as a Watch captured them.
    pub captured_pods: Vec<Pod<S>>,
    /// Nodes (read only when the adapter may get them).
    pub nodes: Vec<Node<S>>,
    /// Runtime copies (namespaced TrainingRuntimes).
    pub runtimes: Vec<RuntimeCopy<S>>,
    /// When the watch that captured pods lost its place (a 410) and listed anew, the
    /// last time it did: pods deleted before then may be missing from
    /// [`Snapshot::captured_pods`]. `None` when the capture has no known gap.
    pub evidence_gap: Option<jiff::Timestamp>,
}

impl<S> Default for Snapshot<S> {
    fn default() -> Self {
        Snapshot {
            train_jobs: Vec::new(),
            job_sets: Vec::new(),
            workloads: Vec::new(),
            pods: Vec::new(),
            captured_pods: Vec::new(),
            nodes: Vec::new(),
            runtimes: Vec::new(),
            evidence_gap: None,
        }
    }
}

/// `to` and then `more`: `more` itself when `to` is empty (a dump's hundreds of
/// thousands of pods are not moved to be added to nothing).
fn append<T>(to: &mut Vec<T>, mut more: Vec<T>) {
    if to.is_empty() {
        std::mem::swap(to, &mut more);
    } else {
        to.append(&mut more);
    }
}

impl<S: Str> Snapshot<S> {
    /// Adds one live object to the vector of its kind; other kinds are dropped.
    pub fn push(&mut self, view: View<S>) {
        match view {
            View::TrainJob(o) => self.train_jobs.push(o),
            View::JobSet(o) => self.job_sets.push(o),
            View::Workload(o) => self.workloads.push(o),
            View::Pod(o) => self.pods.push(o),
            View::Node(o) => self.nodes.push(o),
            View::RuntimeCopy(o) => self.runtimes.push(o),
            View::Other(_) => {}
        }
    }

    /// Adds every object of `other`.
    pub fn extend(&mut self, other: Snapshot<S>) {
        append(&mut self.train_jobs, other.train_jobs);
        append(&mut self.job_sets, other.job_sets);
        append(&mut self.workloads, other.workloads);
        append(&mut self.pods, other.pods);
        append(&mut self.captured_pods, other.captured_pods);
        append(&mut self.nodes, other.nodes);
        append(&mut self.runtimes, other.runtimes);
        self.evidence_gap = self.evidence_gap.max(other.evidence_gap);
    }
}
