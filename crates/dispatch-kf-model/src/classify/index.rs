//! The snapshot indexed once per classification, so that the cost is linear in the
//! number of objects (`docs/classification.md#order-and-robustness`).

use crate::lenient::Str;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use foldhash::fast::FixedState;
use smallvec::SmallVec;

use dispatch_core::Execution;

use super::execution;
use super::node_loss::{NodeLoss, node_loss};
use crate::keys;
use crate::snapshot::Snapshot;
use crate::view::{JobSet, Pod, TrainJob, Workload};

/// One pod, live or captured, with the execution it counts towards and the labels
/// every pass over pods reads, read once.
#[derive(Debug)]
pub(crate) struct PodRef<'a, S> {
    /// The pod.
    pub(crate) pod: &'a Pod<S>,
    /// True for a deleted pod's captured last state.
    pub(crate) captured: bool,
    /// Its execution, when it carries both counters.
    pub(crate) exec: Option<Execution>,
    /// Its `jobset-name` label.
    pub(crate) jobset: Option<&'a str>,
    /// Its `d/job-id` label.
    pub(crate) job_id: Option<&'a str>,
    /// Its `d/submission` label.
    pub(crate) submission: Option<&'a str>,
}

// By hand: a derive would ask `S: Copy` of the text the pod holds by reference.
impl<S> Clone for PodRef<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for PodRef<'_, S> {}

impl<S: Str> PodRef<'_, S> {
    /// The pod's name.
    pub(crate) fn name(&self) -> &str {
        self.pod.meta.name()
    }
}

/// The index's maps: hashed with a fixed seed (the model draws no randomness; nothing
/// read depends on the order of a map).
pub(crate) type Map<K, V> = HashMap<K, V, FixedState>;

/// A map by namespace and a second key, hashed together: one lookup.
type ByNs<'a, V> = Map<(&'a str, &'a str), V>;

fn get2<'m, V>(map: &'m ByNs<'_, V>, ns: &'m str, key: &'m str) -> Option<&'m V> {
    map.get(&(ns, key))
}

/// A map with room for `n` keys from the start: it never grows, so no key is hashed
/// twice.
fn map_for<K, V>(n: usize) -> Map<K, V> {
    Map::with_capacity_and_hasher(n, FixedState::default())
}

/// Pods grouped by a key, each group in the order its pods were added, with no vector
/// of its own: a group is its first and last pod, and each pod names the next.
struct Groups<K> {
    ends: Map<K, (u32, u32)>,
    next: Vec<u32>,
}

impl<K: Hash + Eq> Groups<K> {
    /// The end of a group.
    const END: u32 = u32::MAX;

    /// Groups of `pods` pods at most.
    fn new(pods: usize) -> Self {
        Groups { ends: Map::default(), next: vec![Self::END; pods] }
    }

    /// Adds pod `pod` (the last added so far) to the group of `key`.
    fn add(&mut self, key: K, pod: usize) {
        let pod = pod as u32;
        match self.ends.entry(key) {
            Entry::Occupied(mut group) => {
                let last = &mut group.get_mut().1;
                self.next[*last as usize] = pod;
                *last = pod;
            }
            Entry::Vacant(group) => {
                group.insert((pod, pod));
            }
        }
    }

    /// The pods of `key`'s group, in the order they were added.
    fn of(&self, key: &K) -> impl Iterator<Item = usize> + '_ {
        let first = self.ends.get(key).map(|&(first, _)| first);
        let next = |&i: &u32| Some(self.next[i as usize]).filter(|&n| n != Self::END);
        std::iter::successors(first, next).map(|i| i as usize)
    }
}

/// Lookups over one snapshot.
pub(crate) struct Index<'a, S> {
    /// Every pod, live first, then captured.
    pub(crate) pods: Vec<PodRef<'a, S>>,
    by_jobset: Groups<(&'a str, &'a str)>,
    /// By namespace and `<job-id>/<submission>` labels.
    by_job: Groups<(&'a str, (&'a str, &'a str))>,
    job_sets: ByNs<'a, &'a JobSet<S>>,
    workloads: ByNs<'a, Vec<&'a Workload<S>>>,
    train_jobs: ByNs<'a, Vec<&'a TrainJob<S>>>,
    /// Nodes by name, each with what makes it lost for its pods, if anything.
    pub(crate) nodes: Map<&'a str, Option<NodeLoss<'a, S>>>,
    /// The snapshot's [`Snapshot::evidence_gap`].
    pub(crate) evidence_gap: Option<jiff::Timestamp>,
}

impl<'a, S: Str> Index<'a, S> {
    /// Indexes `snapshot`.
    pub(crate) fn new(snapshot: &'a Snapshot<S>) -> Index<'a, S> {
        let live = snapshot.pods.iter().map(|p| (p, false));
        let captured = snapshot.captured_pods.iter().map(|p| (p, true));
        let pods: Vec<PodRef<'a, S>> = live
            .chain(captured)
            .map(|(pod, captured)| PodRef {
                pod,
                captured,
                exec: execution::of_pod(pod),
                jobset: pod.meta.label(keys::JOBSET_NAME),
                job_id: pod.meta.label(keys::LABEL_JOB_ID),
                submission: pod.meta.label(keys::LABEL_SUBMISSION),
            })
            .collect();
        let mut by_jobset = Groups::new(pods.len());
        let mut by_job = Groups::new(pods.len());
        for (i, p) in pods.iter().enumerate() {
            let ns = p.pod.meta.namespace();
            if let Some(js) = p.jobset {
                by_jobset.add((ns, js), i);
            }
            if let (Some(id), Some(n)) = (p.job_id, p.submission) {
                by_job.add((ns, (id, n)), i);
            }
        }
        let mut job_sets: ByNs<'a, &JobSet<S>> = map_for(snapshot.job_sets.len());
        for js in &snapshot.job_sets {
            job_sets.entry((js.meta.namespace(), js.meta.name())).or_insert(js);
        }
        let mut workloads: ByNs<'a, Vec<&Workload<S>>> = map_for(snapshot.workloads.len());
        for w in &snapshot.workloads {
            if let Some(uid) = w.meta.label(keys::KUEUE_JOB_UID) {
                workloads.entry((w.meta.namespace(), uid)).or_default().push(w);
            }
        }
        let mut train_jobs: ByNs<'a, Vec<&TrainJob<S>>> = map_for(snapshot.train_jobs.len());
        for tj in &snapshot.train_jobs {
            train_jobs.entry((tj.meta.namespace(), tj.meta.name())).or_default().push(tj);
        }
        let nodes = snapshot.nodes.iter().map(|n| (n.meta.name(), node_loss(n))).collect();
        let evidence_gap = snapshot.evidence_gap;
        Index { pods, by_jobset, by_job, job_sets, workloads, train_jobs, nodes, evidence_gap }
    }

    /// The pods of a JobSet name, and those labelled with a job-id and submission,
    /// once each, sorted by name (live before captured on equal names).
    pub(crate) fn pods_of(
        &self,
        ns: &str,
        jobset: &str,
        job: Option<(&str, &str)>,
    ) -> Vec<PodRef<'a, S>> {
        let mut ids: SmallVec<[usize; 16]> = self.by_jobset.of(&(ns, jobset)).collect();
        if let Some(key) = job {
            ids.extend(self.by_job.of(&(ns, key)));
        }
        ids.sort_unstable();
        ids.dedup();
        let mut out: Vec<PodRef<'a, S>> = ids.into_iter().map(|i| self.pods[i]).collect();
        out.sort_by(|a, b| (a.name(), a.captured).cmp(&(b.name(), b.captured)));
        out
    }

    /// The JobSet of a name.
    pub(crate) fn job_set(&self, ns: &str, name: &str) -> Option<&'a JobSet<S>> {
        get2(&self.job_sets, ns, name).copied()
    }

    /// The Workload labelled with a TrainJob's UID: the one it owns when several are,
    /// else the first by name.
    pub(crate) fn workload(&self, ns: &str, uid: &str) -> Option<&'a Workload<S>> {
        let found = get2(&self.workloads, ns, uid)?;
        let owned =
            |w: &&&Workload<S>| w.meta.owner_references.0.iter().any(|o| o.uid.get() == Some(uid));
        found
            .iter()
            .filter(owned)
            .min_by_key(|w| w.meta.name())
            .or_else(|| found.iter().min_by_key(|w| w.meta.name()))
            .copied()
    }

    /// The TrainJobs of a name (several only when merged files disagree).
    pub(crate) fn train_jobs<'m>(&'m self, ns: &'m str, name: &'m str) -> &'m [&'a TrainJob<S>] {
        get2(&self.train_jobs, ns, name).map_or(&[], Vec::as_slice)
    }
}
