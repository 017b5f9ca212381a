//! Reading `kubectl get ... -o json` output into a [`Snapshot`].
//!
//! A file holds a `List` (`kind` ending in `List`, with `items`) or one object. Items of
//! kinds classification does not read are skipped, as are items that are not objects.
//! A `List` may carry a top-level `capturedPods` array beside `items`: the last state of
//! deleted pods, as a Watch would have captured them (kubectl never prints it; fixtures
//! and tools use it to stand for the Backend's captured evidence). Several files merge
//! into one snapshot, in the order given; objects are not deduplicated.
//!
//! The bytes are read straight into the lenient views ([`crate::object`]), never into a
//! `serde_json::Value`. [`read`] copies the text it keeps; [`borrow`] keeps it as slices
//! of the caller's bytes (a string with escapes being the only copy), for a caller that
//! holds the whole input anyway (`dispatch-kf classify`).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use dispatch_core::Error;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::lenient::{FromJson, Obj, Str, Text, absent_for};
use crate::object::{Meta, RawObject, RawSpec, RawStatus};
use crate::snapshot::Snapshot;
use crate::view::View;

/// The top of one file: a List, or one object.
#[derive(Deserialize)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "S: FromJson<'de>"))]
struct Top<S: Str> {
    api_version: Text<S>,
    kind: Text<S>,
    metadata: Obj<Meta<S>>,
    spec: Obj<RawSpec<S>>,
    status: Obj<RawStatus<S>>,
    items: Option<Items<S>>,
    captured_pods: Items<S>,
}

impl<S: Str> Default for Top<S> {
    fn default() -> Self {
        Top {
            api_version: Text::default(),
            kind: Text::default(),
            metadata: Obj::default(),
            spec: Obj::default(),
            status: Obj::default(),
            items: None,
            captured_pods: Items::default(),
        }
    }
}

/// A List's items, each split into its view and pushed into a snapshot as it is read,
/// so no list of raw objects is ever held; elements that are not objects are skipped.
struct Items<S>(Snapshot<S>);

impl<S> Default for Items<S> {
    fn default() -> Self {
        Items(Snapshot::default())
    }
}

struct ItemsVisitor<S>(PhantomData<S>);

impl<'de, S: FromJson<'de>> Visitor<'de> for ItemsVisitor<S> {
    type Value = Items<S>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items<S>, A::Error> {
        let mut snapshot = Snapshot::default();
        while let Some(Obj(item)) = seq.next_element::<Obj<RawObject<S>>>()? {
            if let Some(item) = item {
                snapshot.push(View::from(item));
            }
        }
        Ok(Items(snapshot))
    }
    absent_for!(scalars);
    absent_for!(map);
}

impl<'de, S: FromJson<'de>> Deserialize<'de> for Items<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ItemsVisitor(PhantomData))
    }
}

/// Reads one file's bytes; `file` names it in errors.
///
/// A file that is not JSON, or whose JSON is not a Kubernetes object or List, is
/// `Invalid`, naming the file and the line and column.
pub fn read(file: &str, bytes: &[u8]) -> Result<Snapshot, Error> {
    read_as(file, bytes)
}

/// Reads one file's bytes as [`read`] does, keeping the text as slices of `bytes`.
pub fn borrow<'a>(file: &str, bytes: &'a [u8]) -> Result<Snapshot<Cow<'a, str>>, Error> {
    read_as(file, bytes)
}

fn read_as<'a, S: FromJson<'a>>(file: &str, bytes: &'a [u8]) -> Result<Snapshot<S>, Error> {
    let top = match serde_json::from_slice::<Obj<Top<S>>>(bytes) {
        Ok(top) => top.0,
        Err(e) => return Err(not_json(file, &e)),
    };
    let Some(top) = top else {
        return Err(not_kubernetes(file, bytes, "the document is not a JSON object"));
    };
    let Some(kind) = top.kind.get() else {
        return Err(not_kubernetes(file, bytes, "it has no string \"kind\""));
    };
    let mut snapshot = Snapshot::default();
    if kind.ends_with("List") {
        snapshot = top.items.map(|i| i.0).unwrap_or_default();
    } else if top.api_version.get().is_none() {
        return Err(not_kubernetes(file, bytes, "it has no string \"apiVersion\""));
    } else {
        let raw = RawObject {
            api_version: top.api_version,
            kind: top.kind,
            metadata: top.metadata,
            spec: top.spec,
            status: top.status,
        };
        snapshot.push(View::from(raw));
    }
    snapshot.captured_pods.extend(top.captured_pods.0.pods);
    Ok(snapshot)
}

/// Reads several files into one snapshot, in order.
pub fn read_all<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Snapshot, Error> {
    read_all_as(files)
}

/// Reads several files into one snapshot, in order, as [`borrow`] does.
pub fn borrow_all<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Snapshot<Cow<'a, str>>, Error> {
    read_all_as(files)
}

fn read_all_as<'a, S: FromJson<'a>>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Snapshot<S>, Error> {
    let mut snapshot: Option<Snapshot<S>> = None;
    for (file, bytes) in files {
        let more = read_as(file, bytes)?;
        match &mut snapshot {
            None => snapshot = Some(more),
            Some(s) => s.extend(more),
        }
    }
    Ok(snapshot.unwrap_or_default())
}

fn not_json(file: &str, e: &serde_json::Error) -> Error {
    let text = e.to_string();
    let what = text.split(" at line ").next().unwrap_or(&text);
    Error::invalid(format!(
        "{file} is not JSON: {what} at line {}, column {}: give kubectl's -o json output",
        e.line(),
        e.column()
    ))
}

fn not_kubernetes(file: &str, bytes: &[u8], why: &str) -> Error {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(0);
    let line = 1 + bytes[..start].iter().filter(|&&b| b == b'\n').count();
    let column = 1 + start - bytes[..start].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    Error::invalid(format!(
        "{file} is not a Kubernetes object or List at line {line}, column {column}: {why}"
    ))
}

/// Refinement R6 (`docs/classification.md#refinements-from-real-clusters`): whether an
/// offline input is classified as if Nodes could be read, when the user did not say.
/// `kubectl get trainjobs,jobsets,pods -o json` leaves Nodes out, and every pod of it
/// would be bound to a Node that "is gone": an input that holds no Node at all is read
/// as without permission to read Nodes. `dispatch-kf classify --nodes-readable` says
/// otherwise.
pub fn nodes_readable_by_default<S>(snapshot: &Snapshot<S>) -> bool {
    !snapshot.nodes.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::Kind;

    #[test]
    fn a_file_that_is_not_json_is_invalid_naming_file_and_position() {
        let err = read("dump.json", b"{\n  \"kind\": \"List\",\n  oops\n}").unwrap_err();
        assert!(err.is(Kind::Invalid));
        assert!(err.message().starts_with("dump.json is not JSON: "), "{}", err.message());
        assert!(err.message().contains("line 3, column 3"), "{}", err.message());
    }

    #[test]
    fn json_that_is_not_a_kubernetes_object_is_invalid_naming_file_and_position() {
        for (bytes, why) in [
            (&b"\n  [1, 2]"[..], "line 2, column 3: the document is not a JSON object"),
            (b"{\"a\": 1}", "line 1, column 1: it has no string \"kind\""),
            (b"{\"kind\": \"Pod\"}", "it has no string \"apiVersion\""),
            (b"\"text\"", "not a JSON object"),
        ] {
            let err = read("x.json", bytes).unwrap_err();
            assert!(err.is(Kind::Invalid));
            assert!(err.message().starts_with("x.json is not a Kubernetes object or List"));
            assert!(err.message().contains(why), "{}", err.message());
        }
    }

    #[test]
    fn a_single_object_and_a_list_both_read() {
        let one = read("a", br#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}"#);
        assert_eq!(one.unwrap().pods.len(), 1);
        let list = read(
            "b",
            br#"{"apiVersion": "v1", "items": [{"kind": "Node"}, 7, {"kind": "Secret"}], "kind": "List",
                "capturedPods": [{"kind": "Pod"}, {"kind": "Node"}]}"#,
        )
        .unwrap();
        assert_eq!((list.nodes.len(), list.captured_pods.len()), (1, 1));
    }

    #[test]
    fn borrowed_text_is_a_slice_of_the_input_unless_it_has_escapes() {
        let bytes = br#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-0",
            "namespace": "a\u002db", "labels": {"jobset.sigs.k8s.io/jobset-name": "j\"s"}}}"#;
        let borrowed = borrow("a", bytes).unwrap();
        let meta = &borrowed.pods[0].meta;
        assert!(matches!(meta.name.0, Some(Cow::Borrowed("p-0"))));
        assert!(matches!(&meta.namespace.0, Some(Cow::Owned(ns)) if ns == "a-b"));
        assert_eq!(meta.label(crate::keys::JOBSET_NAME), Some("j\"s"));
        let copied = read("a", bytes).unwrap();
        assert_eq!(copied.pods[0].meta.namespace(), "a-b");
        assert_eq!(copied.pods[0].meta.label(crate::keys::JOBSET_NAME), Some("j\"s"));
    }

    #[test]
    fn an_input_without_a_node_is_read_as_without_permission_to_read_nodes() {
        let pods = read("a", br#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}"#);
        assert!(!nodes_readable_by_default(&pods.unwrap()));
        let node = read("b", br#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}"#);
        assert!(nodes_readable_by_default(&node.unwrap()));
    }
}
