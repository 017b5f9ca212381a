//! The attempt token: `<attempt>-<16 lower-case hex>`, which tells this Start's objects
//! from another instance of the same name
//! (`docs/names-labels-annotations.md#annotations`).
//!
//! The 16 hex characters are drawn by the caller at the edge (the CLI, the Backend) and
//! passed in, so a render is reproducible.

use std::fmt;

use dispatch_core::Error;

/// 16 lower-case hex characters supplied by the caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenSuffix(String);

impl TokenSuffix {
    /// The number of hex characters.
    pub(crate) const LEN: usize = 16;

    /// Checks `hex`: exactly 16 characters of `0-9a-f`, else `Invalid`.
    pub fn parse(hex: &str) -> Result<TokenSuffix, Error> {
        let ok =
            hex.len() == Self::LEN && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if ok {
            Ok(TokenSuffix(hex.to_owned()))
        } else {
            Err(Error::invalid(format!(
                "attempt token suffix {hex:?} is not valid: want 16 lower-case hex characters"
            )))
        }
    }

    /// Builds a suffix from 8 random bytes, written as hex.
    pub fn from_bytes(bytes: [u8; 8]) -> TokenSuffix {
        TokenSuffix(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `<attempt>-<suffix>`: the value of the `attempt-token` annotation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct AttemptToken {
    attempt: u64,
    suffix: TokenSuffix,
}

impl AttemptToken {
    /// The token of `attempt` (0 or more, else `Invalid`) with `suffix`.
    pub(super) fn new(attempt: i64, suffix: &TokenSuffix) -> Result<AttemptToken, Error> {
        let attempt = u64::try_from(attempt)
            .map_err(|_| Error::invalid(format!("attempt is {attempt}: want 0 or more")))?;
        Ok(AttemptToken { attempt, suffix: suffix.clone() })
    }
}

impl fmt::Display for AttemptToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.attempt, self.suffix.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::Kind;

    #[test]
    fn token_is_attempt_dash_sixteen_hex() {
        let suffix = TokenSuffix::parse("0123456789abcdef").unwrap();
        assert_eq!(AttemptToken::new(3, &suffix).unwrap().to_string(), "3-0123456789abcdef");
        assert_eq!(
            TokenSuffix::from_bytes([0, 1, 2, 3, 0xa4, 0xb5, 0xc6, 0xff]).as_str(),
            "00010203a4b5c6ff"
        );
    }

    #[test]
    fn bad_suffixes_and_negative_attempts_are_invalid() {
        for bad in
            ["", "0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "0123456789abcdeg"]
        {
            assert!(TokenSuffix::parse(bad).unwrap_err().is(Kind::Invalid), "{bad}");
        }
        let suffix = TokenSuffix::parse("0123456789abcdef").unwrap();
        assert!(AttemptToken::new(-1, &suffix).unwrap_err().is(Kind::Invalid));
    }
}
