//! The request: reading one from bytes ([`read_request`]), and the refusals of its
//! fields (`docs/render.md#the-request`: each refusal is *invalid*).

use dispatch_core::{Action, Error, JobId, JobSpec, StartRequest};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::settings::strict::{Obj, parse_document};

/// A field, its lowest and highest value, and how to read it.
type Range = (&'static str, i64, i64, fn(&StartRequest) -> i64);

/// The request fields with a range, from the table `docs/render.md#the-request`: field,
/// lowest, highest, and how to read it. `job` is refused when the request is read (a
/// [`JobId`] is always valid); `spec` is checked by `JobSpec::validate`; `native`
/// refuses nothing. Any other field does not exist.
const RANGES: [Range; 3] = [
    ("generation", 0, 18_000_000, |r| r.generation),
    ("submission", 1, 999_999, |r| r.submission),
    ("attempt", 0, i64::MAX, |r| r.attempt),
];

/// Every range problem of the request's fields, in field order.
pub(crate) fn problems(request: &StartRequest) -> Vec<String> {
    RANGES
        .iter()
        .filter_map(|(field, low, high, read)| {
            let value = read(request);
            let want = if *high == i64::MAX {
                format!("{low} or more")
            } else {
                format!("{low} to {high}")
            };
            (!(*low..=*high).contains(&value)).then(|| format!("{field} is {value}: want {want}"))
        })
        .collect()
}

const FIELDS: &[&str] = &["job", "generation", "submission", "attempt", "spec", "native"];

/// Reads a [`StartRequest`] from JSON or YAML bytes. Anything malformed is `Invalid` and
/// the message names the field (`request key `spec.timeLimit` ...`).
pub fn read_request(bytes: &[u8]) -> Result<StartRequest, Error> {
    request_from_value(&parse_document("request", bytes)?)
}

/// Reads a [`StartRequest`] from a parsed document; see [`read_request`].
pub(super) fn request_from_value(doc: &Value) -> Result<StartRequest, Error> {
    let top = Obj::new("request", "", doc, FIELDS)?;
    let job_text = top.required("job", top.str("job")?)?;
    let job = JobId::parse(job_text).map_err(|_| {
        top.err("job", &format!("is {job_text:?}: want a valid JobID, a canonical ULID (26 upper-case Crockford base32 characters, the first 0 to 7)"))
    })?;
    let int = |key: &str| -> Result<Option<i64>, Error> {
        match top.get(key) {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| top.err(key, "is not a whole number")),
        }
    };
    let generation = int("generation")?.unwrap_or(0);
    let submission = top.required("submission", int("submission")?)?;
    let attempt = int("attempt")?.unwrap_or(0);
    let spec = read_spec(&top, top.required("spec", top.get("spec"))?)?;
    let native = match top.get("native") {
        None => Vec::new(),
        Some(v) => Vec::<Action>::deserialize(v)
            .map_err(|e| top.err("native", &format!("is malformed: {e}")))?,
    };
    Ok(StartRequest { job, generation, submission, attempt, spec, native })
}

/// Reads the spec; when it does not decode, finds the key that fails on its own (every
/// spec field has a default) so that the message names it.
fn read_spec(top: &Obj<'_>, value: &Value) -> Result<JobSpec, Error> {
    let Value::Object(map) = value else {
        return Err(top.err("spec", "is not an object"));
    };
    JobSpec::deserialize(value).map_err(|whole| {
        let culprit = map.iter().find_map(|(key, v)| {
            let alone = Value::Object(Map::from_iter([(key.clone(), v.clone())]));
            JobSpec::deserialize(&alone).err().map(|e| (key, e))
        });
        match culprit {
            Some((key, e)) => top.err(&format!("spec.{key}"), &format!("is malformed: {e}")),
            None => top.err("spec", &format!("is malformed: {whole}")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::Kind;

    fn refused(text: &str) -> String {
        let err = read_request(text.as_bytes()).unwrap_err();
        assert!(err.is(Kind::Invalid), "{err:?}");
        err.message().to_owned()
    }

    #[test]
    fn an_invalid_job_id_is_refused_naming_the_field() {
        let msg = refused(r#"{"job": "01jdq4v8z6k3m0b7x2n5r9t1ce", "submission": 1, "spec": {}}"#);
        assert!(
            msg.starts_with(
                "request key `job` is \"01jdq4v8z6k3m0b7x2n5r9t1ce\": want a valid JobID"
            ),
            "{msg}"
        );
    }

    #[test]
    fn malformed_fields_are_named() {
        let ok = r#""job": "01JDQ4V8Z6K3M0B7X2N5R9T1CE", "submission": 1"#;
        assert_eq!(
            refused(&format!("{{{ok}, \"spec\": {{}}, \"gen\": 1}}")).split(':').next(),
            Some("request key `gen` is not known")
        );
        assert_eq!(
            refused(&format!("{{{ok}, \"spec\": {{}}, \"attempt\": \"1\"}}")),
            "request key `attempt` is not a whole number"
        );
        let msg = refused(&format!(
            "{{{ok}, \"spec\": {{\"command\": [\"x\"], \"timeLimit\": \"soon\"}}}}"
        ));
        assert!(msg.starts_with("request key `spec.timeLimit` is malformed"), "{msg}");
        let msg = refused(&format!("{{{ok}, \"spec\": {{\"gpus\": 8}}}}"));
        assert!(msg.starts_with("request key `spec.gpus` is malformed: unknown field"), "{msg}");
        assert_eq!(
            refused(r#"{"job": "01JDQ4V8Z6K3M0B7X2N5R9T1CE", "spec": {}}"#),
            "request key `submission` is missing"
        );
    }

    #[test]
    fn request_ranges_follow_the_table() {
        let text = r#"{"job": "01JDQ4V8Z6K3M0B7X2N5R9T1CE", "generation": 18000001,
                       "submission": 0, "attempt": -1, "spec": {}}"#;
        let req = read_request(text.as_bytes()).unwrap();
        assert_eq!(
            problems(&req),
            [
                "generation is 18000001: want 0 to 18000000",
                "submission is 0: want 1 to 999999",
                "attempt is -1: want 0 or more",
            ]
        );
    }
}
