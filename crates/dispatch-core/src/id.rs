//! [`JobId`]: a ULID in canonical form.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A job's identity: a ULID in canonical form, 26 characters of Crockford base32 in
/// upper case whose first character is 0 to 7. Anything else is refused, so a `JobId`
/// in hand is always valid.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(String);

/// Crockford's base32 alphabet: digits and upper-case letters without I, L, O and U.
const CROCKFORD: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Whether a byte is one of [`CROCKFORD`]'s, by the byte.
const IS_CROCKFORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < CROCKFORD.len() {
        table[CROCKFORD.as_bytes()[i] as usize] = true;
        i += 1;
    }
    table
};

impl JobId {
    /// The number of characters in a canonical ULID.
    pub const LEN: usize = 26;

    /// Parses a canonical ULID, refusing anything else with `Invalid`.
    pub fn parse(s: &str) -> Result<JobId, Error> {
        Self::check(s).map(|()| JobId(s.to_owned()))
    }

    /// Parses a canonical ULID as [`JobId::parse`] does, keeping the text it is given.
    pub fn parse_owned(s: String) -> Result<JobId, Error> {
        Self::check(&s).map(|()| JobId(s))
    }

    fn check(s: &str) -> Result<(), Error> {
        let valid = s.len() == Self::LEN
            && s.bytes().all(|b| IS_CROCKFORD[usize::from(b)])
            && (b'0'..=b'7').contains(&s.as_bytes()[0]);
        if valid {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "job id {s:?} is not a valid JobID: want a canonical ULID (26 upper-case Crockford base32 characters, the first 0 to 7)"
            )))
        }
    }

    /// The ULID of `millis` since the Unix epoch (48 bits) and 80 bits of `random`,
    /// both made by the caller: this crate reads no clock and draws no randomness.
    pub fn from_parts(millis: u64, random: u128) -> JobId {
        let value: u128 =
            (u128::from(millis & 0xFFFF_FFFF_FFFF) << 80) | (random & ((1 << 80) - 1));
        let alphabet = CROCKFORD.as_bytes();
        let text: String = (0..Self::LEN)
            .rev()
            .map(|i| alphabet[((value >> (5 * i)) & 31) as usize] as char)
            .collect();
        JobId(text)
    }

    /// The canonical (upper-case) text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The lower-case form used in Kubernetes names.
    pub fn to_lowercase(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

impl FromStr for JobId {
    type Err = Error;
    fn from_str(s: &str) -> Result<JobId, Error> {
        JobId::parse(s)
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JobId({})", self.0)
    }
}

impl serde::Serialize for JobId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for JobId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JobId, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        JobId::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_canonical_ulids_only() {
        assert!(JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE").is_ok());
        assert!(JobId::parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ").is_ok());
        for bad in [
            "",
            "01jdq4v8z6k3m0b7x2n5r9t1ce",  // lower case
            "81JDQ4V8Z6K3M0B7X2N5R9T1CE",  // first character above 7
            "01JDQ4V8Z6K3M0B7X2N5R9T1C",   // 25 characters
            "01JDQ4V8Z6K3M0B7X2N5R9T1CEE", // 27 characters
            "01JDQ4V8Z6K3M0B7X2N5R9T1CI",  // I is not Crockford
            "01JDQ4V8Z6K3M0B7X2N5R9T1CU",  // U is not Crockford
        ] {
            let err = JobId::parse(bad).expect_err(bad);
            assert!(err.is(crate::Kind::Invalid), "{bad}");
        }
    }

    #[test]
    fn from_parts_makes_canonical_ulids() {
        let id = JobId::from_parts(1_767_225_600_000, 0x1234_5678_9abc_def0_1234);
        assert_eq!(JobId::parse(id.as_str()).unwrap(), id);
        assert_eq!(JobId::from_parts(0, 0).as_str(), "00000000000000000000000000");
        assert_eq!(JobId::from_parts(u64::MAX, u128::MAX).as_str(), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
    }

    proptest! {
        #[test]
        fn from_parts_is_always_canonical(millis in any::<u64>(), random in any::<u128>()) {
            let id = JobId::from_parts(millis, random);
            prop_assert_eq!(JobId::parse(id.as_str()).unwrap(), id);
        }

        #[test]
        fn canonical_ulids_round_trip(s in "[0-7][0-9A-HJKMNP-TV-Z]{25}") {
            let id = JobId::parse(&s).unwrap();
            prop_assert_eq!(id.as_str(), s.as_str());
            let json = serde_json::to_string(&id).unwrap();
            prop_assert_eq!(serde_json::from_str::<JobId>(&json).unwrap(), id);
        }
    }
}
