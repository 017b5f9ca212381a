//! The apiserver's answers, read from their bytes straight into the views: the live
//! counterpart of [`crate::dump`], and the only decode on the client's read path.
//!
//! A single object (a get, a watch event) names its `kind`, so it reads as a [`View`]
//! directly. A list's items carry no `kind` (the apiserver puts it on the list alone,
//! as `TrainJobList`), so [`read_list`] is told the kind its items are. A list read with
//! `as=PartialObjectMetadataList` reads the same way: its views carry metadata only.
//! Leniency is the dump's: a malformed field reads as absent. Only bytes that are not
//! JSON fail, with serde's error, which the client classifies as any unreadable answer.

use std::sync::LazyLock;

use serde::Deserialize;
use serde::de::Deserializer;

use crate::lenient::{FromJson, List, Obj, Text};
use crate::object::{Meta, RawObject, ViewKind};
use crate::view::View;

/// One list answer: its items as views, and the list's resource version.
#[derive(Clone, Debug, Default)]
pub struct Listed {
    /// The items, in the answer's order.
    pub items: Vec<View>,
    /// `metadata.resourceVersion`: where a watch of the same collection starts.
    pub resource_version: String,
    /// `metadata.continue`: where the next page starts; empty on the last page.
    pub continue_token: String,
}

/// Reads a list answer whose items are of `kind`.
pub fn read_list(kind: &str, bytes: &[u8]) -> serde_json::Result<Listed> {
    let list: ListAnswer = from_bytes(bytes)?;
    let items = list
        .items
        .0
        .into_iter()
        .map(|mut raw| {
            raw.kind = ViewKind::of(kind);
            View::from(raw)
        })
        .collect();
    let metadata = list.metadata.0.unwrap_or_default();
    let resource_version = metadata.resource_version.0.unwrap_or_default();
    let continue_token = metadata.continue_.0.unwrap_or_default();
    Ok(Listed { items, resource_version, continue_token })
}

/// Reads an answer that is one object, which names its own kind.
pub fn read_object(bytes: &[u8]) -> serde_json::Result<View> {
    from_bytes(bytes)
}

/// Reads `bytes` as text when they are UTF-8, checked once (serde_json then checks no
/// string of them again, which reading bytes does string by string), else as bytes:
/// what is read, and what is refused, is what `serde_json::from_slice` reads.
fn from_bytes<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// A list, as far as it is read.
#[derive(Default, Deserialize)]
#[serde(default)]
struct ListAnswer {
    metadata: Obj<ListMeta>,
    items: List<RawObject>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ListMeta {
    resource_version: Text,
    #[serde(rename = "continue")]
    continue_: Text,
}

/// One object of a collection, read before its kind is settled: an item of a list
/// (which names no kind) and a watch event's object read alike, and become a view of
/// the collection's kind ([`Item::into_view`]). What a reader that decodes each object
/// on its own (kube-runtime's watcher) is given to hold.
#[derive(Clone, Debug, Default)]
pub struct Item(RawObject);

impl Item {
    /// The object's metadata.
    pub fn meta(&self) -> &Meta {
        self.0.metadata.0.as_ref().unwrap_or(&EMPTY_META)
    }

    /// The object as a view: of the kind it names, else of `kind`, the collection's.
    /// A metadata-only object (`PartialObjectMetadata`) names its own kind, so it reads
    /// as [`View::Other`]: metadata, nothing a rule could mistake for a state.
    pub fn into_view(mut self, kind: &str) -> View {
        if self.0.kind == ViewKind::Absent {
            self.0.kind = ViewKind::of(kind);
        }
        View::from(self.0)
    }
}

/// The metadata of an object that has none.
static EMPTY_META: LazyLock<Meta> = LazyLock::new(Meta::default);

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Obj(raw) = Obj::<RawObject>::deserialize(d)?;
        Ok(Item(raw.unwrap_or_default()))
    }
}

/// An object that names its kind reads as its view: what a get or a watch event
/// answers. Anything not an object reads as [`View::Other`] without metadata.
impl<'de, S: FromJson> Deserialize<'de> for View<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Obj(raw) = Obj::<RawObject<S>>::deserialize(d)?;
        Ok(View::from(raw.unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lists_items_take_the_kind_they_are_listed_as() {
        let bytes = br#"{"kind": "PodList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "42"},
            "items": [{"metadata": {"name": "p", "resourceVersion": "41"},
                       "spec": {"nodeName": "n"}}, 7]}"#;
        let listed = read_list("Pod", bytes).unwrap();
        assert_eq!(listed.resource_version, "42");
        let [View::Pod(pod)] = listed.items.as_slice() else { panic!("{listed:?}") };
        assert_eq!((pod.meta.name(), pod.node_name.or_empty()), ("p", "n"));
        assert_eq!(pod.meta.resource_version.or_empty(), "41");
    }

    #[test]
    fn malformed_fields_read_as_absent_and_only_non_json_fails() {
        let listed = read_list("TrainJob", br#"{"metadata": 1, "items": {"a": 1}}"#).unwrap();
        assert!(listed.items.is_empty() && listed.resource_version.is_empty());
        assert!(read_list("TrainJob", b"{oops").is_err());
        assert!(matches!(read_object(b"[1]"), Ok(View::Other(m)) if m.name().is_empty()));
        let node = read_object(br#"{"kind": "Node", "metadata": {"name": "n"}}"#).unwrap();
        assert!(matches!(node, View::Node(n) if n.meta.name() == "n"));
    }
}
