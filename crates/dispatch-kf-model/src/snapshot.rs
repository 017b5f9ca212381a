//! [`Snapshot`]: everything one classification reads, as a plain struct.
//!
//! The Backend fills one from its reads of the cluster (and the pods its Watch
//! captured); `dispatch-kf classify` fills one from `kubectl get -o json` output
//! ([`crate::dump`]). Whether Nodes could be read is a classification option, not part
//! of the snapshot.

use crate::view::{JobSet, Node, Pod, RuntimeCopy, TrainJob, View, Workload};

/// The objects of one classification.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// TrainJobs.
    pub train_jobs: Vec<TrainJob>,
    /// JobSets.
    pub job_sets: Vec<JobSet>,
    /// Kueue Workloads.
    pub workloads: Vec<Workload>,
    /// Pods that exist now, Terminating ones included.
    pub pods: Vec<Pod>,
    /// The last state of pods that have been deleted, as a Watch captured them.
    pub captured_pods: Vec<Pod>,
    /// Nodes (read only when the adapter may get them).
    pub nodes: Vec<Node>,
    /// Runtime copies (namespaced TrainingRuntimes).
    pub runtimes: Vec<RuntimeCopy>,
}

impl Snapshot {
    /// Adds one live object to the vector of its kind; other kinds are dropped.
    pub fn push(&mut self, view: View) {
        match view {
            View::TrainJob(o) => self.train_jobs.push(o),
            View::JobSet(o) => self.job_sets.push(o),
            View::Workload(o) => self.workloads.push(o),
            View::Pod(o) => self.pods.push(o),
            View::Node(o) => self.nodes.push(o),
            View::RuntimeCopy(o) => self.runtimes.push(o),
            View::Other => {}
        }
    }

    /// Adds every object of `other`.
    pub fn extend(&mut self, other: Snapshot) {
        self.train_jobs.extend(other.train_jobs);
        self.job_sets.extend(other.job_sets);
        self.workloads.extend(other.workloads);
        self.pods.extend(other.pods);
        self.captured_pods.extend(other.captured_pods);
        self.nodes.extend(other.nodes);
        self.runtimes.extend(other.runtimes);
    }
}
