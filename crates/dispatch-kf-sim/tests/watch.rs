//! Watches through the real client: ADDED/MODIFIED/DELETED from a resourceVersion,
//! BOOKMARK when asked, selector transitions, metadata-only watches, and 410 Expired as
//! an ERROR event inside a 200 stream when the resourceVersion is older than the window.

mod common;

use std::time::Duration;

use common::*;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

/// The next event; a stream that stays silent is a failure (a guard, not a timing).
async fn next<T>(
    s: &mut (impl Stream<Item = kube::Result<WatchEvent<T>>> + Unpin),
) -> WatchEvent<T> {
    tokio::time::timeout(Duration::from_secs(20), s.next())
        .await
        .expect("the watch delivers the event")
        .expect("the stream is open")
        .expect("the event decodes")
}

/// Watch parameters without bookmarks (kube asks for them by default).
fn plain() -> WatchParams {
    WatchParams { bookmarks: false, ..Default::default() }
}

fn kind<T>(e: &WatchEvent<T>) -> &'static str {
    match e {
        WatchEvent::Added(_) => "ADDED",
        WatchEvent::Modified(_) => "MODIFIED",
        WatchEvent::Deleted(_) => "DELETED",
        WatchEvent::Bookmark(_) => "BOOKMARK",
        WatchEvent::Error(_) => "ERROR",
    }
}

async fn cm(api: &Api<ConfigMap>, name: &str, labels: serde_json::Value) {
    let c = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    api.create(&PostParams::default(), &c).await.unwrap();
}

#[tokio::test]
async fn watch_from_a_resource_version_sees_added_modified_deleted() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let rv = sim.resource_version().to_string();
    cm(&api, "a", json!({})).await;
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v"}})))
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let mut s = api.watch(&plain(), &rv).await.unwrap().boxed();
    assert_eq!(kind(&next(&mut s).await), "ADDED");
    assert_eq!(kind(&next(&mut s).await), "MODIFIED");
    assert_eq!(kind(&next(&mut s).await), "DELETED");
    cm(&api, "b", json!({})).await;
    let WatchEvent::Added(b) = next(&mut s).await else { panic!("expected ADDED for b") };
    assert_eq!(b.metadata.name.as_deref(), Some("b"));
}

#[tokio::test]
async fn bookmarks_come_only_when_asked() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let rv = sim.resource_version().to_string();
    let mut s = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let WatchEvent::Bookmark(b) = next(&mut s).await else { panic!("expected a BOOKMARK") };
    assert_eq!(b.metadata.resource_version, rv);
    cm(&api, "a", json!({})).await;
    sim.send_bookmarks();
    assert_eq!(kind(&next(&mut s).await), "ADDED");
    assert_eq!(kind(&next(&mut s).await), "BOOKMARK");
    let mut quiet = api.watch(&plain(), &rv).await.unwrap().boxed();
    assert_eq!(kind(&next(&mut quiet).await), "ADDED");
}

#[tokio::test]
async fn an_object_leaving_the_selector_is_deleted_for_the_watcher() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let rv = sim.resource_version().to_string();
    cm(&api, "a", json!({"team": "x"})).await;
    cm(&api, "other", json!({"team": "y"})).await;
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "z"}}})),
    )
    .await
    .unwrap();
    let mut s = api.watch(&plain().labels("team=x"), &rv).await.unwrap().boxed();
    assert_eq!(kind(&next(&mut s).await), "ADDED");
    assert_eq!(kind(&next(&mut s).await), "DELETED");
}

#[tokio::test]
async fn a_watch_from_before_the_kept_window_gets_410_expired_in_a_200_stream() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let old = sim.resource_version().to_string();
    cm(&api, "a", json!({})).await;
    sim.compact();
    let mut s = api.watch(&plain(), &old).await.unwrap().boxed();
    let WatchEvent::Error(status) = next(&mut s).await else { panic!("expected an ERROR event") };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(status.message.starts_with("too old resource version"), "{}", status.message);
}

#[tokio::test]
async fn watch_metadata_streams_partial_objects() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&sim).await);
    let rv = sim.resource_version().to_string();
    cm(&api, "a", json!({"team": "x"})).await;
    let mut s = api.watch_metadata(&plain(), &rv).await.unwrap().boxed();
    let WatchEvent::Added(m) = next(&mut s).await else { panic!("expected ADDED") };
    assert_eq!(m.metadata.name.as_deref(), Some("a"));
}
