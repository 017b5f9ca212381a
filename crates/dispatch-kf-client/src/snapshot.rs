//! Reading everything one classification needs for one job, as a model [`Snapshot`],
//! in a number of requests that does not grow with the namespace.
//!
//! A stripped label contradicts nothing, so labels alone cannot find a job's objects:
//! TrainJobs, JobSets and runtime copies are read whole with one label-selected list
//! each, plus a get for each name of the job that the lists missed, having lost its
//! label, which only a foreign hand causes. The names come from the caller's index of
//! the namespace when it keeps one ([`Known::Index`]), else from the job's own objects
//! ([`Known::Implied`]): every object of one submission bears the same name, so each
//! submission a listed object or a labelled pod names gives the names of its TrainJob,
//! JobSet and runtime copy. Pods come by the job-id label, then by JobSet's jobset-name
//! label those that lack it (so each pod is read once, however many ranks), Workloads by the UIDs of the TrainJobs, Nodes as the adapter may read them
//! (`nodes.rs`). Nothing read grows with the rest of the namespace.

use std::collections::BTreeSet;

use dispatch_core::{CallContext, JobId, Result};
use dispatch_kf_model::view::View;
use dispatch_kf_model::{Mode, Snapshot, keys, names};

use crate::cluster::Cluster;
use crate::gets::at_most_a_few_at_once;
use crate::nodes::NodeReads;
use crate::objects::Objects;
use crate::resources::{JOB, JOB_SET, POD, Resource, TRAIN_JOB, TRAINING_RUNTIME, WORKLOAD};

/// The names of a job's objects, label or not, as the caller knows them (the Backend's
/// index, from a metadata watch of the namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownNames {
    /// The job's TrainJobs.
    pub train_jobs: Vec<String>,
    /// The job's JobSets.
    pub job_sets: Vec<String>,
    /// The job's runtime copies.
    pub runtimes: Vec<String>,
}

/// Where the names of a job's objects that lost their label come from.
#[derive(Clone, Copy, Debug)]
pub enum Known<'a> {
    /// The caller's index of the namespace (a metadata watch of each kind): it names
    /// every object of the job, whatever submission it is of.
    Index(&'a KnownNames),
    /// No index: the names the job's own objects imply (each submission a labelled
    /// TrainJob, JobSet, runtime copy or pod names). A submission none of whose
    /// objects or pods still carries the job-id label is not seen.
    Implied,
}

impl Known<'_> {
    /// The names the index gives for one kind; none when implied.
    fn of(&self, kind: impl Fn(&KnownNames) -> &Vec<String>) -> &[String] {
        match self {
            Known::Index(known) => kind(known),
            Known::Implied => &[],
        }
    }
}

/// What to read for one job.
#[derive(Clone, Copy, Debug)]
pub struct JobQuery<'a> {
    /// The configured namespace.
    pub namespace: &'a str,
    /// The job.
    pub job: &'a JobId,
    /// Kueue mode also reads Workloads.
    pub mode: Mode,
    /// How the adapter may read Nodes.
    pub nodes: NodeReads,
    /// Where the names of the job's label-stripped objects come from.
    pub known: Known<'a>,
}

impl Cluster {
    /// Reads one snapshot of `query.job`'s objects.
    pub async fn read_job(&self, cx: &CallContext, query: JobQuery<'_>) -> Result<Snapshot> {
        let by_label = format!("{}={}", keys::LABEL_JOB_ID, query.job);
        let known = query.known;
        let ns = query.namespace;
        let (tj, js, rt, pod) = (
            self.objects(TRAIN_JOB, ns).of_one_job(),
            self.objects(JOB_SET, ns).of_one_job(),
            self.objects(TRAINING_RUNTIME, ns).of_one_job(),
            self.objects(POD, ns).of_one_job(),
        );
        // Children before parents: an object is made after its owner, so a child read
        // first whose owner the later read misses really has lost it. Read together, a
        // JobSet made between the two lists would look orphaned for one snapshot.
        let (mut job_sets, mut runtimes, labelled_pods) = futures::try_join!(
            js.of_job(cx, &by_label, known.of(|k| &k.job_sets)),
            rt.of_job(cx, &by_label, known.of(|k| &k.runtimes)),
            pod.list(cx, &by_label),
        )?;
        let mut train_jobs = tj.of_job(cx, &by_label, known.of(|k| &k.train_jobs)).await?;
        if let Known::Implied = known {
            // The same order: the copies and JobSets the lists missed, then the
            // TrainJobs, so an owner read after its child is not missed.
            let implied =
                implied(query.job, [&train_jobs, &job_sets, &runtimes], &labelled_pods.items);
            let (more_job_sets, more_runtimes) = futures::try_join!(
                js.missing(cx, &job_sets, &implied),
                rt.missing(cx, &runtimes, &implied),
            )?;
            job_sets.extend(more_job_sets);
            runtimes.extend(more_runtimes);
            train_jobs.extend(tj.missing(cx, &train_jobs, &implied).await?);
        }

        let job_set_names: BTreeSet<String> =
            train_jobs.iter().chain(&job_sets).map(|o| o.meta().name().to_owned()).collect();
        let train_job_uids: BTreeSet<String> =
            train_jobs.iter().map(|o| o.meta().uid().to_owned()).collect();
        let unlabelled = format!("{}!={}", keys::LABEL_JOB_ID, query.job);
        let (jobset_pods, workloads) = futures::try_join!(
            self.list_in(cx, POD, ns, keys::JOBSET_NAME, &job_set_names, Some(&unlabelled)),
            async {
                match query.mode {
                    Mode::Kueue => {
                        let uid = keys::KUEUE_JOB_UID;
                        self.list_in(cx, WORKLOAD, ns, uid, &train_job_uids, None).await
                    }
                    Mode::Plain => Ok(Vec::new()),
                }
            },
        )?;

        let mut snapshot = Snapshot::default();
        let mut seen_pods = BTreeSet::new();
        for pod in labelled_pods.items.into_iter().chain(jobset_pods) {
            if seen_pods.insert(pod.meta().uid().to_owned()) {
                snapshot.push(pod);
            }
        }
        for node in self.nodes_of(cx, &snapshot.pods, query.nodes).await? {
            snapshot.push(node);
        }
        for view in train_jobs.into_iter().chain(job_sets).chain(runtimes).chain(workloads) {
            snapshot.push(view);
        }
        Ok(snapshot)
    }

    /// The batch Jobs of `job`'s JobSets: those dispatch's runtime patch labelled with
    /// the job, and those whose JobSet is named in `job_sets` (Jobs of a TrainJob made
    /// before the patch labelled Jobs, or of a replicated job it does not patch), each
    /// once. Not part of a [`Snapshot`]: nothing is classified from a Job, but one whose
    /// JobSet is gone can still make pods until the garbage collector removes it, so
    /// StopJob must not say nothing remains while one does (`docs/background-deletion.md`).
    pub async fn jobs_of(
        &self,
        cx: &CallContext,
        namespace: &str,
        job: &JobId,
        job_sets: &BTreeSet<String>,
    ) -> Result<Vec<View>> {
        let by_label = format!("{}={}", keys::LABEL_JOB_ID, job);
        let unlabelled = format!("{}!={}", keys::LABEL_JOB_ID, job);
        let jobs = self.objects(JOB, namespace).of_one_job();
        let (labelled, of_job_sets) = futures::try_join!(
            jobs.list(cx, &by_label),
            self.list_in(cx, JOB, namespace, keys::JOBSET_NAME, job_sets, Some(&unlabelled)),
        )?;
        let mut seen = BTreeSet::new();
        Ok(labelled
            .items
            .into_iter()
            .chain(of_job_sets)
            .filter(|j| seen.insert(j.meta().uid().to_owned()))
            .collect())
    }

    /// The objects of `resource` whose `label` is one of `values` (and that `also`
    /// selects, when given), of one job: in one request.
    pub(crate) async fn list_in(
        &self,
        cx: &CallContext,
        resource: Resource,
        namespace: &str,
        label: &str,
        values: &BTreeSet<String>,
        also: Option<&str>,
    ) -> Result<Vec<View>> {
        if values.is_empty() {
            return Ok(Vec::new());
        }
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let mut selector = format!("{label} in ({})", values.join(","));
        if let Some(also) = also {
            selector = format!("{selector},{also}");
        }
        Ok(self.objects(resource, namespace).of_one_job().list(cx, &selector).await?.items)
    }
}

/// The names of `job`'s submissions that its listed objects and labelled pods name:
/// an object's own name, a pod's name and its JobSet's name.
fn implied(job: &JobId, listed: [&Vec<View>; 3], pods: &[View]) -> BTreeSet<String> {
    let own = listed.into_iter().flatten().filter_map(|o| names::parse(o.meta().name()));
    let of_pods = pods.iter().flat_map(|p| {
        let meta = p.meta();
        let by_job_set = meta.label(keys::JOBSET_NAME).and_then(names::parse);
        names::parse_prefix(meta.name()).into_iter().chain(by_job_set)
    });
    own.chain(of_pods)
        .filter(|(of, _)| of == job)
        .map(|(_, submission)| names::make(job, submission))
        .collect()
}

impl Objects<'_> {
    /// The objects named in `names` that `have` lacks, read concurrently; one that is
    /// not there is left out.
    async fn missing(
        &self,
        cx: &CallContext,
        have: &[View],
        names: &BTreeSet<String>,
    ) -> Result<Vec<View>> {
        let have: BTreeSet<&str> = have.iter().map(|o| o.meta().name()).collect();
        let missing = names.iter().filter(|n| !have.contains(n.as_str()));
        let reads: Vec<_> = missing.map(|n| self.get_view_opt(cx, n)).collect();
        at_most_a_few_at_once(reads).await
    }

    /// The job's objects of this kind: those the label selects, and those named in
    /// `known` that the label no longer selects.
    async fn of_job(
        &self,
        cx: &CallContext,
        by_label: &str,
        known: &[String],
    ) -> Result<Vec<View>> {
        let mut found = self.list(cx, by_label).await?.items;
        let have: BTreeSet<String> = found.iter().map(|o| o.meta().name().to_owned()).collect();
        for name in known.iter().filter(|n| !have.contains(*n)) {
            // Deleted since the index saw it: it is simply gone.
            found.extend(self.get_view_opt(cx, name).await?);
        }
        Ok(found)
    }
}
