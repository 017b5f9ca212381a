//! The cluster's objects as the watches hold them, filed by the TrainJob each belongs
//! to, and which TrainJobs each change concerns. No I/O: the controller's loop feeds it
//! each change and reads one TrainJob's objects back as a [`Snapshot`].
//!
//! Where an object is filed: a TrainJob and its JobSet by their name (the Trainer names
//! the JobSet after the TrainJob); a pod by its `jobset.sigs.k8s.io/jobset-name` label;
//! a Workload by its `kueue.x-k8s.io/job-uid` label; a Node by name, with the TrainJobs
//! that have a pod on it; a namespaced TrainingRuntime by its name (read only for the
//! runtime a TrainJob counts under: `signal::runtime_label`). A deleted pod of a TrainJob that exists leaves its last
//! state in the TrainJob's evidence ([`Kept`]), which goes with the TrainJob.

use std::collections::{HashMap, HashSet};

use dispatch_kf_client::Change;
use dispatch_kf_model::Snapshot;
use dispatch_kf_model::internal::evidence::Kept;
use dispatch_kf_model::keys;
use dispatch_kf_model::view::{JobSet, Meta, Node, Pod, RuntimeCopy, TrainJob, View, Workload};

/// A TrainJob's place: its namespace and name.
pub(crate) type Key = (String, String);

/// The kinds the controller watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    TrainJob,
    JobSet,
    Workload,
    Pod,
    Node,
    Runtime,
}

/// What one change did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Touched {
    /// The TrainJobs whose objects changed (those that still exist or never did).
    pub(crate) dirty: HashSet<Key>,
    /// The TrainJobs that went, by UID.
    pub(crate) gone: Vec<String>,
}

/// The objects of the watched namespaces.
#[derive(Default)]
pub(crate) struct Store {
    train_jobs: HashMap<Key, TrainJob>,
    job_sets: HashMap<Key, JobSet>,
    /// By namespace and the TrainJob UID they carry, then by their own UID.
    workloads: HashMap<(String, String), HashMap<String, Workload>>,
    /// By TrainJob, then by the pod's UID.
    pods: HashMap<Key, HashMap<String, Pod>>,
    evidence: HashMap<Key, Kept>,
    nodes: HashMap<String, Node>,
    runtimes: HashMap<Key, RuntimeCopy>,
    /// The TrainJobs with a live pod on each Node, and how many pods each has there.
    on_node: HashMap<String, HashMap<Key, u32>>,
    /// The TrainJob of each UID.
    by_uid: HashMap<String, Key>,
}

fn key_of(namespace: &str, name: &str) -> Key {
    (namespace.to_owned(), name.to_owned())
}

/// The TrainJob a pod belongs to, when it is a JobSet's.
fn pod_key(pod: &Pod) -> Option<Key> {
    Some(key_of(pod.meta.namespace(), pod.meta.label(keys::JOBSET_NAME)?))
}

/// The objects of `objects` in `scope` (a namespace, or every namespace), as views.
fn scoped<'a, T: Clone + 'a>(
    objects: impl Iterator<Item = &'a T>,
    meta: fn(&T) -> &Meta,
    scope: Option<&str>,
    view: fn(T) -> View,
) -> Vec<View> {
    objects.filter(|o| scope.is_none_or(|s| s == meta(o).namespace())).cloned().map(view).collect()
}

/// Where a Workload is filed.
fn workload_key(w: &Workload) -> Option<(String, String)> {
    let uid = w.meta.label(keys::KUEUE_JOB_UID)?;
    Some((w.meta.namespace().to_owned(), uid.to_owned()))
}

impl Store {
    /// Takes in one change of `kind`, seen by the watch of `scope` (a namespace, or
    /// every namespace), and says which TrainJobs it concerns.
    pub(crate) fn apply(&mut self, kind: Kind, scope: Option<&str>, change: Change) -> Touched {
        let mut touched = Touched::default();
        match change {
            Change::Listed(views) => {
                self.clear(kind, scope, &mut touched);
                for view in views {
                    self.put(view, &mut touched);
                }
            }
            Change::Applied(view) => self.put(view, &mut touched),
            Change::Deleted(view) => self.remove(view, true, &mut touched),
        }
        touched
    }

    /// Every object of `kind` in `scope` goes, before a list puts back what exists:
    /// each as if deleted, except that a pod listed away leaves no evidence (its last
    /// state was not seen).
    fn clear(&mut self, kind: Kind, scope: Option<&str>, touched: &mut Touched) {
        let views: Vec<View> = match kind {
            Kind::TrainJob => scoped(self.train_jobs.values(), |t| &t.meta, scope, View::TrainJob),
            Kind::JobSet => scoped(self.job_sets.values(), |j| &j.meta, scope, View::JobSet),
            Kind::Workload => {
                let workloads = self.workloads.values().flat_map(HashMap::values);
                scoped(workloads, |w| &w.meta, scope, View::Workload)
            }
            Kind::Pod => {
                let pods = self.pods.values().flat_map(HashMap::values);
                scoped(pods, |p| &p.meta, scope, View::Pod)
            }
            // Nodes have no namespace: a list of them replaces them all.
            Kind::Node => scoped(self.nodes.values(), |n| &n.meta, None, View::Node),
            Kind::Runtime => scoped(self.runtimes.values(), |r| &r.meta, scope, View::RuntimeCopy),
        };
        for view in views {
            self.remove(view, false, touched);
        }
    }

    fn put(&mut self, view: View, touched: &mut Touched) {
        match view {
            View::TrainJob(tj) => {
                let key = key_of(tj.meta.namespace(), tj.meta.name());
                if let Some(old) = self.train_jobs.get(&key)
                    && old.meta.uid() != tj.meta.uid()
                {
                    // Another TrainJob of the name: the one before went unseen.
                    touched.gone.push(old.meta.uid().to_owned());
                    self.by_uid.remove(old.meta.uid());
                    self.evidence.remove(&key);
                }
                self.by_uid.insert(tj.meta.uid().to_owned(), key.clone());
                self.train_jobs.insert(key.clone(), tj);
                touched.dirty.insert(key);
            }
            View::JobSet(js) => {
                let key = key_of(js.meta.namespace(), js.meta.name());
                self.job_sets.insert(key.clone(), js);
                touched.dirty.insert(key);
            }
            View::Workload(w) => {
                let Some(place) = workload_key(&w) else { return };
                if let Some(key) = self.by_uid.get(&place.1) {
                    touched.dirty.insert(key.clone());
                }
                self.workloads.entry(place).or_default().insert(w.meta.uid().to_owned(), w);
            }
            View::Pod(pod) => {
                let Some(key) = pod_key(&pod) else { return };
                let pods = self.pods.entry(key.clone()).or_default();
                let before = pods.insert(pod.meta.uid().to_owned(), pod.clone());
                if let Some(before) = before {
                    unplace(&mut self.on_node, &before, &key);
                }
                place(&mut self.on_node, &pod, &key);
                touched.dirty.insert(key);
            }
            View::Node(node) => {
                let name = node.meta.name().to_owned();
                touched
                    .dirty
                    .extend(self.on_node.get(&name).into_iter().flat_map(|m| m.keys()).cloned());
                self.nodes.insert(name, node);
            }
            View::RuntimeCopy(runtime) => {
                self.runtimes
                    .insert(key_of(runtime.meta.namespace(), runtime.meta.name()), runtime);
            }
            View::Other(_) => {}
        }
    }

    /// `view` went; `deleted`: it was seen deleted (a pod then leaves evidence).
    fn remove(&mut self, view: View, deleted: bool, touched: &mut Touched) {
        match view {
            View::TrainJob(tj) => {
                let key = key_of(tj.meta.namespace(), tj.meta.name());
                if self.train_jobs.get(&key).is_some_and(|t| t.meta.uid() == tj.meta.uid()) {
                    self.train_jobs.remove(&key);
                    self.by_uid.remove(tj.meta.uid());
                    self.evidence.remove(&key);
                    touched.gone.push(tj.meta.uid().to_owned());
                }
            }
            View::JobSet(js) => {
                let key = key_of(js.meta.namespace(), js.meta.name());
                self.job_sets.remove(&key);
                touched.dirty.insert(key);
            }
            View::Workload(w) => {
                let Some(place) = workload_key(&w) else { return };
                if let Some(filed) = self.workloads.get_mut(&place) {
                    filed.remove(w.meta.uid());
                    if filed.is_empty() {
                        self.workloads.remove(&place);
                    }
                }
                if let Some(key) = self.by_uid.get(&place.1) {
                    touched.dirty.insert(key.clone());
                }
            }
            View::Pod(pod) => {
                let Some(key) = pod_key(&pod) else { return };
                if let Some(pods) = self.pods.get_mut(&key) {
                    if let Some(before) = pods.remove(pod.meta.uid()) {
                        unplace(&mut self.on_node, &before, &key);
                    }
                    if pods.is_empty() {
                        self.pods.remove(&key);
                    }
                }
                if deleted && self.train_jobs.contains_key(&key) {
                    self.evidence.entry(key.clone()).or_default().keep(pod);
                }
                touched.dirty.insert(key);
            }
            View::Node(node) => {
                let name = node.meta.name();
                self.nodes.remove(name);
                touched
                    .dirty
                    .extend(self.on_node.get(name).into_iter().flat_map(|m| m.keys()).cloned());
            }
            View::RuntimeCopy(_) | View::Other(_) => {}
        }
    }

    /// One TrainJob's objects, as classification reads them; `None` when no TrainJob
    /// of that place exists.
    pub(crate) fn snapshot(&self, key: &Key) -> Option<Snapshot> {
        let tj = self.train_jobs.get(key)?;
        let pods: Vec<Pod> =
            self.pods.get(key).into_iter().flat_map(HashMap::values).cloned().collect();
        let mut nodes: Vec<Node> = Vec::new();
        for pod in &pods {
            let Some(name) = pod.node_name.get() else { continue };
            if let Some(node) = self.nodes.get(name)
                && !nodes.iter().any(|n| n.meta.name() == name)
            {
                nodes.push(node.clone());
            }
        }
        let place = (key.0.clone(), tj.meta.uid().to_owned());
        let runtime = tj.runtime_ref.as_ref().and_then(|r| r.name.get());
        let runtimes = runtime.and_then(|name| self.runtimes.get(&key_of(&key.0, name)));
        Some(Snapshot {
            train_jobs: vec![tj.clone()],
            job_sets: self.job_sets.get(key).cloned().into_iter().collect(),
            workloads: self
                .workloads
                .get(&place)
                .into_iter()
                .flat_map(HashMap::values)
                .cloned()
                .collect(),
            pods,
            captured_pods: self
                .evidence
                .get(key)
                .into_iter()
                .flat_map(Kept::pods)
                .cloned()
                .collect(),
            nodes,
            runtimes: runtimes.cloned().into_iter().collect(),
            ..Snapshot::default()
        })
    }

    /// Every TrainJob's place.
    pub(crate) fn train_jobs(&self) -> impl Iterator<Item = &Key> {
        self.train_jobs.keys()
    }

    /// How many objects are held, of each kind, and deleted pods kept: what its memory
    /// grows with.
    pub(crate) fn counts(&self) -> [(Kind, usize); 6] {
        [
            (Kind::TrainJob, self.train_jobs.len()),
            (Kind::JobSet, self.job_sets.len()),
            (Kind::Workload, self.workloads.values().map(HashMap::len).sum()),
            (Kind::Pod, self.pods.values().map(HashMap::len).sum()),
            (Kind::Node, self.nodes.len()),
            (Kind::Runtime, self.runtimes.len()),
        ]
    }
}

fn place(on_node: &mut HashMap<String, HashMap<Key, u32>>, pod: &Pod, key: &Key) {
    if let Some(node) = pod.node_name.get() {
        *on_node.entry(node.to_owned()).or_default().entry(key.clone()).or_default() += 1;
    }
}

fn unplace(on_node: &mut HashMap<String, HashMap<Key, u32>>, pod: &Pod, key: &Key) {
    let Some(node) = pod.node_name.get() else { return };
    let Some(keys) = on_node.get_mut(node) else { return };
    if let Some(count) = keys.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            keys.remove(key);
        }
    }
    if keys.is_empty() {
        on_node.remove(node);
    }
}

#[cfg(test)]
mod tests;
