//! Node lifecycle (kube-controller-manager's node lifecycle and taint-based eviction,
//! and pod GC): pods on a node carrying the `unreachable` NoExecute taint are evicted
//! after the default 300 s toleration (DisruptionTarget `DeletionByTaintManager`) and stay
//! Terminating; pods bound to a Node that no longer exists, or Terminating on a node
//! tainted `out-of-service`, are failed and force-deleted (DisruptionTarget
//! `DeletionByPodGC`).

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::util::{deleting, set_condition, str_at};
use crate::delete::{self, DeleteOptions};
use crate::resources::id;
use crate::state::State;
use crate::store::Key;

/// The taint the node lifecycle controller puts on an unreachable node.
pub(crate) const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The taint an administrator puts on a node known to be down.
pub(crate) const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
/// DefaultTolerationSeconds for the unreachable taint.
const TOLERATION: i64 = 300;

fn taint<'a>(node: &'a Value, key: &str) -> Option<&'a Value> {
    node.pointer("/spec/taints")?
        .as_array()?
        .iter()
        .find(|t| t["key"] == key && t["effect"] == "NoExecute")
}

pub(crate) fn run(state: &mut State) {
    let now = state.now;
    let now_s = state.now_str();
    let pods: Vec<(Key, Value)> =
        state.store.list(id("pods"), "").into_iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (key, mut pod) in pods {
        let node_name = str_at(&pod, "/spec/nodeName").to_string();
        if node_name.is_empty() {
            continue;
        }
        let node = state.store.get(&Key::new(id("nodes"), "", &node_name)).cloned();
        let gc = match &node {
            None => Some("PodGC: node no longer exists"),
            Some(n) if taint(n, OUT_OF_SERVICE).is_some() && deleting(&pod) => {
                Some("PodGC: node is out of service")
            }
            _ => None,
        };
        if let Some(message) = gc {
            let already = str_at(&pod, "/status/phase") == "Failed";
            set_condition(&mut pod, "DisruptionTarget", "True", "DeletionByPodGC", message, &now_s);
            if !already {
                super::super::verbs::terminate(
                    &mut pod,
                    137,
                    "ContainerStatusUnknown",
                    "The container could not be located when the pod was terminated",
                    &now_s,
                );
            }
            state.store.put(key.clone(), pod);
            // Force deletion: no grace period; only finalizers still hold the pod.
            let _ = delete::delete(
                state,
                &key,
                &DeleteOptions { grace: Some(0), ..Default::default() },
            );
            continue;
        }
        let Some(t) = node.as_ref().and_then(|n| taint(n, UNREACHABLE)) else { continue };
        if deleting(&pod) {
            continue;
        }
        let added = str_at(t, "/timeAdded").parse::<Timestamp>().unwrap_or(now);
        if now >= added + SignedDuration::from_secs(TOLERATION) {
            set_condition(
                &mut pod,
                "DisruptionTarget",
                "True",
                "DeletionByTaintManager",
                "Taint manager: deleting due to NoExecute taint",
                &now_s,
            );
            state.store.put(key.clone(), pod);
            let _ = delete::delete(state, &key, &DeleteOptions::default());
        }
    }
}
