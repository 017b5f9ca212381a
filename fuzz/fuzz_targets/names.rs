//! Fuzz target `names`: object references and the readers of names.
//!
//! The input is read as text by `names::parse`, `names::parse_prefix` and
//! `JobId::parse`, and as JSON by `ObjectRef`'s deserializer. Invariants: nothing
//! panics; whatever `names::parse` accepts, `names::make` writes back to the same name
//! (a valid RFC 1035 label of at most `names::MAX_LEN` characters); whatever
//! `parse_prefix` accepts is that name followed by `-`; a `JobId` `parse` accepts is the
//! text it was given and round-trips through `make` and `parse` with any submission in
//! range; an `ObjectRef` read serializes back to one that reads equal. The first 24 bytes
//! also make a `JobId` from its parts (time and randomness) for the same round trip.

#![no_main]

use dispatch_core::{JobId, ObjectRef};
use dispatch_kf_model::names;
use libfuzzer_sys::fuzz_target;

/// `make` then `parse` gives back `job` and `submission`, and the name is a valid label.
fn round_trip(job: &JobId, submission: u32) {
    let name = names::make(job, submission);
    assert!(name.len() <= names::MAX_LEN, "{name} is longer than MAX_LEN");
    assert!(names::is_rfc1035_label(&name), "{name} is not an RFC 1035 label");
    assert_eq!(names::parse(&name), Some((job.clone(), submission)), "{name}");
    assert!(names::is_of_job(job, &name, None));
}

/// A submission in 1 to `MAX_SUBMISSION` from four bytes.
fn submission(bytes: [u8; 4]) -> u32 {
    1 + u32::from_le_bytes(bytes) % names::MAX_SUBMISSION
}

fuzz_target!(|bytes: &[u8]| {
    if let Some(parts) = bytes.get(..24) {
        let millis = u64::from_le_bytes(parts[..8].try_into().expect("8 bytes"));
        let random = u128::from_le_bytes(parts[8..24].try_into().expect("16 bytes"));
        let job = JobId::from_parts(millis, random);
        assert_eq!(JobId::parse(job.as_str()).as_ref().ok(), Some(&job));
        round_trip(&job, submission(parts[..4].try_into().expect("4 bytes")));
    }
    if let Ok(reference) = serde_json::from_slice::<ObjectRef>(bytes) {
        let text = serde_json::to_string(&reference).expect("an ObjectRef serializes");
        let again: ObjectRef = serde_json::from_str(&text).expect("its own JSON reads back");
        assert_eq!(again, reference);
    }
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Some((job, submission)) = names::parse(text) {
        assert_eq!(names::make(&job, submission), text, "parse accepted what make never writes");
        round_trip(&job, submission);
    }
    if let Some((job, submission)) = names::parse_prefix(text) {
        let name = names::make(&job, submission);
        let rest = text.strip_prefix(&name).expect("parse_prefix's name begins the text");
        assert!(rest.starts_with('-'), "{text}: {name} is not followed by -");
    }
    if let Ok(job) = JobId::parse(text) {
        assert_eq!(job.as_str(), text);
        let n = bytes.iter().fold(0u32, |n, b| n.wrapping_mul(31).wrapping_add(u32::from(*b)));
        round_trip(&job, 1 + n % names::MAX_SUBMISSION);
    }
    let _ = names::parse_canonical_decimal(text);
});
