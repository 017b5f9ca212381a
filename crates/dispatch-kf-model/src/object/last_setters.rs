//! [`LastSetters`]: what classification reads of an object's managedFields, the field
//! manager that last set `spec.suspend` and the one that last set `spec.active`, kept
//! while the entries are read, so that no list of entries outlives the read.
//!
//! The entries are read as [`ManagedFields`] with the leniency of a
//! [`crate::lenient::List`]: an element that is not an object is skipped, a value that
//! is not a list is no entry. Entries without a time count as oldest; on equal times the
//! later entry wins. Most objects (every pod, JobSet and Node) own neither field, and
//! keep nothing.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{ManagedFields, SpecField};
use crate::lenient::{FromJson, Obj, Str, Text, absent_for};

/// The manager of the latest managedFields entry owning `spec.suspend`, and of the one
/// owning `spec.active`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastSetters<S = String> {
    suspend: Option<Box<Setter<S>>>,
    active: Option<Box<Setter<S>>>,
}

/// One entry that owns a field: who, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Setter<S> {
    manager: Text<S>,
    time: Text<S>,
}

impl<S> Default for LastSetters<S> {
    fn default() -> Self {
        LastSetters { suspend: None, active: None }
    }
}

impl<S: Str> LastSetters<S> {
    /// The manager that last set `spec.<field>`, if an entry owns it and names one.
    pub fn of(&self, field: SpecField) -> Option<&str> {
        let setter = match field {
            SpecField::Suspend => &self.suspend,
            SpecField::Active => &self.active,
        };
        setter.as_ref().and_then(|s| s.manager.get())
    }

    /// Takes the next entry, in the order of the list.
    fn see(&mut self, entry: ManagedFields<S>) {
        let Some(spec) = entry.fields_v1.get().and_then(|f| f.spec.get()) else { return };
        let (suspend, active) = (spec.suspend.0, spec.active.0);
        let setter = Setter { manager: entry.manager, time: entry.time };
        for (owns, slot) in [(suspend, &mut self.suspend), (active, &mut self.active)] {
            if owns && slot.as_ref().is_none_or(|b| setter.time.or_empty() >= b.time.or_empty()) {
                *slot = Some(Box::new(setter.clone()));
            }
        }
    }
}

struct LastSettersVisitor<S>(PhantomData<S>);

impl<'de, S: FromJson> Visitor<'de> for LastSettersVisitor<S> {
    type Value = LastSetters<S>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LastSetters<S>, A::Error> {
        let mut out = LastSetters::default();
        while let Some(Obj(entry)) = seq.next_element::<Obj<ManagedFields<S>>>()? {
            if let Some(entry) = entry {
                out.see(entry);
            }
        }
        Ok(out)
    }
    absent_for!(scalars);
    absent_for!(map);
}

impl<'de, S: FromJson> Deserialize<'de> for LastSetters<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LastSettersVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last(json: &str, field: SpecField) -> Option<String> {
        let setters: LastSetters = serde_json::from_str(json).unwrap();
        setters.of(field).map(str::to_owned)
    }

    #[test]
    fn the_latest_owner_wins_a_later_entry_wins_a_tie_and_no_time_is_oldest() {
        let suspend = r#"{"fieldsV1": {"f:spec": {"f:suspend": {}}}"#;
        let entries = format!(
            r#"[{suspend}, "manager": "a", "time": "2026-01-02T00:00:00Z"}},
                {suspend}, "manager": "b", "time": "2026-01-01T00:00:00Z"}},
                {suspend}, "manager": "c"}},
                7,
                {{"fieldsV1": {{"f:spec": {{"f:active": {{}}}}}}, "manager": "w"}},
                {suspend}, "manager": "d", "time": "2026-01-02T00:00:00Z"}}]"#
        );
        assert_eq!(last(&entries, SpecField::Suspend).as_deref(), Some("d"));
        assert_eq!(last(&entries, SpecField::Active).as_deref(), Some("w"));
        assert_eq!(last(r#"{"not": "a list"}"#, SpecField::Suspend), None);
        assert_eq!(last(r#"[{"manager": "x"}]"#, SpecField::Suspend), None);
    }
}
