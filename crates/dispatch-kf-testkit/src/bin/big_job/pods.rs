//! The bench's own eye on a job's pods: one list, then a watch from it, kept as a count
//! of pods by phase that callers wait on. It connects straight to the apiserver, not
//! through the counting proxy, so that what it reads is never counted as a command's.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use tokio::sync::watch;
use tokio::time::Instant;

/// How many of the selected pods exist, and how many of them run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) pods: usize,
    pub(crate) running: usize,
}

/// The pods a label selector selects, counted as they change.
pub(crate) struct Pods {
    counts: watch::Receiver<Counts>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Pods {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Pods {
    /// Starts counting the pods of `namespace` that `selector` selects.
    pub(crate) fn of(kube: &kube::Client, namespace: &str, selector: &str) -> Pods {
        let api: Api<Pod> = Api::namespaced(kube.clone(), namespace);
        let (tx, counts) = watch::channel(Counts::default());
        let selector = selector.to_owned();
        let task = tokio::spawn(async move {
            loop {
                // A watch that ends or fails is started again from a new list.
                let _ = follow(&api, &selector, &tx).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Pods { counts, task }
    }

    /// Waits until `done` holds of the counts, at most `limit`; the time it took.
    pub(crate) async fn until(
        &mut self,
        what: &str,
        limit: Duration,
        done: impl Fn(Counts) -> bool,
    ) -> Result<Duration, String> {
        let t0 = Instant::now();
        let waited = tokio::time::timeout(limit, self.counts.wait_for(|c| done(*c))).await;
        let waited = waited.map(|found| found.is_ok());
        match waited {
            Ok(true) => Ok(t0.elapsed()),
            Ok(false) => Err(format!("{what}: the pod count stopped")),
            Err(_) => Err(format!("{what}: not within {limit:?} ({:?})", *self.counts.borrow())),
        }
    }
}

/// Lists, then watches from the list, sending the counts after every change.
async fn follow(api: &Api<Pod>, selector: &str, tx: &watch::Sender<Counts>) -> Result<(), String> {
    let listed =
        api.list(&ListParams::default().labels(selector)).await.map_err(|e| e.to_string())?;
    let mut phases: BTreeMap<String, String> = listed
        .items
        .iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), phase(p)))
        .collect();
    tx.send_replace(counts(&phases));
    let version = listed.metadata.resource_version.unwrap_or_default();
    let params = WatchParams::default().labels(selector).timeout(290);
    let mut events = api.watch(&params, &version).await.map_err(|e| e.to_string())?.boxed();
    while let Some(event) = events.try_next().await.map_err(|e| e.to_string())? {
        match event {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                phases.insert(p.metadata.name.clone().unwrap_or_default(), phase(&p));
            }
            WatchEvent::Deleted(p) => {
                phases.remove(p.metadata.name.as_deref().unwrap_or_default());
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => return Err(e.to_string()),
        }
        tx.send_replace(counts(&phases));
    }
    Ok(())
}

fn phase(pod: &Pod) -> String {
    pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default()
}

fn counts(phases: &BTreeMap<String, String>) -> Counts {
    Counts { pods: phases.len(), running: phases.values().filter(|p| *p == "Running").count() }
}
