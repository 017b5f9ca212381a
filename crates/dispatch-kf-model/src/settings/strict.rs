//! A strict reader over a parsed JSON/YAML document: unknown keys, nulls and wrong types
//! are `Invalid`, and every message names the key path (`kueue.lease.name`).
//!
//! Settings and the `kubeflow/RuntimeRef` extension are read through it, so both refuse
//! bad input the same way.

use dispatch_core::{Error, Timespan};
use serde_json::{Map, Value};

/// Parses bytes as JSON when they start with `{` or `[`, otherwise as YAML; `what` names
/// the document in the error.
pub(crate) fn parse_document(what: &str, bytes: &[u8]) -> Result<Value, Error> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::invalid(format!("{what} is not UTF-8 text: {e}")).with_source(e))?;
    if text.trim_start().starts_with(['{', '[']) {
        serde_json::from_str(text)
            .map_err(|e| Error::invalid(format!("{what} is not valid JSON: {e}")).with_source(e))
    } else {
        serde_yaml_ng::from_str(text)
            .map_err(|e| Error::invalid(format!("{what} is not valid YAML: {e}")).with_source(e))
    }
}

/// One JSON object being read, with the keys it may hold and the path that leads to it.
pub(crate) struct Obj<'a> {
    what: &'a str,
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    /// Reads `value` as an object at `path` (empty for the root) that may hold only
    /// `allowed` keys, none of them null. `what` names the document (`settings`).
    pub(crate) fn new(
        what: &'a str,
        path: &str,
        value: &'a Value,
        allowed: &[&str],
    ) -> Result<Obj<'a>, Error> {
        let Value::Object(map) = value else {
            let at = if path.is_empty() { String::new() } else { format!(" key `{path}`") };
            return Err(Error::invalid(format!(
                "{what}{at} is {}: want an object",
                describe(value)
            )));
        };
        let obj = Obj { what, path: path.to_owned(), map };
        for (key, value) in map {
            if !allowed.contains(&key.as_str()) {
                return Err(
                    obj.err(key, &format!("is not known: want one of {}", allowed.join(", ")))
                );
            }
            if value.is_null() {
                return Err(obj.err(key, "is null: give it a value or leave it out"));
            }
        }
        Ok(obj)
    }

    /// The path of `key` inside this object.
    pub(crate) fn path(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) }
    }

    /// An `Invalid` error about `key`: `<what> key `<path>` <problem>`.
    pub(crate) fn err(&self, key: &str, problem: &str) -> Error {
        Error::invalid(format!("{} key `{}` {problem}", self.what, self.path(key)))
    }

    /// The value at `key`, if present.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// A required value.
    pub(crate) fn required<T>(&self, key: &str, got: Option<T>) -> Result<T, Error> {
        got.ok_or_else(|| self.err(key, "is missing"))
    }

    /// A string at `key`.
    pub(crate) fn str(&self, key: &str) -> Result<Option<&'a str>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(key, other, "a string")),
        }
    }

    /// A boolean at `key`.
    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong_type(key, other, "true or false")),
        }
    }

    /// An array at `key`.
    pub(crate) fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(other) => Err(self.wrong_type(key, other, "a list")),
        }
    }

    /// An object at `key` that may hold only `allowed` keys.
    pub(crate) fn object(&self, key: &str, allowed: &[&str]) -> Result<Option<Obj<'a>>, Error> {
        self.get(key).map(|v| Obj::new(self.what, &self.path(key), v, allowed)).transpose()
    }

    /// A Go duration (`90s`, `5m`) at `key`.
    pub(crate) fn timespan(&self, key: &str) -> Result<Option<Timespan>, Error> {
        const WANT: &str = "a duration such as 30s, 5m or 1h30m";
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Timespan::parse(s)
                .map(Some)
                .map_err(|_| self.err(key, &format!("is {s:?}: want {WANT}"))),
            Some(other) => Err(self.wrong_type(key, other, WANT)),
        }
    }

    fn wrong_type(&self, key: &str, got: &Value, want: &str) -> Error {
        self.err(key, &format!("is {}: want {want}", describe(got)))
    }
}

/// What kind of JSON value this is, for messages.
pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Whether `name` is an RFC 1123 label: at most 63 lower-case letters, digits and `-`,
/// starting and ending with a letter or digit (namespaces and most object names).
pub(crate) fn is_rfc1123_label(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// Whether `name` is an RFC 1123 subdomain: at most 253 characters of dot-separated
/// labels (the rule for most Kubernetes object names).
pub(crate) fn is_rfc1123_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_rfc1123_label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_null_and_wrong_type_name_the_key_path() {
        let doc = json!({"a": {"b": 1, "c": null}});
        let root = Obj::new("settings", "", &doc, &["a"]).unwrap();
        let err = root.object("a", &["b", "c"]).err().unwrap();
        assert_eq!(err.message(), "settings key `a.c` is null: give it a value or leave it out");
        let err = root.object("a", &["b"]).err().unwrap();
        assert!(err.message().starts_with("settings key `a.c` is not known"), "{err}");
        let doc = json!({"a": {"b": 1}});
        let a =
            Obj::new("settings", "", &doc, &["a"]).unwrap().object("a", &["b"]).unwrap().unwrap();
        let err = a.str("b").unwrap_err();
        assert_eq!(err.message(), "settings key `a.b` is a number: want a string");
        assert!(err.is(dispatch_core::Kind::Invalid));
    }

    #[test]
    fn names_follow_rfc_1123() {
        for ok in ["a", "training", "0abc", "a-b"] {
            assert!(is_rfc1123_label(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", &"a".repeat(64)] {
            assert!(!is_rfc1123_label(bad), "{bad}");
        }
        assert!(is_rfc1123_subdomain("torch.distributed"));
        assert!(!is_rfc1123_subdomain("torch..distributed"));
    }
}
