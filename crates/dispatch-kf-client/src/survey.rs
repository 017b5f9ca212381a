//! Reading TrainJobs whoever made them, with what classification joins to each: its
//! JobSet (the same name), the pods of that JobSet (JobSet's `jobset-name` label), their
//! Nodes when the caller may read them, and its Kueue Workload (Kueue's `job-uid`
//! label) when asked. `dispatch-kf explain` reads this way; a job of dispatch's is read
//! by [`Cluster::read_job`] instead, which also finds what lost its labels.
//!
//! One TrainJob costs a get of it, a get of its JobSet, one list of pods and at most one
//! of Workloads, plus a get per Node. A namespace (or every namespace) costs one list per
//! kind, selected by the label that joins it to a TrainJob, plus a get per Node. Pods
//! are selected by the TrainJobs' names (`jobset-name in (...)`) when there are at most
//! [`NAMES_SELECTED`] of them, so a few TrainJobs among many other JobSets read only
//! their own pods; past that, every JobSet's pods in pages, which costs fewer requests
//! than lists of names would.
//!
//! The TrainJobs are read first, then what joins to them, together: the JobSet or pods
//! of a TrainJob made after that first read join nothing and are left out of the
//! answer (as are JobSets no TrainJob owns), since explaining reports TrainJobs and no
//! orphans.

use dispatch_core::{CallContext, Result};
use dispatch_kf_model::view::View;
use dispatch_kf_model::{Snapshot, keys};

use crate::cluster::Cluster;
use crate::nodes::NodeReads;
use crate::objects::Objects;
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

impl Scope<'_> {
    /// Requests on `resource` in the scope's namespace, or in every namespace.
    fn objects(self, cluster: &Cluster, resource: Resource) -> Objects<'_> {
        match self {
            Scope::Named { namespace, .. } | Scope::Namespace(namespace) => {
                cluster.objects(resource, namespace)
            }
            Scope::Everywhere => cluster.objects_everywhere(resource),
        }
    }
}

/// How many TrainJobs' names a pod selector may list.
pub(crate) const NAMES_SELECTED: usize = 50;

/// The label selector of the pods of `train_jobs`' JobSets: by their names while they are
/// few, by JobSet's label alone past [`NAMES_SELECTED`].
fn pods_of(train_jobs: &[View]) -> String {
    let mut names: Vec<&str> = train_jobs.iter().map(|tj| tj.meta().name()).collect();
    names.sort_unstable();
    names.dedup();
    if names.len() > NAMES_SELECTED {
        return keys::JOBSET_NAME.to_owned();
    }
    format!("{} in ({})", keys::JOBSET_NAME, names.join(","))
}

impl Cluster {
    /// The TrainJobs in `scope`: one get, or one list.
    pub async fn read_train_jobs(&self, cx: &CallContext, scope: Scope<'_>) -> Result<Vec<View>> {
        let train_jobs = scope.objects(self, TRAIN_JOB);
        match scope {
            Scope::Named { name, .. } => Ok(vec![train_jobs.get_view(cx, name).await?]),
            Scope::Namespace(_) | Scope::Everywhere => Ok(train_jobs.list(cx, "").await?.items),
        }
    }

    /// A snapshot of `train_jobs` (read in `scope` by [`Cluster::read_train_jobs`])
    /// with their JobSets, those JobSets' pods, the pods' Nodes as `nodes` allows,
    /// and, when `workloads`, the Workloads Kueue made for them.
    pub async fn read_around(
        &self,
        cx: &CallContext,
        scope: Scope<'_>,
        train_jobs: Vec<View>,
        nodes: NodeReads,
        workloads: bool,
    ) -> Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        if train_jobs.is_empty() {
            return Ok(snapshot);
        }
        let (job_sets, pods, workloads) = match scope {
            Scope::Named { name, .. } => {
                let uid = train_jobs.first().map(|tj| tj.meta().uid().to_owned());
                let by_uid = format!("{}={}", keys::KUEUE_JOB_UID, uid.unwrap_or_default());
                let by_job_set = format!("{}={name}", keys::JOBSET_NAME);
                futures::try_join!(
                    async {
                        let job_set = scope.objects(self, JOB_SET).get_view_opt(cx, name).await?;
                        Ok(job_set.into_iter().collect())
                    },
                    self.listed(cx, scope, POD, &by_job_set, true),
                    self.listed(cx, scope, WORKLOAD, &by_uid, workloads),
                )?
            }
            Scope::Namespace(_) | Scope::Everywhere => {
                let pods = pods_of(&train_jobs);
                futures::try_join!(
                    self.listed(cx, scope, JOB_SET, "", true),
                    self.listed(cx, scope, POD, &pods, true),
                    self.listed(cx, scope, WORKLOAD, keys::KUEUE_JOB_UID, workloads),
                )?
            }
        };
        for view in train_jobs.into_iter().chain(job_sets).chain(pods).chain(workloads) {
            snapshot.push(view);
        }
        for node in self.nodes_of(cx, &snapshot.pods, nodes).await? {
            snapshot.push(node);
        }
        Ok(snapshot)
    }

    /// The objects of `resource` in `scope` that `selector` selects; none, unread,
    /// unless `read`.
    async fn listed(
        &self,
        cx: &CallContext,
        scope: Scope<'_>,
        resource: Resource,
        selector: &str,
        read: bool,
    ) -> Result<Vec<View>> {
        if !read {
            return Ok(Vec::new());
        }
        Ok(scope.objects(self, resource).list(cx, selector).await?.items)
    }
}
