//! [`Timespan`]: a signed duration written as Go writes one (`90m`, `1h30m15.5s`).
//!
//! The job spec's time limit and the settings' timeouts use this notation. It is signed
//! so that a negative time limit can be read and then refused by validation with a
//! message, rather than failing to parse.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A signed span of time with nanosecond resolution, at most about 292 years either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timespan {
    nanos: i64,
}

const UNITS: [(&str, i64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

impl Timespan {
    /// No time at all.
    pub const ZERO: Timespan = Timespan { nanos: 0 };

    /// A span of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Timespan {
        Timespan { nanos }
    }

    /// A span of `secs` whole seconds (saturating).
    pub const fn from_secs(secs: i64) -> Timespan {
        Timespan { nanos: secs.saturating_mul(1_000_000_000) }
    }

    /// The span in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.nanos
    }

    /// Whether the span is below zero.
    pub const fn is_negative(self) -> bool {
        self.nanos < 0
    }

    /// Whether the span is above zero.
    pub const fn is_positive(self) -> bool {
        self.nanos > 0
    }

    /// The span in whole seconds, rounded up (towards positive infinity).
    pub const fn ceil_secs(self) -> i64 {
        self.nanos.div_euclid(1_000_000_000) + (self.nanos.rem_euclid(1_000_000_000) != 0) as i64
    }

    /// The span as a standard duration, or `None` when it is negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.nanos).ok().map(std::time::Duration::from_nanos)
    }

    /// Parses Go's notation: an optional sign, then one or more decimal numbers, each
    /// with a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`); `0` alone is allowed.
    pub fn parse(text: &str) -> Result<Timespan, Error> {
        parse_go(text).ok_or_else(|| {
            Error::invalid(format!(
                "duration {text:?} is not valid: want a number with a unit, such as 90m or 1h30m15.5s"
            ))
        })
    }
}

fn parse_go(text: &str) -> Option<Timespan> {
    let (negative, mut rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(Timespan::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after) = rest.split_at(int_len);
        let (frac_part, after) = match after.strip_prefix('.') {
            Some(a) => a.split_at(a.bytes().take_while(u8::is_ascii_digit).count()),
            None => ("", after),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale = UNITS.iter().find(|(name, _)| *name == unit)?.1 as i128;
        let int: i128 = if int_part.is_empty() { 0 } else { int_part.parse().ok()? };
        let mut value = int.checked_mul(scale)?;
        let mut place = scale;
        for digit in frac_part.bytes().take(18) {
            place /= 10;
            value += (digit - b'0') as i128 * place;
        }
        total = total.checked_add(value)?;
        if total > i64::MAX as i128 + negative as i128 {
            return None;
        }
        rest = after;
    }
    let signed = if negative { -total } else { total };
    Some(Timespan { nanos: i64::try_from(signed).ok()? })
}

impl FromStr for Timespan {
    type Err = Error;
    fn from_str(s: &str) -> Result<Timespan, Error> {
        Timespan::parse(s)
    }
}

/// Writes the span as Go's `time.Duration.String` does: `1h30m0s`, `1.2s`, `150ms`, `0s`.
impl fmt::Display for Timespan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let n = self.nanos.unsigned_abs();
        if n == 0 {
            return f.write_str("0s");
        }
        if n < 1_000_000_000 {
            let (unit, scale) = match n {
                0..1_000 => ("ns", 1),
                1_000..1_000_000 => ("µs", 1_000),
                _ => ("ms", 1_000_000),
            };
            return write!(f, "{sign}{}{unit}", decimal(n, scale));
        }
        let (h, rem) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
        let (m, s) = (rem / 60_000_000_000, rem % 60_000_000_000);
        f.write_str(sign)?;
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if h > 0 || m > 0 {
            write!(f, "{m}m")?;
        }
        write!(f, "{}s", decimal(s, 1_000_000_000))
    }
}

/// `n / scale` as a decimal with trailing zeros of the fraction dropped.
fn decimal(n: u64, scale: u64) -> String {
    let (whole, frac) = (n / scale, n % scale);
    if frac == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

impl serde::Serialize for Timespan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timespan {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Timespan, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timespan::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_go_notation() {
        let cases = [
            ("0", 0),
            ("90m", 90 * 60_000_000_000),
            ("1h30m15.5s", 5_415_500_000_000),
            ("1.2s", 1_200_000_000),
            ("-5m", -300_000_000_000),
            ("150ms", 150_000_000),
            ("1µs", 1_000),
            ("1us", 1_000),
            (".5s", 500_000_000),
            ("2h45m", 9_900_000_000_000),
        ];
        for (text, nanos) in cases {
            assert_eq!(Timespan::parse(text).unwrap().as_nanos(), nanos, "{text}");
        }
        for bad in ["", "5", "1x", "h", "1h-5m", "--1s", ".s", "9999999999999h", " 1s"] {
            assert!(Timespan::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn writes_go_notation() {
        for (nanos, text) in [
            (0, "0s"),
            (5_400_000_000_000, "1h30m0s"),
            (1_200_000_000, "1.2s"),
            (150_000_000, "150ms"),
            (-61_000_000_000, "-1m1s"),
            (1_500, "1.5µs"),
        ] {
            assert_eq!(Timespan::from_nanos(nanos).to_string(), text);
        }
    }

    #[test]
    fn rounds_up_to_whole_seconds() {
        assert_eq!(Timespan::parse("1.2s").unwrap().ceil_secs(), 2);
        assert_eq!(Timespan::parse("90m").unwrap().ceil_secs(), 5400);
        assert_eq!(Timespan::parse("1ns").unwrap().ceil_secs(), 1);
        assert_eq!(Timespan::ZERO.ceil_secs(), 0);
    }

    proptest! {
        #[test]
        fn display_then_parse_round_trips(nanos in any::<i64>()) {
            let span = Timespan::from_nanos(nanos);
            prop_assert_eq!(Timespan::parse(&span.to_string()).unwrap(), span);
        }
    }
}
