//! Explain: the observation of TrainJobs whoever made them, read on a cluster without the
//! adapter's settings or a Backend (`docs/cli.md#explain-any-trainjob`).
//!
//! The reads are the client's (`Cluster::read_train_jobs`, `Cluster::read_around`),
//! the decisions the model's (`Mode::of_train_job`, `classify_train_jobs`): this
//! composes them and reads the clock. It needs only read permissions: get and list on
//! TrainJobs, JobSets, pods and, where Kueue is served, Workloads; get on Nodes is used
//! when granted (asked with a SelfSubjectAccessReview), and without it no pod is judged
//! node-lost from its Node.

use dispatch_core::{CallContext, Error, ObjectObs, Result};
use dispatch_kf_client::resources::WORKLOAD;
use dispatch_kf_client::{Cluster, Scope};
use dispatch_kf_model::view::View;
use dispatch_kf_model::{ClassifyOptions, Mode, classify_train_jobs};

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

/// The observation of each TrainJob in `request.scope`, sorted by namespace, name and
/// UID; a named TrainJob that does not exist is `NotFound`, and `--mode kueue` on a
/// cluster that does not serve Kueue's API is `Unsupported`.
pub async fn explain(
    cluster: &Cluster,
    cx: &CallContext,
    request: Explain<'_>,
) -> Result<Vec<ObjectObs>> {
    let train_jobs = cluster.read_train_jobs(cx, request.scope).await?;
    let queued = train_jobs.iter().any(|v| match v {
        View::TrainJob(tj) => Mode::of_train_job(tj, true) == Mode::Kueue,
        _ => false,
    });
    let kueue_served = match request.mode {
        ModeChoice::Fixed(Mode::Plain) => false,
        ModeChoice::Auto if !queued => false,
        ModeChoice::Auto | ModeChoice::Fixed(Mode::Kueue) => {
            cluster.serves(cx, &WORKLOAD.api_version()).await?
        }
    };
    if request.mode == ModeChoice::Fixed(Mode::Kueue) && !kueue_served {
        return Err(Error::unsupported(format!(
            "Kueue mode, but the cluster does not serve Kueue's API ({})",
            WORKLOAD.api_version()
        )));
    }
    let namespace = match request.scope {
        Scope::Named { namespace, .. } | Scope::Namespace(namespace) => namespace,
        Scope::Everywhere => "",
    };
    let nodes = cluster.node_reads(cx, namespace).await?;
    let snapshot = cluster.read_around(cx, request.scope, train_jobs, nodes, kueue_served).await?;
    let options = ClassifyOptions {
        mode: Mode::Plain,
        nodes_readable: nodes.readable(),
        backend: request.backend.to_owned(),
    };
    let mode_of = |tj: &_| match request.mode {
        ModeChoice::Auto => Mode::of_train_job(tj, kueue_served),
        ModeChoice::Fixed(mode) => mode,
    };
    Ok(classify_train_jobs(&snapshot, &options, mode_of, edge::now()))
}
