//! The Trainer's runtime snapshot (kubeflow/trainer `pkg/runtime/core/snapshot.go`,
//! KEP-2599, in v2.3.0): the first reconcile of a TrainJob copies the runtime it names
//! into the ConfigMap `<trainjob>-runtime-snapshot` (data key `runtime`), controlled by
//! the TrainJob and written by server-side apply as `trainer` (`createRuntimeSnapshot`).
//! Every later reconcile builds the JobSet from the snapshot, not from the live runtime
//! (`TrainingRuntime.NewObjects` / `ClusterTrainingRuntime.NewObjects`), so editing or
//! deleting the runtime no longer changes the TrainJob. A snapshot controlled by
//! another object, or naming another runtime, is refused (`getRuntimeSnapshot`): the
//! Trainer then makes nothing. The real Trainer writes the runtime as YAML; the sim
//! writes JSON, which is YAML too.

use serde_json::{Value, json};

use crate::plain::object::meta::{controlled_by, controller_ref, str_at, uid};
use crate::plain::resources::id;
use crate::store::Key;
use crate::store::State;

/// The snapshot ConfigMap's name suffix (`runtimeSnapshotSuffix`).
pub(crate) const SUFFIX: &str = "-runtime-snapshot";
const DATA_KEY: &str = "runtime";
const MANAGER: &str = "trainer";

/// The `runtimeRef` of a TrainJob: (group, kind, name), with the CRD's defaults.
pub(crate) fn runtime_ref(tj: &Value) -> (&str, &str, &str) {
    let r = &tj["spec"]["runtimeRef"];
    (
        r["apiGroup"].as_str().unwrap_or("trainer.kubeflow.org"),
        r["kind"].as_str().unwrap_or("ClusterTrainingRuntime"),
        r["name"].as_str().unwrap_or_default(),
    )
}

fn live(state: &State, ns: &str, kind: &str, name: &str) -> Option<Value> {
    let key = if kind == "TrainingRuntime" {
        Key::new(id("trainingruntimes"), ns, name)
    } else {
        Key::new(id("clustertrainingruntimes"), "", name)
    };
    state.store.get(&key).cloned()
}

/// Whether a snapshot's runtime is the one `runtimeRef` names.
fn names_runtime(tj: &Value, rt: &Value) -> bool {
    let (group, kind, name) = runtime_ref(tj);
    let rt_group = str_at(rt, "/apiVersion").split_once('/').map_or("", |(g, _)| g);
    rt["kind"] == kind && rt_group == group && str_at(rt, "/metadata/name") == name
}

/// The runtime a TrainJob runs on: its snapshot when there is one, else the live
/// runtime, snapshotted now. `None` when neither can be used.
pub(crate) fn runtime(state: &mut State, tj: &Value) -> Option<Value> {
    let ns = str_at(tj, "/metadata/namespace");
    let cm_name = format!("{}{SUFFIX}", str_at(tj, "/metadata/name"));
    let key = Key::new(id("configmaps"), ns, &cm_name);
    if let Some(cm) = state.store.get(&key) {
        if !controlled_by(cm, uid(tj)) {
            return None;
        }
        let rt: Value = serde_json::from_str(str_at(cm, &format!("/data/{DATA_KEY}"))).ok()?;
        return names_runtime(tj, &rt).then_some(rt);
    }
    let (_, kind, name) = runtime_ref(tj);
    let mut rt = live(state, ns, kind, name)?;
    if let Some(meta) = rt["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    let text = serde_json::to_string_pretty(&rt).ok()?;
    let cm = json!({
        "metadata": {"name": cm_name, "namespace": ns, "ownerReferences": [controller_ref(tj)]},
        "data": {DATA_KEY: text},
    });
    state.insert_as(id("configmaps"), cm, MANAGER, "Apply");
    Some(rt)
}
