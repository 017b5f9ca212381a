//! Streams: watches of one kind, and a pod's log, on the client without a read timeout.
//!
//! A watch ends cleanly (no error) when the server closes it, when it fails, or when
//! the server says the resource version expired (a 410 ERROR event inside the stream):
//! the caller subscribes again.

use dispatch_core::{CallContext, Error, Result};
use futures::{AsyncReadExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, LogParams, WatchEvent, WatchParams};

use crate::cluster::Cluster;
use crate::error_map::RequestClass;
use crate::objects::Objects;

/// One change seen by a watch.
#[derive(Clone, Debug)]
pub enum Change {
    /// An object was added or modified: its new state.
    Applied(DynamicObject),
    /// An object was deleted: its last state.
    Deleted(DynamicObject),
}

/// The most a log read returns at once.
const LOG_CHUNK: usize = 64 * 1024;

impl Objects<'_> {
    /// Watches the objects matching `selector` from `resource_version`. The stream
    /// yields each change and ends, without an error, when the watch expires or
    /// disconnects; bookmarks are skipped.
    pub async fn watch(
        &self,
        cx: &CallContext,
        selector: &str,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Change> + Send + 'static + use<>> {
        let what = self.what("watch", &format!("-l {selector:?}"));
        let params = WatchParams::default().labels(selector);
        let events = self
            .cluster()
            .streaming()
            .call(cx, RequestClass::Read, &what, |client| {
                let api = self.api(client);
                async move { api.watch(&params, resource_version).await }
            })
            .await?;
        Ok(events
            .take_while(|event| {
                std::future::ready(matches!(event, Ok(e) if !matches!(e, WatchEvent::Error(_))))
            })
            .filter_map(|event| {
                std::future::ready(match event {
                    Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) => Some(Change::Applied(o)),
                    Ok(WatchEvent::Deleted(o)) => Some(Change::Deleted(o)),
                    _ => None,
                })
            }))
    }
}

impl Cluster {
    /// Pod `name`'s log of container `container` in `namespace`, following it when
    /// asked, as chunks of bytes. A failure to open it maps plainly (404 NotFound,
    /// 401/403 Unauthorized, 400 Rejected, anything else Unreachable); a failure while
    /// reading ends the stream with an `Unreachable` item.
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
            .call(cx, RequestClass::PodsLog, &what, |client| async move {
                Api::<Pod>::namespaced(client, namespace).log_stream(name, &params).await
            })
            .await?;
        let reader = Box::pin(reader);
        Ok(futures::stream::unfold(Some((reader, what)), |state| async move {
            let (mut reader, what) = state?;
            let mut chunk = vec![0u8; LOG_CHUNK];
            match reader.read(&mut chunk).await {
                Ok(0) => None,
                Ok(n) => {
                    chunk.truncate(n);
                    Some((Ok(chunk), Some((reader, what))))
                }
                Err(e) => {
                    let err = Error::unreachable(format!("{what}: the log broke off: {e}"))
                        .with_source(e);
                    Some((Err(err), None))
                }
            }
        }))
    }
}
