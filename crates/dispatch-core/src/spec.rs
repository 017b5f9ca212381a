//! What a backend is asked to run: [`StartRequest`] and [`JobSpec`].
//!
//! The JSON is the one `dispatch-kf render` and `start` read; unknown keys are refused,
//! because a misspelt field silently ignored would run a different job.

use std::collections::BTreeMap;

use crate::{Action, Error, JobId, RecoveryPolicy, Timespan};

/// Extensions: `<namespace>/<name>` to a JSON value, decoded by the backend that
/// understands the name.
pub type Extensions = BTreeMap<String, serde_json::Value>;

/// The extension names this crate knows.
pub mod ext {
    /// The container image, decoded as [`crate::ImageExt`].
    pub const IMAGE: &str = "dispatch/Image";
    /// A checkpoint location shared by every rank; accepted, it changes nothing in render.
    pub const SHARED_CHECKPOINT: &str = "dispatch/SharedCheckpoint";
}

/// One job's specification, independent of the scheduler.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSpec {
    /// A human name for the job; it changes nothing in the scheduler's objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The program and its arguments.
    #[serde(default)]
    pub command: Vec<String>,
    /// Environment variables for every rank.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The directory the program starts in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<String>,
    /// The number of nodes; at least one.
    #[serde(default)]
    pub nodes: i64,
    /// GPUs per node; 0 asks for none.
    #[serde(default)]
    pub gpus_per_node: i64,
    /// Processes per node; 0 leaves it to the runtime.
    #[serde(default)]
    pub procs_per_node: i64,
    /// The wall-clock limit of one execution; absent or zero is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<Timespan>,
    /// Where checkpoints go: an absolute path or an `s3://bucket/...` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// What the supervisor does when an object ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryPolicy>,
    /// Backend-specific settings by `<namespace>/<name>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: Extensions,
}

/// A request to start one submission of a job.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartRequest {
    /// The job.
    pub job: JobId,
    /// The job's generation G (0 to 18,000,000).
    #[serde(default)]
    pub generation: i64,
    /// The submission N (1 to 999,999).
    pub submission: i64,
    /// The supervisor's attempt number for this submission (0 or more).
    #[serde(default)]
    pub attempt: i64,
    /// What to run.
    pub spec: JobSpec,
    /// Recovery actions the supervisor assigns to the backend to carry out natively.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native: Vec<Action>,
}

/// The `dispatch/Image` extension.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageExt {
    /// The image reference.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Kubernetes' pull policy, passed through when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<String>,
}

impl JobSpec {
    /// Checks the spec, reporting every problem at once, in field order, as one
    /// `Invalid` error.
    pub fn validate(&self) -> Result<(), Error> {
        let problems = self.problems();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid(format!("invalid job spec: {}", problems.join("; "))))
        }
    }

    /// Every problem [`JobSpec::validate`] reports, in field order.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.command.is_empty() {
            problems.push("command is empty".to_owned());
        }
        if let Some(i) = self.command.iter().position(|c| c.contains('\0')) {
            problems.push(format!("command[{i}] contains a NUL byte"));
        }
        for (key, value) in &self.env {
            if key.contains('\0') || value.contains('\0') {
                problems.push(format!("env {:?} contains a NUL byte", key.replace('\0', "\\0")));
            } else if !is_env_key(key) {
                problems.push(format!("env key {key:?} is malformed: want [A-Za-z_][A-Za-z0-9_]*"));
            } else if key.starts_with("DISPATCH_") {
                problems.push(format!(
                    "env key {key} is reserved: keys beginning DISPATCH_ are dispatch's"
                ));
            }
        }
        if self.nodes < 1 {
            problems.push(format!("nodes is {}: want at least 1", self.nodes));
        }
        if self.gpus_per_node < 0 {
            problems.push(format!("gpusPerNode is {}: want 0 or more", self.gpus_per_node));
        }
        if self.procs_per_node < 0 {
            problems.push(format!("procsPerNode is {}: want 0 or more", self.procs_per_node));
        }
        if let Some(limit) = self.time_limit.filter(|t| t.is_negative()) {
            problems.push(format!("timeLimit is {limit}: want 0 or more"));
        }
        if let Some(checkpoint) = self.checkpoint.as_ref().filter(|c| !is_checkpoint(c)) {
            problems.push(format!(
                "checkpoint {checkpoint:?} is neither an absolute path nor an s3://bucket/... URL"
            ));
        }
        problems
    }

    /// Decodes the `dispatch/Image` extension, if present.
    pub fn image(&self) -> Option<Result<ImageExt, Error>> {
        self.extensions.get(ext::IMAGE).map(|v| decode_extension(ext::IMAGE, v))
    }
}

/// Decodes an extension's value as `T`, naming the extension when it does not fit.
pub fn decode_extension<T: serde::de::DeserializeOwned>(
    name: &str,
    value: &serde_json::Value,
) -> Result<T, Error> {
    T::deserialize(value)
        .map_err(|e| Error::invalid(format!("extension {name} is malformed: {e}")).with_source(e))
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// An absolute path, or `s3://` followed by a non-empty bucket.
fn is_checkpoint(checkpoint: &str) -> bool {
    if let Some(rest) = checkpoint.strip_prefix("s3://") {
        let bucket = rest.split('/').next().unwrap_or("");
        !bucket.is_empty()
    } else {
        checkpoint.starts_with('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> JobSpec {
        JobSpec {
            command: vec!["python".into(), "train.py".into()],
            nodes: 1,
            ..JobSpec::default()
        }
    }

    #[test]
    fn a_minimal_spec_is_valid() {
        assert!(valid().validate().is_ok());
    }

    #[test]
    fn validate_reports_every_problem_in_field_order() {
        let spec = JobSpec {
            command: vec![],
            env: BTreeMap::from([
                ("1BAD".into(), "x".into()),
                ("DISPATCH_X".into(), "x".into()),
                ("NUL".into(), "a\0b".into()),
            ]),
            nodes: 0,
            gpus_per_node: -1,
            procs_per_node: -2,
            time_limit: Some(Timespan::parse("-5m").unwrap()),
            checkpoint: Some("relative/dir".into()),
            ..JobSpec::default()
        };
        let err = spec.validate().unwrap_err();
        assert!(err.is(crate::Kind::Invalid));
        assert_eq!(
            err.message(),
            "invalid job spec: command is empty; \
             env key \"1BAD\" is malformed: want [A-Za-z_][A-Za-z0-9_]*; \
             env key DISPATCH_X is reserved: keys beginning DISPATCH_ are dispatch's; \
             env \"NUL\" contains a NUL byte; nodes is 0: want at least 1; \
             gpusPerNode is -1: want 0 or more; procsPerNode is -2: want 0 or more; \
             timeLimit is -5m0s: want 0 or more; \
             checkpoint \"relative/dir\" is neither an absolute path nor an s3://bucket/... URL"
        );
    }

    #[test]
    fn checkpoints_are_absolute_paths_or_s3_urls() {
        for ok in ["/ckpt", "s3://bucket", "s3://bucket/run-7"] {
            assert!(is_checkpoint(ok), "{ok}");
        }
        for bad in ["ckpt", "s3://", "s3:///x", "gs://bucket/x", ""] {
            assert!(!is_checkpoint(bad), "{bad}");
        }
    }

    #[test]
    fn the_request_json_of_core_md_reads() {
        let json = r#"{
          "job": "01JDQ4V8Z6K3M0B7X2N5R9T1CE",
          "generation": 0, "submission": 1, "attempt": 1,
          "spec": {
            "command": ["python", "train.py", "--epochs", "3"],
            "env": {"NCCL_DEBUG": "INFO"},
            "workDir": "/workspace",
            "nodes": 2, "gpusPerNode": 8, "procsPerNode": 8,
            "timeLimit": "2h30m",
            "checkpoint": "s3://bucket/run-7",
            "recovery": {"rules": [{"on": ["preempted", "node-lost"], "action": "resubmit", "budget": 3}]},
            "extensions": {
              "dispatch/Image": {"ref": "ghcr.io/acme/train:1.4"},
              "kubeflow/RuntimeRef": {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}
            }
          }
        }"#;
        let req: StartRequest = serde_json::from_str(json).unwrap();
        assert_eq!(req.spec.time_limit.unwrap().ceil_secs(), 9000);
        assert_eq!(req.spec.image().unwrap().unwrap().reference, "ghcr.io/acme/train:1.4");
        assert!(req.spec.validate().is_ok());
        let again: StartRequest =
            serde_json::from_str(&serde_json::to_string(&req).unwrap()).unwrap();
        assert_eq!(again, req);
    }

    #[test]
    fn unknown_request_keys_are_refused() {
        let json = r#"{"job": "01JDQ4V8Z6K3M0B7X2N5R9T1CE", "submission": 1,
                       "spec": {"command": ["true"], "nodes": 1, "gpus": 8}}"#;
        let err = serde_json::from_str::<StartRequest>(json).unwrap_err();
        assert!(err.to_string().contains("unknown field `gpus`"), "{err}");
    }
}
