//! The names the sim's parts share: the GPU resource and how many a pod or a Workload
//! asks for, the labels JobSet puts on its Jobs, the labels and annotations of Kueue,
//! the Trainer's `managedBy` value and the runtime kinds it registers. Admission, the store's indexes and the controllers read them
//! here, so none of them reaches into another for a constant.

use serde_json::{Value, json};

/// The GPU extended resource.
pub(crate) const GPU: &str = "nvidia.com/gpu";

/// A resource quantity as a whole number (`"8"` or `8`), or 0.
pub(crate) fn quantity(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// GPUs a pod asks for (requests, else limits, summed over containers).
pub(crate) fn gpus(pod: &Value) -> i64 {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let r = c.pointer("/resources/requests").and_then(|r| r.get(GPU));
            quantity(r.or_else(|| c.pointer("/resources/limits").and_then(|l| l.get(GPU))))
        })
        .sum()
}

/// GPUs a Workload asks for: each pod set's pods' GPUs times its count.
pub(crate) fn workload_gpus(wl: &Value) -> i64 {
    wl.pointer("/spec/podSets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|ps| {
            let pod = json!({"spec": ps["template"]["spec"]});
            gpus(&pod) * ps["count"].as_i64().unwrap_or(1)
        })
        .sum()
}

/// The label and annotation of a JobSet's Job with the JobSet's restart attempt.
pub(crate) const RESTART_ATTEMPT: &str = "jobset.sigs.k8s.io/restart-attempt";
/// The label and annotation of a JobSet's Job with its replicated job's name.
pub(crate) const REPLICATED_JOB_NAME: &str = "jobset.sigs.k8s.io/replicatedjob-name";

/// The label that puts a job under Kueue.
pub(crate) const QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
/// The admission gate annotation.
pub(crate) const GATED_BY: &str = "kueue.x-k8s.io/admission-gated-by";
/// The group-version Kueue serves; when it is left out, Kueue is not installed.
pub(crate) const KUEUE_GROUP_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// The TrainJob controller's `managedBy` value.
pub const TRAINER_CONTROLLER: &str = "trainer.kubeflow.org/trainjob-controller";

/// The runtime kinds the Trainer registers (`RuntimeRefToRuntimeRegistryKey` in
/// kubeflow/trainer `pkg/runtime/runtime.go` names them as a `GroupKind`).
const RUNTIME_KINDS: &[&str] = &["TrainingRuntime", "ClusterTrainingRuntime"];

/// Whether the Trainer has a runtime registered for this `runtimeRef` group and kind.
pub(crate) fn runtime_supported(group: &str, kind: &str) -> bool {
    group == "trainer.kubeflow.org" && RUNTIME_KINDS.contains(&kind)
}

/// The Trainer's words for a runtime it does not support, from both its validating
/// webhook and its controller: `unsupported runtime: <Kind>.<group>` (a `GroupKind`'s
/// `String()`, which is the kind alone when the group is empty).
pub(crate) fn unsupported_runtime(group: &str, kind: &str) -> String {
    if group.is_empty() {
        format!("unsupported runtime: {kind}")
    } else {
        format!("unsupported runtime: {kind}.{group}")
    }
}
