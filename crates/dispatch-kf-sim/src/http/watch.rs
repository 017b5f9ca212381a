//! Watches: from a resourceVersion (replaying kept events) or from now (synthetic ADDED
//! for every current object), filtered by namespace and selectors (an object that stops
//! matching is DELETED for the watcher, one that starts matching is ADDED), BOOKMARK
//! events when asked for, and 410 Expired as an ERROR event inside a 200 stream.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};

use crate::http::read::{Selection, partial, wants_metadata};
use crate::http::request::ApiReq;
use crate::plain::apierror::ApiError;
use crate::plain::resources::RESOURCES;
use crate::store::State;
use crate::store::{Event, EventType};

/// What a watch sends.
pub(crate) struct Filter {
    res: usize,
    ns: String,
    selection: Selection,
    metadata_only: bool,
    bookmarks: bool,
}

impl Filter {
    fn render(&self, typ: &str, obj: &Value) -> Bytes {
        let obj = if self.metadata_only { partial(obj) } else { obj.clone() };
        line(&json!({"type": typ, "object": obj}))
    }

    /// The line an event gives this watcher, if any.
    fn event(&self, ev: &Event) -> Option<Bytes> {
        if ev.key.res != self.res || (!self.ns.is_empty() && ev.key.ns != self.ns) {
            return None;
        }
        let now = self.selection.matches(&ev.object);
        let before = ev.old.as_ref().is_some_and(|o| self.selection.matches(o));
        let typ = match (ev.typ, before, now) {
            (EventType::Deleted, true, _) => "DELETED",
            (EventType::Deleted, false, _) => return None,
            (EventType::Added, _, true) => "ADDED",
            (EventType::Modified, true, true) => "MODIFIED",
            (EventType::Modified, false, true) => "ADDED",
            (EventType::Modified, true, false) => "DELETED",
            _ => return None,
        };
        Some(self.render(typ, &ev.object))
    }

    fn bookmark(&self, rv: u64) -> Bytes {
        let r = &RESOURCES[self.res];
        let (kind, api_version) = if self.metadata_only {
            ("PartialObjectMetadata".to_string(), "meta.k8s.io/v1".to_string())
        } else {
            (r.kind.to_string(), r.api_version())
        };
        line(
            &json!({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": rv.to_string()}}}),
        )
    }
}

fn line(v: &Value) -> Bytes {
    let mut s = serde_json::to_vec(v).unwrap_or_default();
    s.push(b'\n');
    Bytes::from(s)
}

/// A watch ready to stream: lines to send first, then live events.
pub(crate) struct WatchStart {
    pub(crate) initial: Vec<Bytes>,
    /// `None` when the stream ends after `initial` (expired or closed by a fault).
    pub(crate) live: Option<(Arc<Filter>, broadcast::Receiver<Arc<Event>>)>,
}

/// The ERROR event carrying a 410 Expired Status.
pub(crate) fn expired_line(asked: u64, oldest: u64) -> Bytes {
    line(&json!({"type": "ERROR", "object": ApiError::expired(asked, oldest).to_status()}))
}

pub(crate) fn start(
    state: &State,
    req: &ApiReq,
    q: &BTreeMap<String, String>,
    accept: &str,
) -> Result<WatchStart, ApiError> {
    let filter = Arc::new(Filter {
        res: req.res,
        ns: req.ns.clone(),
        selection: Selection::from_query(q)?,
        metadata_only: wants_metadata(accept),
        bookmarks: q.get("allowWatchBookmarks").is_some_and(|b| b == "true"),
    });
    let rv = q.get("resourceVersion").filter(|v| !v.is_empty() && *v != "0");
    let mut initial = Vec::new();
    match rv {
        None => {
            for (_, obj) in filter.selection.select(state, req.res, &req.ns) {
                initial.push(filter.render("ADDED", obj));
            }
        }
        Some(rv) => {
            let asked: u64 = rv.parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid resourceVersion {rv:?}: pass one the server returned"
                ))
            })?;
            match state.store.since(asked) {
                Ok(events) => initial.extend(events.iter().filter_map(|e| filter.event(e))),
                Err(oldest) => {
                    return Ok(WatchStart {
                        initial: vec![expired_line(asked, oldest)],
                        live: None,
                    });
                }
            }
        }
    }
    if filter.bookmarks {
        initial.push(filter.bookmark(state.store.rv()));
    }
    let rx = state.store.subscribe();
    Ok(WatchStart { initial, live: Some((filter, rx)) })
}

/// Streams a started watch into a channel until the client goes away, the sim closes
/// watches (`closer` changes), or the event broadcast lags (then 410, as a real
/// apiserver does when a watcher falls too far behind).
pub(crate) async fn stream(
    start: WatchStart,
    tx: mpsc::Sender<Bytes>,
    mut closer: watch::Receiver<u64>,
    mut bookmarks: watch::Receiver<u64>,
) {
    for l in start.initial {
        if tx.send(l).await.is_err() {
            return;
        }
    }
    let Some((filter, mut rx)) = start.live else { return };
    let mut last_rv = 0;
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Ok(ev) => {
                    last_rv = ev.rv;
                    if let Some(l) = filter.event(&ev)
                        && tx.send(l).await.is_err()
                    {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let _ = tx.send(expired_line(last_rv, last_rv + 1)).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            changed = closer.changed() => {
                let _ = changed;
                return;
            }
            changed = bookmarks.changed() => {
                if changed.is_err() {
                    return;
                }
                let rv = *bookmarks.borrow_and_update();
                if filter.bookmarks && tx.send(filter.bookmark(rv)).await.is_err() {
                    return;
                }
            }
        }
    }
}
