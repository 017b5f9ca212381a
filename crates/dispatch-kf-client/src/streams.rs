//! A pod's log, read or followed, on the client without a read timeout: a followed log
//! that goes silent is checked on its pod rather than waited on forever.

use std::time::{Duration, Instant};

use dispatch_core::{CallContext, Error, Result};
use futures::{AsyncReadExt, Stream};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use crate::cluster::Cluster;
use crate::error_map::RequestClass;
use crate::watch::DEAD_WATCHES;

/// The most a log read returns at once.
const LOG_CHUNK: usize = 64 * 1024;

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
