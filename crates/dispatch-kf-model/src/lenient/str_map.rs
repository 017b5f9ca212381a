//! [`StrMap`]: labels and annotations, of which only the keys classification reads are
//! kept ([`crate::keys::READ_BY_THE_MODEL`]), with the leniency of every field in
//! [`crate::lenient`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{FromJson, Str, Text};

/// The keys a map keeps, by their place in this list.
const KEPT: [&str; 16] = crate::keys::READ_BY_THE_MODEL;

/// The place of `key` among the [`KEPT`] keys. Lengths first: most keys of a map have
/// none of the kept lengths.
fn place(key: &str) -> Option<usize> {
    KEPT.iter().position(|k| k.len() == key.len() && *k == key)
}

/// A map of strings (labels, annotations) that keeps only the keys classification reads
/// (`keys::READ_BY_THE_MODEL`) and only when their value is a string; a
/// value that is not an object is an empty map. Other entries are skipped unread.
///
/// Which of the kept keys are there is a mask of their places; their values follow in
/// that order, in one allocation of their number (none for a map that keeps nothing).
/// A key given twice keeps its last value, as a JSON object read into a map does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrMap<S = String> {
    kept: u16,
    values: Box<[S]>,
}

impl<S> Default for StrMap<S> {
    fn default() -> Self {
        StrMap { kept: 0, values: Box::new([]) }
    }
}

impl<S: Str> StrMap<S> {
    /// The value under `key`, when there is a string one.
    pub fn get(&self, key: &str) -> Option<&str> {
        let bit = 1u16 << place(key)?;
        let before = (self.kept & (bit - 1)).count_ones() as usize;
        (self.kept & bit != 0).then(|| self.values[before].as_ref())
    }

    /// How many keys the map keeps.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the map keeps no key.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// A map key: its place among the kept keys, if it is one.
struct KeptKey(Option<usize>);

struct KeptKeyVisitor;

impl<'de> Visitor<'de> for KeptKeyVisitor {
    type Value = KeptKey;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<KeptKey, E> {
        Ok(KeptKey(place(v)))
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
        // Gathered by place on the stack, then moved into one allocation.
        let mut found: [Option<S>; KEPT.len()] = Default::default();
        while let Some(KeptKey(place)) = map.next_key::<KeptKey>()? {
            match place {
                Some(place) => {
                    if let Text(Some(value)) = map.next_value::<Text<S>>()? {
                        found[place] = Some(value);
                    }
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kept = found.iter().rev().fold(0u16, |mask, v| mask << 1 | u16::from(v.is_some()));
        let mut values = Vec::with_capacity(kept.count_ones() as usize);
        values.extend(found.into_iter().flatten());
        Ok(StrMap { kept, values: values.into_boxed_slice() })
    }
    absent_for!(scalars);
    absent_for!(seq);
}

impl<'de, S: FromJson> Deserialize<'de> for StrMap<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrMapVisitor(PhantomData))
    }
}
