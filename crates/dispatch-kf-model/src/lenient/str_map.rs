//! [`StrMap`]: labels and annotations, of which only the keys classification reads are
//! kept ([`crate::keys::READ_BY_CLASSIFICATION`]), with the leniency of every field in
//! [`crate::lenient`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use smallvec::SmallVec;

use super::{FromJson, Str, Text, exact};

/// How many keys a map keeps at most.
const KEPT: usize = crate::keys::READ_BY_CLASSIFICATION.len();

/// A map of strings (labels, annotations) that keeps only the keys classification reads
/// ([`crate::keys::READ_BY_CLASSIFICATION`]) and only when their value is a string; a
/// value that is not an object is an empty map. Other entries are skipped unread.
///
/// The few kept entries sit in a list rather than a tree: an object keeps at most ten,
/// and a tree's node would cost more than all of them. A key given twice keeps its last
/// value, as a JSON object read into a map does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrMap<S = String>(pub Vec<(&'static str, S)>);

impl<S> Default for StrMap<S> {
    fn default() -> Self {
        StrMap(Vec::new())
    }
}

impl<S: Str> StrMap<S> {
    /// The value under `key`, when there is a string one.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_ref())
    }
}

/// A map key: which of the kept keys it is, if any.
struct KeptKey(Option<&'static str>);

struct KeptKeyVisitor;

impl<'de> Visitor<'de> for KeptKeyVisitor {
    type Value = KeptKey;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<KeptKey, E> {
        // Lengths first: most keys of a map are of none of the kept lengths.
        let kept = crate::keys::READ_BY_CLASSIFICATION.iter().copied();
        Ok(KeptKey(kept.filter(|k| k.len() == v.len()).find(|k| *k == v)))
    }
}

impl<'de> Deserialize<'de> for KeptKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeptKeyVisitor)
    }
}

struct StrMapVisitor<S>(PhantomData<S>);

impl<'de, S: FromJson> Visitor<'de> for StrMapVisitor<S> {
    type Value = StrMap<S>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrMap<S>, A::Error> {
        // At most one entry per kept key: gathered on the stack, then moved into one
        // allocation of their number.
        let mut out = SmallVec::<[(&'static str, S); KEPT]>::new();
        while let Some(KeptKey(key)) = map.next_key::<KeptKey>()? {
            match key {
                Some(key) => {
                    if let Text(Some(value)) = map.next_value::<Text<S>>()? {
                        match out.iter_mut().find(|(k, _)| *k == key) {
                            Some(slot) => slot.1 = value,
                            None => out.push((key, value)),
                        }
                    }
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(StrMap(exact(&mut out)))
    }
    absent_for!(scalars);
    absent_for!(seq);
}

impl<'de, S: FromJson> Deserialize<'de> for StrMap<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrMapVisitor(PhantomData))
    }
}
