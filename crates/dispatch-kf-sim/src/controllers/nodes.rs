//! Node lifecycle (kube-controller-manager's node lifecycle and taint-based eviction,
//! and pod GC): pods on a node carrying the `unreachable` NoExecute taint are evicted
//! after the default 300 s toleration (DisruptionTarget `DeletionByTaintManager`) and stay
//! Terminating; pods bound to a Node that no longer exists (DisruptionTarget
//! `DeletionByPodGC`), or Terminating on a node tainted `out-of-service` (no condition of
//! its own), are failed and force-deleted.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::KUBE_CONTROLLER_MANAGER;
use super::wake::{self, Ctl};
use crate::plain::object::conditions::set_condition;
use crate::plain::object::meta::{deleting, str_at};
use crate::plain::resources::id;
use crate::registry::{self, DeleteOptions};
use crate::store::Key;
use crate::store::State;

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
    wake::each(state, Ctl::Nodes, |state, key, pod| reconcile(state, key, pod, now, &now_s));
}

fn reconcile(state: &mut State, key: &Key, mut pod: Value, now: Timestamp, now_s: &str) {
    let node_name = str_at(&pod, "/spec/nodeName").to_string();
    if node_name.is_empty() {
        return;
    }
    let node = state.store.get(&Key::new(id("nodes"), "", &node_name)).cloned();
    // Pod GC fails the pod and force-deletes it. Only an orphan gets a condition of
    // its own; on an out-of-service node the pod keeps what it had (the taint
    // manager's), as kube-controller-manager's gcTerminating does. Containers keep
    // their last status: no kubelet reports on them.
    let gc = match &node {
        None => Some(Some("PodGC: node no longer exists")),
        Some(n) if taint(n, OUT_OF_SERVICE).is_some() && deleting(&pod) => Some(None),
        _ => None,
    };
    if let Some(condition) = gc {
        if let Some(message) = condition {
            set_condition(&mut pod, "DisruptionTarget", "True", "DeletionByPodGC", message, now_s);
        }
        if !matches!(str_at(&pod, "/status/phase"), "Failed" | "Succeeded") {
            pod["status"]["phase"] = serde_json::json!("Failed");
        }
        registry::write(state, key, pod, KUBE_CONTROLLER_MANAGER);
        // Force deletion: no grace period; only finalizers still hold the pod.
        let _ =
            registry::delete(state, key, &DeleteOptions { grace: Some(0), ..Default::default() });
        return;
    }
    let Some(t) = node.as_ref().and_then(|n| taint(n, UNREACHABLE)) else { return };
    if deleting(&pod) {
        return;
    }
    let added = str_at(t, "/timeAdded").parse::<Timestamp>().unwrap_or(now);
    let evict_at = added + SignedDuration::from_secs(TOLERATION);
    if now < evict_at {
        wake::at(state, Ctl::Nodes, key, evict_at);
    } else {
        set_condition(
            &mut pod,
            "DisruptionTarget",
            "True",
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
            now_s,
        );
        registry::write(state, key, pod, KUBE_CONTROLLER_MANAGER);
        let _ = registry::delete(state, key, &DeleteOptions::default());
    }
}
