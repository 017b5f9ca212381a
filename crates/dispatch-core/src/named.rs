//! Closed enums whose values each have one name: the one JSON, the command line and
//! messages all use. [`named_enum!`] declares such an enum from one list of
//! `Variant = "name"` pairs and derives from it `ALL`, `name()`, `Display`, `FromStr`
//! and serde as that name, so no name is spelled twice. Decoding refuses a name it does
//! not know ([`UnknownName`]): a record written by a newer build is refused by an older
//! one rather than misread.

/// A name that is none of an enum's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {of} {name:?}: expected one of {}", .known.join(", "))]
pub struct UnknownName {
    /// The enum.
    pub of: &'static str,
    /// The name given.
    pub name: String,
    /// Every name it has.
    pub known: &'static [&'static str],
}

/// Declares a closed enum named as in the module doc.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        pub enum $enum:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $name:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $enum {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $enum {
            /// Every value, in declaration order.
            pub const ALL: [$enum; [$($name),+].len()] = [$($enum::$variant),+];
            /// Every name, in declaration order.
            pub const NAMES: [&'static str; [$($name),+].len()] = [$($name),+];

            /// Its name.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $enum::$variant => $name, )+
                }
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $enum {
            type Err = $crate::named::UnknownName;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                match text {
                    $( $name => Ok($enum::$variant), )+
                    _ => Err($crate::named::UnknownName {
                        of: stringify!($enum),
                        name: text.to_owned(),
                        known: &$enum::NAMES,
                    }),
                }
            }
        }

        impl serde::Serialize for $enum {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $enum {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use named_enum;

#[cfg(test)]
mod tests {
    use crate::{CauseKind, Kind, ObjectKind, ObjectState, Provenance, StatusState};

    /// Each value's name round-trips through `FromStr`, JSON and `Display`, and no two
    /// values share one.
    fn round_trips<T>(all: &[T], names: &[&str])
    where
        T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display + std::str::FromStr,
        T: serde::Serialize + serde::de::DeserializeOwned,
        <T as std::str::FromStr>::Err: std::fmt::Debug,
    {
        let mut seen = std::collections::BTreeSet::new();
        for (value, name) in all.iter().zip(names) {
            assert!(seen.insert(*name), "{name} twice");
            assert_eq!(value.to_string(), *name);
            assert_eq!(name.parse::<T>().unwrap(), *value);
            let json = serde_json::to_string(value).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), *value);
        }
    }

    #[test]
    fn every_named_enum_round_trips_by_its_names() {
        round_trips(&Kind::ALL, &Kind::NAMES);
        round_trips(&ObjectKind::ALL, &ObjectKind::NAMES);
        round_trips(&ObjectState::ALL, &ObjectState::NAMES);
        round_trips(&CauseKind::ALL, &CauseKind::NAMES);
        round_trips(&Provenance::ALL, &Provenance::NAMES);
        round_trips(&StatusState::ALL, &StatusState::NAMES);
    }

    #[test]
    fn an_unknown_name_is_refused_naming_the_known_ones() {
        let err = serde_json::from_str::<ObjectState>("\"finished\"").unwrap_err().to_string();
        assert!(err.contains("unknown ObjectState \"finished\""), "{err}");
        assert!(err.contains("pending, gated, held, running, ended"), "{err}");
        assert_eq!("Pending".parse::<ObjectState>().unwrap_err().name, "Pending");
    }
}
