//! Watches of one kind, on kube-runtime's watcher: a list, then the changes from the
//! list's resource version, for as long as the stream is held.
//!
//! The watcher owns the mechanics: it pages the list, asks for bookmarks and for
//! `timeoutSeconds` ([`Cluster::watch_timeout`]) so no connection lives long enough to
//! rot, gives a connection up when it is silent past that, resumes from the last
//! resource version it saw, and lists anew after a 410, backing off between failures.
//! What this module adds is the model's reading of each object (the lenient views,
//! decoded once, from the answer's bytes) and an end: a watch whose attempts keep
//! failing ends with an error instead of retrying forever, so an apiserver that stays
//! unreachable is told apart from a quiet one.

use std::borrow::Cow;
use std::time::Duration;

use dispatch_core::{Error, Result};
use dispatch_kf_model::internal::answer::Item;
use dispatch_kf_model::view::View;
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource};
use kube::core::DynamicResourceScope;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::{Deserialize, Deserializer};

use crate::cluster::classify;
use crate::error_map::RequestClass;
use crate::objects::Objects;

/// One change seen by a watch.
#[derive(Clone, Debug)]
pub enum Change {
    /// The watch listed the collection whole: every object it holds now. A watch's
    /// first change, and again whenever it lost its place (a 410) and listed anew, in
    /// which case changes in between were missed: read everything again.
    Listed(Vec<View>),
    /// An object was added or modified: what classification reads of its new state.
    Applied(View),
    /// An object was deleted: what classification reads of its last state.
    Deleted(View),
}

/// How many attempts in a row (a list, a watch's opening, a connection) may fail before
/// the watch ends with an error. Failures count as in a row when no change came between
/// them and each came within the longest one attempt and its backoff can take (the watch
/// timeout, the request timeout and 30 s) of the one before: further apart, the watch
/// must have worked between them.
pub const DEAD_WATCHES: u32 = 3;

/// The longest kube-runtime's default backoff waits between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A stream of changes, or of the one error that ends it.
pub type Changes = BoxStream<'static, Result<Change>>;

impl Objects<'_> {
    /// Watches the objects matching `selector`, whole: the first change is
    /// [`Change::Listed`], then each change. A stream of [`DEAD_WATCHES`] failed
    /// attempts in a row yields one error (`Unreachable`, or the sentinel the last
    /// failure's answer maps to, such as `Unauthorized` for a 403) and ends. It ends
    /// cleanly only when dropped.
    pub fn watch(&self, selector: &str) -> Changes {
        self.watching::<false>(selector)
    }

    /// [`Objects::watch`], asking only for metadata (`as=PartialObjectMetadata`): each
    /// view is a [`View::Other`] with the object's name, UID and labels.
    pub fn watch_metadata(&self, selector: &str) -> Changes {
        self.watching::<true>(selector)
    }

    fn watching<const METADATA: bool>(&self, selector: &str) -> Changes {
        let cluster = self.cluster();
        let resource = self.resource.api_resource();
        let client = cluster.watching_client();
        let api: Api<Watched<METADATA>> = match &self.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &resource),
            None => Api::all_with(client, &resource),
        };
        let timeout = u32::try_from(cluster.watch_timeout().as_secs()).unwrap_or(290).max(1);
        let config = watcher::Config::default().labels(selector).timeout(timeout);
        let verb = if METADATA { "watch metadata of" } else { "watch" };
        let fold = Fold {
            events: watcher::watcher(api, config).default_backoff().boxed(),
            kind: self.resource.kind,
            what: self.what(verb, &format!("-l {selector:?}")),
            patience: cluster.watch_timeout() + cluster.request_timeout() + MAX_BACKOFF,
            listing: Vec::new(),
            failures: 0,
            last_failure: None,
            ended: false,
        };
        futures::stream::unfold(fold, |mut fold| async move {
            let change = fold.next().await?;
            Some((change, fold))
        })
        .boxed()
    }
}

/// kube-runtime's watcher, with its events folded into [`Change`]s.
struct Fold<const METADATA: bool> {
    events: BoxStream<'static, watcher::Result<Event<Watched<METADATA>>>>,
    /// The collection's kind: what a listed item that names none is read as.
    kind: &'static str,
    /// `watch Pod training` with its selector, for messages.
    what: String,
    /// Failures further apart than this are not counted as in a row.
    patience: Duration,
    /// The objects of a list under way.
    listing: Vec<View>,
    /// Failed attempts in a row.
    failures: u32,
    last_failure: Option<tokio::time::Instant>,
    ended: bool,
}

impl<const METADATA: bool> Fold<METADATA> {
    /// The next change, the error that ends the watch, or `None` once it ended.
    async fn next(&mut self) -> Option<Result<Change>> {
        if self.ended {
            return None;
        }
        loop {
            let event = match self.events.next().await {
                Some(Ok(event)) => event,
                Some(Err(e)) => match self.failed(e) {
                    Some(end) => {
                        self.ended = true;
                        return Some(Err(end));
                    }
                    None => continue,
                },
                None => return None,
            };
            let kind = self.kind;
            let view = |w: Watched<METADATA>| w.item.into_view(kind);
            match event {
                Event::Init => self.listing.clear(),
                Event::InitApply(o) => self.listing.push(view(o)),
                Event::InitDone => {
                    self.failures = 0;
                    return Some(Ok(Change::Listed(std::mem::take(&mut self.listing))));
                }
                Event::Apply(o) => {
                    self.failures = 0;
                    return Some(Ok(Change::Applied(view(o))));
                }
                Event::Delete(o) => {
                    self.failures = 0;
                    return Some(Ok(Change::Deleted(view(o))));
                }
            }
        }
    }

    /// Counts a failed attempt; the error that ends the watch once they are too many
    /// in a row.
    fn failed(&mut self, error: watcher::Error) -> Option<Error> {
        let now = tokio::time::Instant::now();
        if self.last_failure.is_some_and(|at| now.duration_since(at) > self.patience) {
            self.failures = 0;
        }
        self.last_failure = Some(now);
        self.failures += 1;
        if self.failures < DEAD_WATCHES {
            return None;
        }
        let head = format!("{}: {DEAD_WATCHES} attempts in a row failed", self.what);
        Some(match error {
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => classify(RequestClass::Read, &head, e).error,
            other => Error::unreachable(format!("{head}: {other}")),
        })
    }
}

/// An object as kube-runtime's watcher holds it: the model's [`Item`], and the metadata
/// the watcher keeps its place by (the resource version) and names it by. `METADATA`
/// makes kube ask for the metadata-only form (`as=PartialObjectMetadata`).
#[derive(Clone, Debug)]
struct Watched<const METADATA: bool> {
    item: Item,
    meta: ObjectMeta,
}

impl<'de, const METADATA: bool> Deserialize<'de> for Watched<METADATA> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let item = Item::deserialize(d)?;
        let of = |text: &dispatch_kf_model::view::Text| text.get().map(str::to_owned);
        let m = item.meta();
        let meta = ObjectMeta {
            name: of(&m.name),
            namespace: of(&m.namespace),
            uid: of(&m.uid),
            resource_version: of(&m.resource_version),
            ..ObjectMeta::default()
        };
        Ok(Watched { item, meta })
    }
}

impl<const METADATA: bool> kube::Resource for Watched<METADATA> {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn metadata_api() -> bool {
        METADATA
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}
