//! Watch (`docs/backend.md#watch-and-the-deleted-pods-evidence`): a share of the
//! Backend's watches (`hub.rs`: one per kind in the namespace, whatever the number of
//! Watches), a Find first, then a Find after each burst of the job's changes, sending
//! each observation that differs from the last one sent for its object. The stream ends
//! without an error when the caller's context ends; it ends with an error item when a
//! watch it relies on fails (its apiserver stays unreachable) or a Find fails. The pump
//! stops, and its share is given back, as soon as the receiver is dropped.

use std::collections::HashMap;
use std::sync::Arc;

use dispatch_core::{
    CallContext, Discovery, Error, JobId, ObjectKind, ObjectObs, ObjectState, ObsStream, Result,
    Watcher,
};
use dispatch_kf_model::gone;
use tokio::sync::mpsc;

use crate::coalesce::Coalescer;
use crate::evidence::Watching;
use crate::hub::{Routed, Subscription};
use crate::{Inner, KubeflowBackend, edge};

/// What the pump does next.
enum Next {
    /// Something the hub routed to this job.
    Routed(Routed),
    /// The coalescer's timeout passed with nothing.
    Quiet,
    /// Stop: the call ended, or the receiver is gone.
    Stop,
}

#[async_trait::async_trait]
impl Watcher for KubeflowBackend {
    async fn watch(&self, cx: &CallContext, job: &JobId) -> Result<ObsStream> {
        self.inner.check_open()?;
        let watching = self.inner.evidence.watching(job);
        let subscription = self.inner.hub.subscribe(cx, job).await?;
        let first = self.inner.discover(cx, job).await?;
        let (tx, rx) = mpsc::channel(64);
        let rx = futures::stream::unfold(rx, |mut rx| async move {
            let item = rx.recv().await?;
            Some((item, rx))
        });
        let pump = Pump {
            inner: self.inner.clone(),
            cx: cx.clone(),
            job: job.clone(),
            sent: HashMap::new(),
            tx,
            _watching: watching,
        };
        tokio::spawn(pump.run(subscription, first));
        Ok(Box::pin(rx))
    }
}

struct Pump {
    inner: Arc<Inner>,
    cx: CallContext,
    job: JobId,
    /// The last observation sent per object, with `seen_at` cleared.
    sent: HashMap<(ObjectKind, String, String), ObjectObs>,
    tx: mpsc::Sender<Result<ObjectObs>>,
    /// Keeps the job's evidence whole while the pump runs.
    _watching: Watching,
}

impl Pump {
    async fn run(mut self, mut subscription: Subscription, first: (Discovery, Vec<String>)) {
        if !self.send_changed(first).await {
            return;
        }
        let mut coalescer = Coalescer::default();
        loop {
            match self.next(&mut subscription, coalescer.poll_timeout()).await {
                Next::Routed(Routed::Failed(e)) => return self.fail(e).await,
                Next::Routed(Routed::Touched) => coalescer.handle(edge::timer()),
                Next::Quiet => {}
                Next::Stop => return,
            }
            if !coalescer.poll_find(edge::timer()) {
                continue;
            }
            match self.inner.discover(&self.cx, &self.job).await {
                Ok(found) => {
                    if !self.send_changed(found).await {
                        return;
                    }
                }
                Err(e) => return self.fail(e.context("watch: a Find failed")).await,
            }
        }
    }

    /// Ends the stream with `error`, the last item the caller gets.
    async fn fail(&self, error: Error) {
        let _ = self.tx.send(Err(error)).await;
    }

    /// The next routed event, or `Quiet` when `until` passed first, or `Stop`.
    async fn next(
        &self,
        subscription: &mut Subscription,
        until: Option<tokio::time::Instant>,
    ) -> Next {
        let timer = async {
            match until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            routed = subscription.next() => Next::Routed(routed),
            () = self.tx.closed() => Next::Stop,
            () = self.cx.cancelled() => Next::Stop,
            () = edge::deadline(&self.cx) => Next::Stop,
            () = timer => Next::Quiet,
        }
    }

    /// The last word on each TrainJob last sent alive that `objects` no longer holds:
    /// deleted, so ended (`dispatch_kf_model::gone`). Without it the last
    /// item a supervisor got for it would say `running` for ever.
    fn gone(&self, objects: &[ObjectObs]) -> Vec<ObjectObs> {
        let now = edge::now();
        let held = |key: &(ObjectKind, String, String)| {
            objects
                .iter()
                .any(|o| (o.object.kind, &o.object.name, &o.object.uid) == (key.0, &key.1, &key.2))
        };
        self.sent
            .iter()
            .filter(|(key, last)| key.0 == ObjectKind::TrainJob && last.is_alive() && !held(key))
            .map(|(_, last)| gone(last, now))
            .collect()
    }

    /// Sends each observation of `found` that differs from the last one sent for its
    /// object; `false` when the receiver is gone. While the pods watch has not taken in
    /// deletions the read already showed (`found`'s names), an Ended is held back: it
    /// could rest on a pod set missing their last states, and the supervisor acts on
    /// the first Ended it gets. Those deletions arriving, or the pods watch listing
    /// anew, make the next look.
    async fn send_changed(&mut self, found: (Discovery, Vec<String>)) -> bool {
        let (discovery, deletions_unseen) = found;
        let gone = self.gone(&discovery.objects);
        for obs in discovery.objects.into_iter().chain(gone) {
            if obs.state == ObjectState::Ended && !deletions_unseen.is_empty() {
                tracing::debug!(object = %obs.object.name, unseen = ?deletions_unseen, "an Ended held back until the pods watch has seen these deletions");
                continue;
            }
            let key = (obs.object.kind, obs.object.name.clone(), obs.object.uid.clone());
            let mut comparable = obs.clone();
            comparable.seen_at = jiff::Timestamp::UNIX_EPOCH;
            if self.sent.get(&key) == Some(&comparable) {
                continue;
            }
            if self.tx.send(Ok(obs)).await.is_err() {
                return false;
            }
            self.sent.insert(key, comparable);
        }
        true
    }
}
