//! Explain: the observation of TrainJobs whoever made them, read on a cluster without the
//! adapter's settings or a Backend (`docs/cli.md#explain-any-trainjob`).
//!
//! The reads are the client's (`Cluster::read_around` for one TrainJob,
//! `Cluster::survey` for a namespace or every namespace, a page at a time),
//! the decisions the model's (`Mode::of_train_job`, `classify_train_jobs`): this
//! composes them and reads the clock. It needs only read permissions: get and list on
//! TrainJobs, JobSets, pods and, where Kueue is served, Workloads; get on Nodes is used
//! when granted (asked with a SelfSubjectAccessReview), and without it no pod is judged
//! node-lost from its Node.

use dispatch_core::{CallContext, Error, ObjectObs, Result};
use dispatch_kf_client::resources::{TRAIN_JOB, WORKLOAD};
#[cfg(doc)]
use dispatch_kf_client::storage_order;
use dispatch_kf_client::{Cluster, Scope, storage_order_of};
use dispatch_kf_model::view::View;
use dispatch_kf_model::{ClassifyOptions, Detail, Mode, Snapshot, classify_train_jobs};

use crate::edge;

/// How an explanation picks each TrainJob's mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModeChoice {
    /// Each TrainJob its own: Kueue when it carries Kueue's queue-name label and the
    /// cluster serves Kueue's API, plain otherwise ([`Mode::of_train_job`]).
    #[default]
    Auto,
    /// Every TrainJob in this mode.
    Fixed(Mode),
}

/// What to explain.
#[derive(Clone, Copy, Debug)]
pub struct Explain<'a> {
    /// Which TrainJobs.
    pub scope: Scope<'a>,
    /// How each is classified.
    pub mode: ModeChoice,
    /// The backend name the observations' references carry.
    pub backend: &'a str,
}

/// The observation of each TrainJob in `request.scope`, in the order the apiserver lists
/// them (by namespace and name: [`storage_order`]); a named TrainJob that does not exist
/// is `NotFound`, and `--mode kueue` on a cluster that does not serve Kueue's API is
/// `Unsupported`. [`explain_pages`] without the pages.
pub async fn explain(
    cluster: &Cluster,
    cx: &CallContext,
    request: Explain<'_>,
) -> Result<Vec<ObjectObs>> {
    let mut all = Vec::new();
    explain_pages(cluster, cx, request, |page| {
        all.extend(page);
        Ok(())
    })
    .await?;
    Ok(all)
}

/// [`explain`], handing `each` the observations of one page of TrainJobs (at most
/// [`LIST_PAGE`](dispatch_kf_client::LIST_PAGE)) before the next page is read, so that
/// explaining a cluster holds one page of it at a time; `each` failing stops it.
pub async fn explain_pages(
    cluster: &Cluster,
    cx: &CallContext,
    request: Explain<'_>,
    mut each: impl FnMut(Vec<ObjectObs>) -> Result<()>,
) -> Result<()> {
    let mut kueue = KueueServed { choice: request.mode, served: None };
    if request.mode == ModeChoice::Fixed(Mode::Kueue) {
        kueue.ask(cluster, cx).await?;
    }
    let (namespace, name) = match request.scope {
        Scope::Named { namespace, name } => (Some(namespace), Some(name)),
        Scope::Namespace(namespace) => (Some(namespace), None),
        Scope::Everywhere => (None, None),
    };
    let nodes = cluster.node_reads(cx, namespace.unwrap_or_default()).await?;
    let explained = |snapshot: &Snapshot, kueue_served: bool| {
        let options = ClassifyOptions {
            mode: Mode::Plain,
            nodes_readable: nodes.readable(),
            backend: request.backend.to_owned(),
            detail: Detail::WithNotes,
        };
        let mode_of = |tj: &_| match request.mode {
            ModeChoice::Auto => Mode::of_train_job(tj, kueue_served),
            ModeChoice::Fixed(mode) => mode,
        };
        let mut observations = classify_train_jobs(snapshot, &options, mode_of, edge::now());
        observations.sort_by(|a, b| {
            let (a, b) = (&a.object, &b.object);
            storage_order_of((&a.namespace, &a.name), (&b.namespace, &b.name))
        });
        observations
    };
    if let (Some(namespace), Some(name)) = (namespace, name) {
        let train_job = cluster.objects(TRAIN_JOB, namespace).get_view(cx, name).await?;
        let served = kueue.for_page(cluster, cx, std::slice::from_ref(&train_job)).await?;
        let snapshot = cluster.read_around(cx, train_job, nodes, served).await?;
        return each(explained(&snapshot, served));
    }
    let mut survey = cluster.survey(namespace);
    while let Some(train_jobs) = survey.next_train_jobs(cx).await? {
        let served = kueue.for_page(cluster, cx, &train_jobs).await?;
        let snapshot = survey.around(cx, train_jobs, nodes, served).await?;
        each(explained(&snapshot, served))?;
    }
    Ok(())
}

/// Whether the cluster serves Kueue's API, asked once, when a TrainJob first needs it
/// (or at once for `--mode kueue`).
struct KueueServed {
    choice: ModeChoice,
    served: Option<bool>,
}

impl KueueServed {
    /// Asks; `--mode kueue` on a cluster that does not serve Kueue's API is
    /// `Unsupported`.
    async fn ask(&mut self, cluster: &Cluster, cx: &CallContext) -> Result<bool> {
        if let Some(served) = self.served {
            return Ok(served);
        }
        let served = cluster.serves(cx, &WORKLOAD.api_version()).await?;
        if self.choice == ModeChoice::Fixed(Mode::Kueue) && !served {
            return Err(Error::unsupported(format!(
                "Kueue mode, but the cluster does not serve Kueue's API ({})",
                WORKLOAD.api_version()
            )));
        }
        self.served = Some(served);
        Ok(served)
    }

    /// Whether the Workloads of `train_jobs` are read: in Kueue mode, or when one of
    /// them carries Kueue's queue-name label and the cluster serves Kueue's API.
    async fn for_page(
        &mut self,
        cluster: &Cluster,
        cx: &CallContext,
        train_jobs: &[View],
    ) -> Result<bool> {
        let queued = train_jobs.iter().any(|v| match v {
            View::TrainJob(tj) => Mode::of_train_job(tj, true) == Mode::Kueue,
            _ => false,
        });
        match self.choice {
            ModeChoice::Fixed(Mode::Plain) => Ok(false),
            ModeChoice::Auto if !queued => Ok(false),
            ModeChoice::Auto | ModeChoice::Fixed(Mode::Kueue) => self.ask(cluster, cx).await,
        }
    }
}
