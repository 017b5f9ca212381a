//! The benches' own eye on objects: one list, then a watch from it, folded into a state
//! that callers wait on, each change stamped with when the bench saw it. It connects
//! straight to the apiserver, not through the counting proxy, so that what it reads is
//! never counted as a command's.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::time::Instant;

/// What the watch told, given to the state's fold.
pub enum Change<'a, K> {
    /// A fresh list: these are all the objects now (the first, or after a watch broke).
    Listed(&'a [K]),
    /// This object was made or changed.
    Put(&'a K),
    /// This object is gone.
    Deleted(&'a K),
}

/// A state kept up to date with the objects a label selector selects.
pub struct Followed<S> {
    state: Arc<watch::Sender<S>>,
    seen: watch::Receiver<S>,
    task: tokio::task::JoinHandle<()>,
}

impl<S> Drop for Followed<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<S: Send + Sync + 'static> Followed<S> {
    /// Starts following what `selector` selects of `api` (every object when empty),
    /// folding each change into `state` with `fold` at the moment it was read.
    pub fn start<K>(
        api: Api<K>,
        selector: &str,
        state: S,
        fold: impl FnMut(&mut S, Change<'_, K>, Instant) + Send + 'static,
    ) -> Followed<S>
    where
        K: kube::Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    {
        let (tx, seen) = watch::channel(state);
        let state = Arc::new(tx);
        let tx = state.clone();
        let selector = selector.to_owned();
        let task = tokio::spawn(async move {
            let mut fold = fold;
            loop {
                // A watch that ends or fails is started again from a new list.
                let _ = follow(&api, &selector, &tx, &mut fold).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Followed { state, seen, task }
    }

    /// Changes the state from outside (to mark where a measurement begins).
    pub fn edit(&self, edit: impl FnOnce(&mut S)) {
        self.state.send_modify(edit);
    }

    /// What `read` makes of the state now.
    pub fn read<T>(&self, read: impl FnOnce(&S) -> T) -> T {
        read(&self.state.borrow())
    }

    /// Waits until `done` holds of the state, at most `limit`; the time it took.
    pub async fn until(
        &self,
        what: &str,
        limit: Duration,
        done: impl Fn(&S) -> bool,
    ) -> Result<Duration, String>
    where
        S: Debug,
    {
        let t0 = Instant::now();
        let mut seen = self.seen.clone();
        let waited = tokio::time::timeout(limit, seen.wait_for(|s| done(s))).await;
        match waited.map(|found| found.is_ok()) {
            Ok(true) => Ok(t0.elapsed()),
            Ok(false) => Err(format!("{what}: the watch stopped")),
            Err(_) => Err(format!("{what}: not within {limit:?} ({:?})", *self.seen.borrow())),
        }
    }
}

/// Lists, then watches from the list, folding every change into the state.
async fn follow<K, S>(
    api: &Api<K>,
    selector: &str,
    tx: &watch::Sender<S>,
    fold: &mut (impl FnMut(&mut S, Change<'_, K>, Instant) + Send),
) -> Result<(), String>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let listed =
        api.list(&ListParams::default().labels(selector)).await.map_err(|e| e.to_string())?;
    let at = Instant::now();
    tx.send_modify(|s| fold(s, Change::Listed(&listed.items), at));
    let version = listed.metadata.resource_version.unwrap_or_default();
    let params = WatchParams::default().labels(selector).timeout(290);
    let mut events = api.watch(&params, &version).await.map_err(|e| e.to_string())?.boxed();
    while let Some(event) = events.try_next().await.map_err(|e| e.to_string())? {
        let at = Instant::now();
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                tx.send_modify(|s| fold(s, Change::Put(&o), at));
            }
            WatchEvent::Deleted(o) => tx.send_modify(|s| fold(s, Change::Deleted(&o), at)),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// The name of an object the watch gave.
pub fn name_of(object: &impl kube::Resource) -> String {
    object.meta().name.clone().unwrap_or_default()
}

/// How many of the selected pods exist, and how many of them run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pods that exist.
    pub pods: usize,
    /// Pods in phase Running.
    pub running: usize,
}

/// The pods a label selector selects, by name, with their phases.
#[derive(Default)]
pub struct Phases(BTreeMap<String, String>);

impl Debug for Phases {
    /// Their counts: a thousand names say nothing in a timeout's message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.counts().fmt(f)
    }
}

impl Phases {
    /// How many there are, and how many run.
    pub fn counts(&self) -> Counts {
        let running = self.0.values().filter(|p| *p == "Running").count();
        Counts { pods: self.0.len(), running }
    }

    fn fold(&mut self, change: Change<'_, Pod>, _: Instant) {
        match change {
            Change::Listed(pods) => {
                self.0 = pods.iter().map(|p| (name_of(p), phase(p))).collect();
            }
            Change::Put(p) => {
                self.0.insert(name_of(p), phase(p));
            }
            Change::Deleted(p) => {
                self.0.remove(&name_of(p));
            }
        }
    }
}

fn phase(pod: &Pod) -> String {
    pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default()
}

/// The pods of `namespace` that a label selector selects, counted as they change.
pub struct Pods(Followed<Phases>);

impl Pods {
    /// Starts counting the pods of `namespace` that `selector` selects.
    pub fn of(kube: &kube::Client, namespace: &str, selector: &str) -> Pods {
        let api: Api<Pod> = Api::namespaced(kube.clone(), namespace);
        Pods(Followed::start(api, selector, Phases::default(), Phases::fold))
    }

    /// Waits until `done` holds of the counts, at most `limit`; the time it took.
    pub async fn until(
        &self,
        what: &str,
        limit: Duration,
        done: impl Fn(Counts) -> bool,
    ) -> Result<Duration, String> {
        self.0.until(what, limit, |phases| done(phases.counts())).await
    }
}
