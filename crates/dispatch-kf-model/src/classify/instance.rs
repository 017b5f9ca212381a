//! Which pods are of a TrainJob's current instance. A TrainJob deleted and made again
//! under its name (Stop, StopJob, then a new Start of the same submission) can leave pods
//! behind (terminating on a lost node) and captured evidence under the same
//! `jobset-name` label; taken for the new instance's, an old execution with a higher R
//! would pass for the current one, and Ceased would answer for the old pods' Nodes
//! (`docs/classification.md#one-instance-of-a-name-classifyinstancers`).
//!
//! JobSet labels every pod it makes with its own UID (`jobset.sigs.k8s.io/jobset-uid`),
//! and the Trainer's JobSet is controlled by its TrainJob: a pod is of the TrainJob's
//! instance when its label names the JobSet of the TrainJob's name that the TrainJob
//! controls. Where the snapshot cannot say (no JobSet of the name in it, as in a dump of
//! TrainJobs and pods alone; a pod without the label), every pod of the name counts, as
//! before.

use crate::keys;
use crate::lenient::Str;
use crate::view::{JobSet, Pod};

/// What the snapshot says of the JobSet a TrainJob's pods come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Instance<'a> {
    /// No JobSet of the name in the snapshot: every pod of the name counts.
    Unknown,
    /// The JobSet of the name is the TrainJob's (or the TrainJob is not known): only
    /// pods labelled with this UID, or not labelled, count.
    JobSet(&'a str),
    /// The JobSet of the name is controlled by another TrainJob (an older instance's, not
    /// yet gone): no labelled pod is this TrainJob's.
    Other,
}

impl<'a> Instance<'a> {
    /// The instance of the TrainJob of UID `train_job` (`None`: not in the snapshot),
    /// given the JobSet of its name.
    pub(crate) fn of<S: Str>(job_set: Option<&'a JobSet<S>>, train_job: Option<&str>) -> Self {
        let Some(js) = job_set else { return Instance::Unknown };
        match (js.meta.controller().and_then(|o| o.uid.get()), train_job) {
            (Some(owner), Some(tj)) if owner != tj => Instance::Other,
            _ => Instance::JobSet(js.meta.uid()),
        }
    }

    /// Whether `pod` is of this instance.
    pub(crate) fn has<S: Str>(&self, pod: &Pod<S>) -> bool {
        match (pod.meta.label(keys::JOBSET_UID), self) {
            (None, _) | (_, Instance::Unknown) => true,
            (Some(uid), Instance::JobSet(js)) => uid == *js,
            (Some(_), Instance::Other) => false,
        }
    }
}
