//! The controller's watches: one per kind and watched namespace (or one per kind over
//! every namespace), whatever the number of TrainJobs, each sent on one channel to
//! the loop. A watch that ends (its apiserver stayed unreachable) is started again
//! after a pause; its first change is then a list, which the store takes whole.

use std::time::Duration;

use dispatch_core::Kind as Sentinel;
use dispatch_kf_client::resources::{
    JOB_SET, NODE, POD, Resource, TRAIN_JOB, TRAINING_RUNTIME, WORKLOAD,
};
use dispatch_kf_client::{Change, Cluster};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::store::Kind;
use crate::telemetry::Telemetry;

/// How long a watch that ended waits before it starts again.
const RESTART_AFTER: Duration = Duration::from_secs(5);

/// One watch: its kind and the namespace it covers (`None`: every namespace, or a
/// cluster-scoped kind).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Feed {
    pub(crate) kind: Kind,
    pub(crate) scope: Option<String>,
}

/// What a watch sends the loop.
pub(crate) enum Fed {
    /// A change it saw.
    Change(Feed, Box<Change>),
    /// It may not read its kind (403): the loop goes on without it.
    Forbidden(Feed),
}

fn resource(kind: Kind) -> Resource {
    match kind {
        Kind::TrainJob => TRAIN_JOB,
        Kind::JobSet => JOB_SET,
        Kind::Workload => WORKLOAD,
        Kind::Pod => POD,
        Kind::Node => NODE,
        Kind::Runtime => TRAINING_RUNTIME,
    }
}

/// The watches of `namespaces` (every namespace when empty), Workloads only where
/// `kueue` (the cluster serves Kueue's API).
pub(crate) fn feeds(namespaces: &[String], kueue: bool) -> Vec<Feed> {
    let scopes: Vec<Option<String>> = if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    };
    let mut kinds = vec![Kind::TrainJob, Kind::JobSet, Kind::Pod, Kind::Runtime];
    if kueue {
        kinds.push(Kind::Workload);
    }
    let mut out: Vec<Feed> = kinds
        .into_iter()
        .flat_map(|kind| scopes.iter().map(move |scope| Feed { kind, scope: scope.clone() }))
        .collect();
    out.push(Feed { kind: Kind::Node, scope: None });
    out
}

/// Runs `feed`'s watch until `stop`, sending what it sees to `to`.
pub(crate) async fn run(
    cluster: Cluster,
    feed: Feed,
    to: mpsc::Sender<Fed>,
    telemetry: Telemetry,
    stop: CancellationToken,
) {
    let resource = resource(feed.kind);
    loop {
        let objects = match &feed.scope {
            Some(namespace) => cluster.objects(resource, namespace),
            None => cluster.objects_everywhere(resource),
        };
        let mut changes = objects.watch("");
        loop {
            let next = tokio::select! {
                next = changes.next() => next,
                () = stop.cancelled() => return,
            };
            match next {
                Some(Ok(change)) => {
                    if to.send(Fed::Change(feed.clone(), Box::new(change))).await.is_err() {
                        return;
                    }
                }
                Some(Err(error)) if error.is(Sentinel::Unauthorized) => {
                    tracing::warn!(?feed, %error, "may not watch: going on without this kind");
                    let _ = to.send(Fed::Forbidden(feed)).await;
                    return;
                }
                Some(Err(error)) => {
                    tracing::warn!(?feed, %error, "the watch ended; starting it again");
                    telemetry.failed("watch");
                    break;
                }
                None => break,
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RESTART_AFTER) => {}
            () = stop.cancelled() => return,
        }
    }
}
