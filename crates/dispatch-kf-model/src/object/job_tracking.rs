//! [`JobTracking`]: what the model reads of an object's finalizers, where the Job
//! controller's tracking finalizer ([`keys::JOB_TRACKING_FINALIZER`]) stands among
//! them. Read with the leniency of the other fields: a value that is not a list holds
//! no finalizer, and an element that is not a string is no match but keeps its place
//! (a JSON patch names an element by its place).

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::keys;
use crate::lenient::{Text, absent_for};

/// The place of the Job controller's tracking finalizer among `metadata.finalizers`,
/// when the object holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobTracking(Option<usize>);

impl JobTracking {
    /// Its place in the list, when the object holds it.
    pub fn place(self) -> Option<usize> {
        self.0
    }
}

struct JobTrackingVisitor;

impl<'de> Visitor<'de> for JobTrackingVisitor {
    type Value = JobTracking;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JobTracking, A::Error> {
        let mut found = None;
        let mut place = 0;
        while let Some(Text(name)) = seq.next_element::<Text<String>>()? {
            if found.is_none() && name.as_deref() == Some(keys::JOB_TRACKING_FINALIZER) {
                found = Some(place);
            }
            place += 1;
        }
        Ok(JobTracking(found))
    }
    absent_for!(scalars);
    absent_for!(map);
}

impl<'de> Deserialize<'de> for JobTracking {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JobTrackingVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(json: &str) -> Option<usize> {
        serde_json::from_str::<JobTracking>(json).unwrap().place()
    }

    #[test]
    fn the_tracking_finalizer_is_found_at_its_place_and_anything_else_holds_none() {
        let tracking = keys::JOB_TRACKING_FINALIZER;
        assert_eq!(place(&format!(r#"["a", 7, {{}}, "{tracking}", "{tracking}"]"#)), Some(3));
        assert_eq!(place(&format!(r#"["{tracking}"]"#)), Some(0));
        assert_eq!(place(r#"["batch.kubernetes.io/job-tracking-not"]"#), None);
        assert_eq!(place(&format!(r#"{{"0": "{tracking}"}}"#)), None);
        assert_eq!(place(&format!(r#""{tracking}""#)), None);
        assert_eq!(place("null"), None);
    }
}
