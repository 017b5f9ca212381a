//! Reading TrainJobs whoever made them, with what classification joins to each: its
//! JobSet (the same name), the pods of that JobSet (JobSet's `jobset-name` label), their
//! Nodes as the caller may read them, and its Kueue Workload (Kueue's `job-uid` label)
//! when asked. `dispatch-kf explain` reads this way; a job of dispatch's is read by
//! [`Cluster::read_job`] instead, which also finds what lost its labels.
//!
//! One TrainJob ([`Cluster::read_around`]) costs a get of it, a get of its JobSet, one
//! list of pods and at most one of Workloads, plus the Nodes' reads. A namespace, or
//! every namespace ([`Cluster::survey`]), is read a page of TrainJobs at a time, each
//! page with what joins to it before the next is read, so that the reader holds one
//! page and its objects, not the cluster: the JobSets come from a list of the same
//! scope read alongside, in the same order (the apiserver's, [`storage_order`]), so a
//! page's JobSets are those up to its last TrainJob; its pods from one list selected
//! by the page's names (`jobset-name in (...)`); its Workloads from one list selected
//! by its UIDs; its Nodes as [`Cluster::nodes_of`] reads them.
//!
//! The TrainJobs are read first, then what joins to them: the JobSet or pods of a
//! TrainJob made after its page was read join nothing and are left out of the answer
//! (as are JobSets no TrainJob owns), since explaining reports TrainJobs and no
//! orphans.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use dispatch_core::{CallContext, Result};
use dispatch_kf_model::view::View;
use dispatch_kf_model::{Snapshot, keys};

use crate::cluster::Cluster;
use crate::nodes::NodeReads;
use crate::objects::Objects;
#[cfg(doc)]
use crate::pages::storage_order;
use crate::pages::{Pages, storage_order_of};
use crate::resources::{JOB_SET, POD, Resource, TRAIN_JOB, WORKLOAD};

/// Which TrainJobs to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    /// One TrainJob by name; one that does not exist is `NotFound`.
    Named {
        /// Its namespace.
        namespace: &'a str,
        /// Its name.
        name: &'a str,
    },
    /// Every TrainJob of a namespace.
    Namespace(&'a str),
    /// Every TrainJob of every namespace.
    Everywhere,
}

impl Cluster {
    /// A snapshot of `train_job` (as read) with its JobSet, that JobSet's pods, their
    /// Nodes as `nodes` allows and, when `workloads`, the Workload Kueue made for it.
    pub async fn read_around(
        &self,
        cx: &CallContext,
        train_job: View,
        nodes: NodeReads,
        workloads: bool,
    ) -> Result<Snapshot> {
        let (namespace, name) = (train_job.meta().namespace(), train_job.meta().name());
        let by_uid = format!("{}={}", keys::KUEUE_JOB_UID, train_job.meta().uid());
        let by_job_set = format!("{}={name}", keys::JOBSET_NAME);
        let (job_sets, pods) = (self.objects(JOB_SET, namespace), self.objects(POD, namespace));
        let (job_set, pods, workloads) = futures::try_join!(
            job_sets.get_view_opt(cx, name),
            pods.list(cx, &by_job_set),
            self.workloads(cx, self.objects(WORKLOAD, namespace), &by_uid, workloads),
        )?;
        let views = [train_job].into_iter().chain(job_set).chain(pods.items).chain(workloads);
        self.with_nodes(cx, views, nodes).await
    }

    /// The TrainJobs of `namespace`, or of every namespace, a page at a time.
    pub fn survey(&self, namespace: Option<&str>) -> Survey<'_> {
        Survey {
            cluster: self,
            namespace: namespace.map(str::to_owned),
            train_jobs: self.objects_in(TRAIN_JOB, namespace).pages(""),
            job_sets: self.objects_in(JOB_SET, namespace).pages(""),
            job_sets_ahead: VecDeque::new(),
        }
    }

    /// Requests on `resource` in `namespace`, or in every namespace.
    fn objects_in(&self, resource: Resource, namespace: Option<&str>) -> Objects<'_> {
        match namespace {
            Some(ns) => self.objects(resource, ns),
            None => self.objects_everywhere(resource),
        }
    }

    /// The Workloads `selector` selects, when `read`.
    async fn workloads(
        &self,
        cx: &CallContext,
        objects: Objects<'_>,
        selector: &str,
        read: bool,
    ) -> Result<Vec<View>> {
        if !read {
            return Ok(Vec::new());
        }
        Ok(objects.list(cx, selector).await?.items)
    }

    /// A snapshot of `views` and the Nodes of its pods.
    async fn with_nodes(
        &self,
        cx: &CallContext,
        views: impl IntoIterator<Item = View>,
        nodes: NodeReads,
    ) -> Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        for view in views {
            snapshot.push(view);
        }
        for node in self.nodes_of(cx, &snapshot.pods, nodes).await? {
            snapshot.push(node);
        }
        Ok(snapshot)
    }
}

/// The TrainJobs of a namespace or of every namespace, read a page at a time
/// ([`Cluster::survey`]).
pub struct Survey<'a> {
    cluster: &'a Cluster,
    /// The namespace, or none for every namespace.
    namespace: Option<String>,
    train_jobs: Pages<'a>,
    job_sets: Pages<'a>,
    /// JobSets read past the last TrainJob of the page: they may join the next one's.
    job_sets_ahead: VecDeque<View>,
}

impl Survey<'_> {
    /// The next page of TrainJobs, in the apiserver's order; `None` once all are read.
    pub async fn next_train_jobs(&mut self, cx: &CallContext) -> Result<Option<Vec<View>>> {
        self.train_jobs.next(cx).await
    }

    /// A snapshot of `train_jobs`, the page [`Survey::next_train_jobs`] gave last, with
    /// their JobSets, those JobSets' pods, the pods' Nodes as `nodes` allows and, when
    /// `workloads`, the Workloads Kueue made for them.
    pub async fn around(
        &mut self,
        cx: &CallContext,
        train_jobs: Vec<View>,
        nodes: NodeReads,
        workloads: bool,
    ) -> Result<Snapshot> {
        let Some(last) = train_jobs.last() else { return Ok(Snapshot::default()) };
        let last = (last.meta().namespace().to_owned(), last.meta().name().to_owned());
        let up_to_last = |v: &View| {
            let key = (v.meta().namespace(), v.meta().name());
            storage_order_of(key, (&last.0, &last.1)) != Ordering::Greater
        };
        // The page's TrainJobs' names by namespace: a JobSet's name is its TrainJob's.
        let mut names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for tj in &train_jobs {
            let meta = tj.meta();
            names.entry(meta.namespace().to_owned()).or_default().insert(meta.name().to_owned());
        }
        let of_page = |namespace: &str, job_set: &str| {
            names.get(namespace).is_some_and(|n| n.contains(job_set))
        };
        let by_name = in_selector(keys::JOBSET_NAME, names.values().flatten().map(String::as_str));
        let by_uid = in_selector(keys::KUEUE_JOB_UID, train_jobs.iter().map(|tj| tj.meta().uid()));
        let Survey { cluster, namespace, job_sets, job_sets_ahead, .. } = self;
        let (cluster, namespace) = (*cluster, namespace.as_deref());
        let pod_objects = cluster.objects_in(POD, namespace);
        let workload_objects = cluster.objects_in(WORKLOAD, namespace);
        let (mut joined, pods, workloads) = futures::try_join!(
            async {
                // The JobSets up to the page's last TrainJob, in the same order; one past
                // it waits for the next page.
                let mut joined = Vec::new();
                loop {
                    while let Some(v) = job_sets_ahead.front() {
                        if !up_to_last(v) {
                            return Ok(joined);
                        }
                        joined.extend(job_sets_ahead.pop_front());
                    }
                    match job_sets.next(cx).await? {
                        Some(page) => job_sets_ahead.extend(page),
                        None => return Ok(joined),
                    }
                }
            },
            pod_objects.list(cx, &by_name),
            cluster.workloads(cx, workload_objects, &by_uid, workloads),
        )?;
        joined.retain(|js| of_page(js.meta().namespace(), js.meta().name()));
        let pods = pods.items.into_iter().filter(|pod| {
            let meta = pod.meta();
            meta.label(keys::JOBSET_NAME).is_some_and(|js| of_page(meta.namespace(), js))
        });
        let views = train_jobs.into_iter().chain(joined).chain(pods).chain(workloads);
        cluster.with_nodes(cx, views, nodes).await
    }
}

/// `label in (values)`, each value once.
fn in_selector<'v>(label: &str, values: impl Iterator<Item = &'v str>) -> String {
    let values: BTreeSet<&str> = values.collect();
    format!("{label} in ({})", values.into_iter().collect::<Vec<_>>().join(","))
}
