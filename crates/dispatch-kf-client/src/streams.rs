//! Streams: watches of one kind, and a pod's log, on the client without a read timeout.
//!
//! A watch never hangs: each connection is asked to end after `timeoutSeconds` and is
//! given up when silent past that and the request timeout; the watch resumes from the
//! last resource version it saw, and ends with an error when connections keep bringing
//! nothing. It ends cleanly only when the call ends.

use std::time::{Duration, Instant};

use dispatch_core::{CallContext, Error, Result};
use dispatch_kf_model::view::View;
use futures::stream::BoxStream;
use futures::{AsyncReadExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams, WatchEvent, WatchParams};

use crate::cluster::Cluster;
use crate::error_map::RequestClass;
use crate::objects::Objects;
use crate::resources::Resource;

/// One change seen by a watch.
#[derive(Clone, Debug)]
pub enum Change {
    /// An object was added or modified: what classification reads of its new state.
    Applied(View),
    /// An object was deleted: what classification reads of its last state.
    Deleted(View),
    /// The watch's resource version expired (410) and it resumed from the collection's
    /// current one: changes in between were missed, so read everything again.
    Resumed,
}

/// How long the apiserver is asked to keep one watch connection open
/// (`timeoutSeconds`), as kube-runtime's watcher asks; the watch then resumes from the
/// last resource version it saw, so a connection never lives long enough to rot.
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(290);
/// How many watch connections in a row may end without a single event (not even a
/// bookmark), or fail to open, before the watch ends with an error.
pub const DEAD_WATCHES: u32 = 3;

/// The most a log read returns at once.
const LOG_CHUNK: usize = 64 * 1024;

type Events = BoxStream<'static, kube::Result<WatchEvent<View>>>;

impl Objects<'_> {
    /// Watches the objects matching `selector` from `resource_version`, for as long as
    /// the call lasts. Each connection asks for bookmarks and for `timeoutSeconds`
    /// ([`Cluster::watch_timeout`]); when one ends, is silent past its timeout and the
    /// request timeout, or breaks, the watch resumes from the last resource version it
    /// saw, as kube-runtime's watcher does; after a 410 it resumes from the current one
    /// and yields [`Change::Resumed`]. Opening one waits no longer than the request
    /// timeout. After [`DEAD_WATCHES`] connections in a row that brought nothing, the
    /// stream yields an error (`Unreachable`) and ends: an apiserver that stays
    /// unreachable is told apart from the clean end the call's own end makes.
    pub async fn watch(
        &self,
        cx: &CallContext,
        selector: &str,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Result<Change>> + Send + 'static + use<>> {
        let watch = Watch {
            cluster: self.cluster().streaming(),
            resource: self.resource,
            namespace: self.namespace.clone().unwrap_or_default(),
            selector: selector.to_owned(),
            version: resource_version.to_owned(),
            cx: cx.clone(),
            dead: 0,
            ended: false,
        };
        let events = Some(watch.open().await?);
        Ok(futures::stream::unfold((watch, events), |(mut watch, mut events)| async move {
            let item = watch.next(&mut events).await?;
            Some((item, (watch, events)))
        }))
    }
}

/// One watch, across the connections it resumes on.
struct Watch {
    cluster: Cluster,
    resource: Resource,
    namespace: String,
    selector: String,
    version: String,
    cx: CallContext,
    /// Connections in a row that brought nothing.
    dead: u32,
    ended: bool,
}

impl Watch {
    fn objects(&self) -> Objects<'_> {
        self.cluster.objects(self.resource, &self.namespace)
    }

    /// This call's context, bounded by the request timeout: what opening a connection
    /// or reading a resource version may take.
    fn bounded(&self) -> CallContext {
        bounded(&self.cx, self.cluster.request_timeout())
    }

    /// Opens one connection from the last resource version seen.
    async fn open(&self) -> Result<Events> {
        let objects = self.objects();
        let what = objects.what("watch", &format!("-l {:?}", self.selector));
        let timeout = u32::try_from(self.cluster.watch_timeout().as_secs()).unwrap_or(290).max(1);
        let params = WatchParams::default().labels(&self.selector).timeout(timeout);
        let request = objects.request().watch(&params, &self.version);
        let events = self
            .cluster
            .call(&self.bounded(), RequestClass::Read, &what, |client| async move {
                // Each event's object is read straight into its view.
                client.request_events::<View>(request.map_err(kube::Error::BuildRequest)?).await
            })
            .await?;
        Ok(events.boxed())
    }

    /// The next change, an error that ends the watch, or `None` when the call ended.
    async fn next(&mut self, connection: &mut Option<Events>) -> Option<Result<Change>> {
        if self.ended {
            return None;
        }
        loop {
            let Some(events) = connection.as_mut() else {
                match self.reopen().await? {
                    Ok(events) => {
                        *connection = Some(events);
                        continue;
                    }
                    Err(e) => {
                        self.ended = true;
                        return Some(Err(e));
                    }
                }
            };
            let idle = self.cluster.watch_timeout() + self.cluster.request_timeout();
            let event = tokio::select! {
                event = tokio::time::timeout(idle, events.next()) => event,
                () = self.cx.cancelled() => return None,
                () = deadline(&self.cx) => return None,
            };
            match event {
                Ok(Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)))) => {
                    self.saw(&o);
                    return Some(Ok(Change::Applied(o)));
                }
                Ok(Some(Ok(WatchEvent::Deleted(o)))) => {
                    self.saw(&o);
                    return Some(Ok(Change::Deleted(o)));
                }
                Ok(Some(Ok(WatchEvent::Bookmark(b)))) => {
                    self.version = b.metadata.resource_version;
                    self.dead = 0;
                }
                Ok(Some(Ok(WatchEvent::Error(status)))) if status.code == 410 => {
                    *connection = None;
                    match self.objects().current_version(&self.bounded(), &self.selector).await {
                        Ok(version) => {
                            self.version = version;
                            self.dead = 0;
                            return Some(Ok(Change::Resumed));
                        }
                        Err(_) => self.dead += 1,
                    }
                }
                // Ended (the server's timeout), broke, errored or went silent: resume.
                Ok(Some(Ok(WatchEvent::Error(_))) | Some(Err(_)) | None) | Err(_) => {
                    *connection = None;
                    self.dead += 1;
                }
            }
        }
    }

    /// Opens a new connection, unless too many in a row brought nothing; `None` when
    /// the call ended while it waited.
    async fn reopen(&mut self) -> Option<Result<Events>> {
        let mut last = None;
        while self.dead < DEAD_WATCHES {
            match self.open().await {
                Ok(events) => return Some(Ok(events)),
                Err(e) if self.cx.is_cancelled() => return Some(Err(e)),
                Err(e) => {
                    last = Some(e);
                    self.dead += 1;
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = self.cx.cancelled() => return None,
                        () = deadline(&self.cx) => return None,
                    }
                }
            }
        }
        let what = self.objects().what("watch", &format!("-l {:?}", self.selector));
        let why = last.map(|e| format!(": {}", e.message())).unwrap_or_default();
        Some(Err(Error::unreachable(format!(
            "{what}: {DEAD_WATCHES} connections in a row ended, broke or stayed silent without a single event, not even a bookmark: the apiserver is unreachable{why}"
        ))))
    }

    fn saw(&mut self, object: &View) {
        if let Some(v) = object.meta().resource_version.get() {
            self.version = v.to_owned();
        }
        self.dead = 0;
    }
}

/// Resolves when the call's deadline passes; never when it has none.
async fn deadline(cx: &CallContext) {
    match cx.deadline {
        Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
        None => std::future::pending().await,
    }
}

impl Cluster {
    /// Pod `name`'s log of container `container` in `namespace`, following it when
    /// asked, as chunks of bytes. Opening it waits no longer than the request timeout;
    /// a failure to open it maps plainly (404 NotFound, 401/403 Unauthorized, 400
    /// Rejected, anything else Unreachable); a failure while reading ends the stream
    /// with an `Unreachable` item. A followed log that stays silent past the watch
    /// timeout is checked on the pod: while it runs (a quiet program) the stream waits
    /// on; when the pod has ended or is gone, or [`DEAD_WATCHES`] checks in a row get
    /// no answer, the connection is taken for lost and the stream ends with an
    /// `Unreachable` item.
    pub async fn pod_log(
        &self,
        cx: &CallContext,
        namespace: &str,
        name: &str,
        container: &str,
        follow: bool,
    ) -> Result<impl Stream<Item = Result<Vec<u8>>> + Send + 'static + use<>> {
        let what = format!("read log of Pod {namespace}/{name}");
        let params =
            LogParams { container: Some(container.to_owned()), follow, ..LogParams::default() };
        let reader = self
            .streaming()
            .call(
                &bounded(cx, self.request_timeout()),
                RequestClass::PodsLog,
                &what,
                |client| async move {
                    Api::<Pod>::namespaced(client, namespace).log_stream(name, &params).await
                },
            )
            .await?;
        let log = Log {
            reader: Box::pin(reader),
            cluster: self.clone(),
            cx: cx.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            what,
            follow,
            unanswered: 0,
        };
        Ok(futures::stream::unfold(Some(log), |log| async move {
            let mut log = log?;
            let item = log.next().await?;
            let more = item.is_ok();
            Some((item, more.then_some(log)))
        }))
    }
}

/// `cx`, bounded by `timeout` from now: what opening a stream or checking on it may take.
fn bounded(cx: &CallContext, timeout: Duration) -> CallContext {
    let mut cx = cx.clone();
    let bound = Instant::now() + timeout;
    cx.deadline = Some(cx.deadline.map_or(bound, |d| d.min(bound)));
    cx
}

/// One pod's log, as it is read.
struct Log {
    reader: std::pin::Pin<Box<dyn futures::AsyncBufRead + Send>>,
    cluster: Cluster,
    cx: CallContext,
    namespace: String,
    name: String,
    what: String,
    follow: bool,
    /// Checks on the pod in a row that got no answer.
    unanswered: u32,
}

impl Log {
    /// The next chunk, an error that ends the stream, or `None` at its end.
    async fn next(&mut self) -> Option<Result<Vec<u8>>> {
        loop {
            let mut chunk = vec![0u8; LOG_CHUNK];
            let read = if self.follow {
                tokio::time::timeout(self.cluster.watch_timeout(), self.reader.read(&mut chunk))
                    .await
            } else {
                Ok(self.reader.read(&mut chunk).await)
            };
            match read {
                Ok(Ok(0)) => return None,
                Ok(Ok(n)) => {
                    chunk.truncate(n);
                    self.unanswered = 0;
                    return Some(Ok(chunk));
                }
                Ok(Err(e)) => {
                    let what = &self.what;
                    return Some(Err(Error::unreachable(format!(
                        "{what}: the log broke off: {e}"
                    ))
                    .with_source(e)));
                }
                Err(_silent) => {
                    if let Some(lost) = self.check_on_pod().await {
                        return Some(Err(lost));
                    }
                }
            }
        }
    }

    /// After a silence: `None` while the pod runs (the program is quiet), else why the
    /// connection is taken for lost.
    async fn check_on_pod(&mut self) -> Option<Error> {
        let what = &self.what;
        let pods = self.cluster.objects(crate::resources::POD, &self.namespace);
        let cx = bounded(&self.cx, self.cluster.request_timeout());
        match pods.get_opt(&cx, &self.name).await {
            Ok(Some(pod))
                if !matches!(
                    pod.pointer("/status/phase").and_then(serde_json::Value::as_str),
                    Some("Succeeded" | "Failed")
                ) =>
            {
                self.unanswered = 0;
                None
            }
            Ok(_) => Some(Error::unreachable(format!(
                "{what}: the log went silent and the pod has ended or is gone, so the connection was lost: its last lines may be missing"
            ))),
            Err(e) => {
                self.unanswered += 1;
                (self.unanswered >= DEAD_WATCHES).then(|| {
                    Error::unreachable(format!(
                        "{what}: the log went silent and {DEAD_WATCHES} checks on the pod got no answer: {}",
                        e.message()
                    ))
                })
            }
        }
    }
}
