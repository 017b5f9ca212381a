//! The lenient reading layer: field types that never fail on a wrong shape.
//!
//! Every field classification reads may be missing, `null` or of the wrong shape. Each
//! wrapper here deserializes through `deserialize_any` and keeps what fits: a string
//! field that holds a number is absent, an object field that holds a list is skipped
//! (drained with [`IgnoredAny`], without allocating), and a list keeps the elements that
//! are objects. View structs declare only the fields they read, so serde skips the
//! rest of each object without building it.
//!
//! The text a view keeps is of a type `S` ([`Str`]): `String`, a copy of its own (the
//! live path, whose views a Watch may keep), or [`Shared`], one copy for every view of a
//! dump that holds the same string ([`crate::dump::Reader`]). The leniency is the same
//! for both: one visitor serves each ([`FromJson`]).

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use smallvec::SmallVec;

/// Visitor methods that answer "absent" for every scalar and drain lists and maps.
macro_rules! absent_for {
    (scalars) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (map) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
    (seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

pub(crate) use absent_for;

mod shared;
mod str_map;

pub(crate) use shared::Interner;
pub use shared::Shared;
pub use str_map::StrMap;

/// The text a view keeps: what classification reads of it is a `&str`.
pub trait Str: AsRef<str> + Clone + fmt::Debug + Default {}

impl Str for String {}

/// How a JSON string, as the reader read it, becomes a [`Str`].
pub trait FromJson: Str {
    /// The text of the string (escapes undone).
    fn from_json(s: &str) -> Self;

    /// The text of a string that stands once in its input (an object's own name and
    /// UID): one that text shared among views need not look for among the
    /// strings read before.
    fn from_json_once(s: &str) -> Self {
        Self::from_json(s)
    }
}

impl FromJson for String {
    fn from_json(s: &str) -> Self {
        s.to_owned()
    }
}

/// A string field: absent unless the value is a JSON string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Text<S = String>(pub Option<S>);

impl<S: Str> Text<S> {
    /// The string, when the field held one.
    pub fn get(&self) -> Option<&str> {
        self.0.as_ref().map(S::as_ref)
    }

    /// The string, or `""` when absent.
    pub fn or_empty(&self) -> &str {
        self.get().unwrap_or("")
    }
}

/// A scalar field (`Text`, `Flag`, `Int`) read through one visitor.
struct ScalarVisitor<T>(PhantomData<T>);

/// What a scalar visitor keeps of one JSON value.
trait Scalar: Default {
    fn from_str(_: &str) -> Self {
        Self::default()
    }
    fn from_bool(_: bool) -> Self {
        Self::default()
    }
    fn from_i64(_: i64) -> Self {
        Self::default()
    }
}

impl<S: FromJson> Scalar for Text<S> {
    fn from_str(s: &str) -> Self {
        Text(Some(S::from_json(s)))
    }
}

impl<'de, T: Scalar> Visitor<'de> for ScalarVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<T, E> {
        Ok(T::from_bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<T, E> {
        Ok(T::from_i64(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<T, E> {
        Ok(i64::try_from(v).map(T::from_i64).unwrap_or_default())
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        Ok(T::from_str(v))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
    absent_for!(map);
    absent_for!(seq);
}

impl<'de, S: FromJson> Deserialize<'de> for Text<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor(PhantomData))
    }
}

/// A string field whose value stands once in its input, read as a [`Text`] is
/// ([`FromJson::from_json_once`]): `#[serde(deserialize_with = "unique")]`.
pub(crate) fn unique<'de, D: Deserializer<'de>, S: FromJson>(d: D) -> Result<Text<S>, D::Error> {
    struct Once<S>(Text<S>);
    impl<S> Default for Once<S> {
        fn default() -> Self {
            Once(Text(None))
        }
    }
    impl<S: FromJson> Scalar for Once<S> {
        fn from_str(s: &str) -> Self {
            Once(Text(Some(S::from_json_once(s))))
        }
    }
    d.deserialize_any(ScalarVisitor::<Once<S>>(PhantomData)).map(|once| once.0)
}

/// A boolean field: absent unless the value is `true` or `false`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flag(pub Option<bool>);

impl Flag {
    /// Whether the field is present and `true`.
    pub fn is_true(self) -> bool {
        self.0 == Some(true)
    }
}

impl Scalar for Flag {
    fn from_bool(v: bool) -> Self {
        Flag(Some(v))
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor(PhantomData))
    }
}

/// An integer field: absent unless the value is a JSON integer that fits an `i64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Int(pub Option<i64>);

impl Scalar for Int {
    fn from_i64(v: i64) -> Self {
        Int(Some(v))
    }
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor(PhantomData))
    }
}

/// A field that matters only by being there, whatever its value (managedFields' `f:`
/// entries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Present(pub bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// An object field: `Some` when the value is a JSON object, read as `T` (a view struct
/// whose own fields are lenient); anything else is absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<T> Obj<T> {
    /// The object, when the field held one.
    pub fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

struct ObjVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
    type Value = Obj<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
    }
    absent_for!(scalars);
    absent_for!(seq);
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjVisitor(PhantomData))
    }
}

/// A list of objects: keeps the elements that are JSON objects; a value that is not a
/// list is an empty list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Box<[T]>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Box::new([]))
    }
}

struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = List<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
        // Gathered on the stack, then moved into one allocation of the list's size:
        // the list is held for the whole classification, and most hold a few elements.
        let mut out = SmallVec::<[T; 8]>::new();
        while let Some(Obj(item)) = seq.next_element::<Obj<T>>()? {
            out.extend(item);
        }
        Ok(List(exact(&mut out).into_boxed_slice()))
    }
    absent_for!(scalars);
    absent_for!(map);
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListVisitor(PhantomData))
    }
}

/// The elements of `items`, moved into a vector of their number (`collect` would make
/// room for four).
pub(crate) fn exact<A: smallvec::Array>(items: &mut SmallVec<A>) -> Vec<A::Item> {
    let mut out = Vec::with_capacity(items.len());
    out.extend(items.drain(..));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Default, Debug)]
    #[serde(default)]
    struct Probe {
        s: Text,
        b: Flag,
        i: Int,
        o: Obj<Inner>,
        l: List<Inner>,
        m: StrMap,
    }

    #[derive(serde::Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Inner {
        x: Text,
    }

    #[test]
    fn wrong_shapes_are_absent_and_lists_keep_what_fits() {
        let p: Obj<Probe> = serde_json::from_str(
            r#"{"s": 1, "b": "yes", "i": "3", "o": [1, {"x": 2}], "l": [1, {"x": "a"}, null, [], {"x": {}}],
               "m": {"dispatch.phpboyscout.uk/job-id": "1", "dispatch.phpboyscout.uk/submission": 2,
                     "jobset.sigs.k8s.io/jobset-name": null, "unread": "x"},
               "extra": {"deep": [1, 2, {"z": null}]}}"#,
        )
        .unwrap();
        let p = p.0.unwrap();
        assert_eq!(p.s.get(), None);
        assert_eq!(p.b.0, None);
        assert_eq!(p.i.0, None);
        assert!(p.o.get().is_none());
        assert_eq!(p.l.0.len(), 2);
        assert_eq!(p.l.0[0].x.get(), Some("a"));
        assert_eq!(p.l.0[1].x.get(), None);
        assert_eq!(p.m.len(), 1);
        assert_eq!(p.m.get("dispatch.phpboyscout.uk/job-id"), Some("1"));
    }

    #[test]
    fn right_shapes_are_kept() {
        let p: Probe = serde_json::from_str(
            r#"{"s": "v", "b": true, "i": -137, "o": {"x": "y"}, "l": "nope", "m": []}"#,
        )
        .unwrap();
        assert_eq!(p.s.get(), Some("v"));
        assert!(p.b.is_true());
        assert_eq!(p.i.0, Some(-137));
        assert_eq!(p.o.get().and_then(|o| o.x.get()), Some("y"));
        assert!(p.l.0.is_empty() && p.m.is_empty());
    }
}
