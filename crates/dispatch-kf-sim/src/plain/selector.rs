//! Label selectors as the apiserver parses them (k8s.io/apimachinery `labels.Parse`):
//! `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (not exists),
//! joined by commas.

use serde_json::Value;

use crate::plain::apierror::ApiError;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(Vec<Req>);

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn set_values(rest: &str, whole: &str) -> Result<Vec<String>, ApiError> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad(whole, "expected a parenthesised set of values"))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
}

fn bad(whole: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {why} in \"{whole}\""))
}

fn key_ok(k: &str) -> bool {
    !k.is_empty() && !k.contains(char::is_whitespace) && !k.contains(['=', '!', '(', ')'])
}

impl Selector {
    /// Parses a `labelSelector` query value; a malformed one is a 400 BadRequest.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in split_top(s) {
            let p = part.trim();
            let req = if let Some(k) = p.strip_prefix('!') {
                Req::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = p.split_once("!=") {
                Req::Ne(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = p.split_once("==") {
                Req::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = p.split_once('=') {
                Req::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, rest)) = p.split_once(" notin ") {
                Req::NotIn(k.trim().to_string(), set_values(rest, s)?)
            } else if let Some((k, rest)) = p.split_once(" in ") {
                Req::In(k.trim().to_string(), set_values(rest, s)?)
            } else {
                Req::Exists(p.to_string())
            };
            let key = match &req {
                Req::Eq(k, _)
                | Req::Ne(k, _)
                | Req::In(k, _)
                | Req::NotIn(k, _)
                | Req::Exists(k)
                | Req::NotExists(k) => k,
            };
            if !key_ok(key) {
                return Err(bad(s, "invalid label key"));
            }
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// The equality and `in` terms, as (key, values one of which the label must have):
    /// the terms an index of labels can answer.
    pub(crate) fn index_terms(&self) -> impl Iterator<Item = (&str, Vec<&str>)> {
        self.0.iter().filter_map(|r| match r {
            Req::Eq(k, v) => Some((k.as_str(), vec![v.as_str()])),
            Req::In(k, vs) => Some((k.as_str(), vs.iter().map(String::as_str).collect())),
            _ => None,
        })
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::Ne(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn every_operator_matches_as_the_apiserver_does() {
        let p = pod(json!({"a": "1", "b": "x"}));
        let yes = [
            "a=1",
            "a==1",
            "a!=2",
            "c!=1",
            "a in (1,2)",
            "a notin (2)",
            "c notin (1)",
            "a",
            "!c",
            "a=1,b",
        ];
        let no = ["a=2", "a!=1", "a in (2,3)", "a notin (1)", "c", "!a", "c in (1)", "a=1,c"];
        for s in yes {
            assert!(Selector::parse(s).unwrap().matches(&p), "{s} should match");
        }
        for s in no {
            assert!(!Selector::parse(s).unwrap().matches(&p), "{s} should not match");
        }
    }

    #[test]
    fn malformed_selector_is_bad_request() {
        let e = Selector::parse("a in 1,2").unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(e.reason, "BadRequest");
    }
}
