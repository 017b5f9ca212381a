//! Watch (`docs/backend.md#watch-and-the-deleted-pods-evidence`): watches on the
//! namespace's TrainJobs and JobSets, the job's pods and (Kueue) the Workloads; a Find
//! first, then a Find after each burst of relevant changes, sending each observation
//! that differs from the last one sent for its object. The stream ends without an error
//! when the caller's context ends; it ends with an error item when a watch fails (its
//! apiserver stays unreachable) or a Find fails. The pump and its watch connections stop
//! as soon as the receiver is dropped.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use dispatch_core::{CallContext, Error, JobId, ObjectKind, ObjectObs, ObsStream, Result, Watcher};
use dispatch_kf_client::resources::{JOB_SET, POD, TRAIN_JOB, WORKLOAD};
use dispatch_kf_client::{Change, Resource};
use dispatch_kf_model::view::View;
use dispatch_kf_model::{Mode, keys, names};
use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use tokio::sync::mpsc;

use crate::coalesce::Coalescer;
use crate::evidence::Watching;
use crate::{Inner, KubeflowBackend, edge};

/// One event of the merged watches: a change of a kind, a watch's failure, or the end of
/// one watch (only when the call ends).
type Event = Option<Result<(Resource, Change)>>;

/// What the pump does next.
enum Next {
    /// A change or a failure (boxed: a change holds a whole object).
    Event(Box<Result<(Resource, Change)>>),
    /// The coalescer's timeout passed with nothing.
    Quiet,
    /// Stop: the call ended, a watch ended with it, or the receiver is gone.
    Stop,
}

#[async_trait::async_trait]
impl Watcher for KubeflowBackend {
    async fn watch(&self, cx: &CallContext, job: &JobId) -> Result<ObsStream> {
        self.inner.check_open()?;
        let watching = self.inner.evidence.watching(job);
        let watches = self.inner.open_watches(cx, job).await?;
        let first = self.inner.find(cx, job).await?;
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
        tokio::spawn(pump.run(watches, first.objects));
        Ok(Box::pin(rx))
    }
}

impl Inner {
    /// Opens the watches, each from its collection's current resource version.
    async fn open_watches(
        &self,
        cx: &CallContext,
        job: &JobId,
    ) -> Result<SelectAll<BoxStream<'static, Event>>> {
        let by_label = format!("{}={job}", keys::LABEL_JOB_ID);
        let mut kinds = vec![(TRAIN_JOB, String::new()), (JOB_SET, String::new()), (POD, by_label)];
        if self.settings.mode == Mode::Kueue {
            kinds.push((WORKLOAD, String::new()));
        }
        let mut merged = SelectAll::new();
        for (resource, selector) in kinds {
            let objects = self.cluster.objects(resource, &self.settings.namespace);
            let version = objects.current_version(cx, &selector).await?;
            let changes = objects.watch(cx, &selector, &version).await?;
            let events = changes
                .map(move |c| Some(c.map(|c| (resource, c))))
                .chain(futures::stream::once(async { None }));
            merged.push(events.boxed());
        }
        Ok(merged)
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
    async fn run(
        mut self,
        mut watches: SelectAll<BoxStream<'static, Event>>,
        first: Vec<ObjectObs>,
    ) {
        if !self.send_changed(first).await {
            return;
        }
        let mut coalescer = Coalescer::default();
        loop {
            match self.next(&mut watches, coalescer.poll_timeout()).await {
                Next::Event(event) => match self.absorb(*event) {
                    Ok(relevant) => coalescer.handle(edge::timer(), relevant),
                    Err(e) => return self.fail(e).await,
                },
                Next::Quiet => {}
                Next::Stop => return,
            }
            if !coalescer.poll_find(edge::timer()) {
                continue;
            }
            match self.inner.find(&self.cx, &self.job).await {
                Ok(found) => {
                    if !self.send_changed(found.objects).await {
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

    /// The next event, or `Quiet` when `until` passed first, or `Stop`.
    async fn next(
        &self,
        watches: &mut SelectAll<BoxStream<'static, Event>>,
        until: Option<tokio::time::Instant>,
    ) -> Next {
        let timer = async {
            match until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = watches.next() => match event.flatten() {
                Some(event) => Next::Event(Box::new(event)),
                None => Next::Stop,
            },
            () = self.tx.closed() => Next::Stop,
            () = self.cx.cancelled() => Next::Stop,
            () = edge::deadline(&self.cx) => Next::Stop,
            () = timer => Next::Quiet,
        }
    }

    /// Takes in one change: keeps a deleted pod's evidence, and says whether the change
    /// is about this job.
    fn absorb(&mut self, event: Result<(Resource, Change)>) -> Result<bool> {
        let (resource, change) = event?;
        Ok(self.relevant(resource, change))
    }

    fn relevant(&mut self, resource: Resource, change: Change) -> bool {
        let (deleted, object) = match change {
            Change::Applied(o) => (false, o),
            Change::Deleted(o) => (true, o),
            // Changes were missed: read everything again.
            Change::Resumed => return true,
        };
        if resource == POD {
            if deleted && let View::Pod(pod) = object {
                self.inner.evidence.capture(&self.job, pod);
            }
            return true;
        }
        if resource == WORKLOAD {
            let uid = object.meta().label(keys::KUEUE_JOB_UID);
            let sent: BTreeSet<&str> = self.sent.keys().map(|(_, _, uid)| uid.as_str()).collect();
            return uid.is_some_and(|u| sent.contains(u));
        }
        self.is_of_job(&object)
    }

    /// A TrainJob or JobSet of this job: by name or job-id label.
    fn is_of_job(&self, object: &View) -> bool {
        let meta = object.meta();
        names::is_of_job(&self.job, meta.name(), meta.label(keys::LABEL_JOB_ID))
    }

    /// Sends each observation that differs from the last one sent for its object;
    /// `false` when the receiver is gone.
    async fn send_changed(&mut self, observations: Vec<ObjectObs>) -> bool {
        for obs in observations {
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
