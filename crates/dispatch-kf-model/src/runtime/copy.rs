//! What the runtime copy leaves out of its source: the fields that let another writer
//! run an ended execution again behind the adapter's back
//! (`docs/runtime-requirements.md#what-the-copy-leaves-out`). Everything else is copied
//! verbatim.
//!
//! A JobSet TTL (`ttlSecondsAfterFinished`, which platform teams set to clean up) makes
//! the JobSet controller delete a finished JobSet; the Trainer then makes a new JobSet
//! for a failed TrainJob (it clears `Failed` at every reconcile), and the ranks run again
//! under the identity of the execution that ended. dispatch cleans up itself (Stop,
//! StopJob), so the copy goes without it, rather than refusing a runtime the platform
//! team made for everyone.

use serde_json::Value;

/// The fields of a runtime's `spec` the copy leaves out, as JSON pointers, each with
/// why.
pub(crate) const LEFT_OUT: &[(&str, &str)] = &[(
    "/template/spec/ttlSecondsAfterFinished",
    "the JobSet controller would delete the finished JobSet, and the Trainer would run a failed job again",
)];

/// The runtime copy's `spec`: `source` without the fields of [`LEFT_OUT`].
pub(crate) fn spec_of_copy(source: &Value) -> Value {
    let mut spec = source.clone();
    for (pointer, _) in LEFT_OUT {
        let (parent, field) = pointer.rsplit_once('/').expect("a pointer of LEFT_OUT has a parent");
        if let Some(Value::Object(map)) = spec.pointer_mut(parent) {
            map.remove(field);
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_copy_leaves_out_the_jobset_ttl_and_keeps_the_rest() {
        let source = json!({"mlPolicy": {"numNodes": 1}, "template": {"spec": {
            "ttlSecondsAfterFinished": 15, "replicatedJobs": [{"name": "node"}], "unknown": 1}}});
        let copy = spec_of_copy(&source);
        assert_eq!(
            copy,
            json!({"mlPolicy": {"numNodes": 1}, "template": {"spec": {
                "replicatedJobs": [{"name": "node"}], "unknown": 1}}})
        );
    }

    #[test]
    fn a_spec_without_the_fields_is_copied_as_it_is() {
        for source in [json!({}), json!({"template": 3}), json!({"template": {"spec": []}})] {
            assert_eq!(spec_of_copy(&source), source);
        }
    }
}
