//! The kubelet: a pod bound to a Ready node starts Running (container statuses, Ready
//! conditions); a Terminating pod on a Ready node (or on no node) is removed once its
//! containers stop (exit 143, reported first), which the sim takes as at once (or, with
//! `slow_termination`, when its grace period ends on the virtual clock); a pod on a node
//! that is not Ready stays Terminating, as on a lost node.

use serde_json::{Value, json};

use super::KUBELET;
use super::wake::{self, Ctl};
use crate::plain::object::conditions::set_condition;
use crate::plain::object::meta::{deleting, finalizers, str_at};
use crate::plain::resources::id;
use crate::registry::{self, DeleteOptions};
use crate::store::Key;
use crate::store::State;

/// Whether a node's Ready condition is True.
pub(crate) fn is_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Whether a node exists and is Ready.
pub(crate) fn node_ready(state: &State, node: &str) -> bool {
    state.store.get(&Key::new(id("nodes"), "", node)).is_some_and(is_ready)
}

fn start(pod: &mut Value, now: &str) {
    pod["status"]["phase"] = json!("Running");
    pod["status"]["startTime"] = json!(now);
    pod["status"]["hostIP"] = json!("10.0.0.1");
    pod["status"]["podIP"] = json!("10.1.0.1");
    let statuses: Vec<Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| json!({
            "name": c["name"], "image": c["image"], "imageID": "", "ready": true, "started": true,
            "restartCount": 0, "state": {"running": {"startedAt": now}},
        }))
        .collect();
    pod["status"]["containerStatuses"] = json!(statuses);
    for t in ["Initialized", "ContainersReady", "Ready"] {
        set_condition(pod, t, "True", "", "", now);
    }
}

/// Marks every container terminated with `code` and the pod `Failed` (or `Succeeded`
/// when the code is 0), as the kubelet reports it under `restartPolicy: Never`.
pub(crate) fn terminate(pod: &mut Value, code: i64, reason: &str, message: &str, now: &str) {
    let names: Vec<Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|c| c.iter().map(|c| c["name"].clone()).collect())
        .unwrap_or_default();
    let statuses: Vec<Value> = names
        .into_iter()
        .map(|name| {
            let mut t = json!({"exitCode": code, "reason": reason, "startedAt": now, "finishedAt": now});
            if !message.is_empty() {
                t["message"] = json!(message);
            }
            json!({"name": name, "ready": false, "started": false, "restartCount": 0, "state": {"terminated": t}})
        })
        .collect();
    pod["status"]["containerStatuses"] = json!(statuses);
    pod["status"]["phase"] = json!(if code == 0 { "Succeeded" } else { "Failed" });
    for t in ["ContainersReady", "Ready"] {
        set_condition(pod, t, "False", "PodCompleted", "", now);
    }
}

pub(crate) fn run(state: &mut State) {
    let now = state.now_str();
    wake::each(state, Ctl::Kubelet, |state, key, pod| reconcile(state, key, pod, &now));
}

fn reconcile(state: &mut State, key: &Key, mut pod: Value, now: &str) {
    let node = str_at(&pod, "/spec/nodeName").to_string();
    let on_ready_node = !node.is_empty() && node_ready(state, &node);
    let no_finalizers = finalizers(&pod).is_empty();
    if deleting(&pod) {
        // With `slow_termination`, the containers run until the grace period ends.
        let grace_ends = str_at(&pod, "/metadata/deletionTimestamp").parse::<jiff::Timestamp>();
        let grace_over =
            !state.slow_termination || grace_ends.as_ref().is_ok_and(|t| state.now >= *t);
        if !grace_over && !node.is_empty() {
            if let Ok(t) = grace_ends {
                wake::at(state, Ctl::Kubelet, key, t);
            }
            return;
        }
        // A running container gets SIGTERM and exits 143, which the kubelet reports
        // before the pod goes, as a real node's does.
        if on_ready_node && str_at(&pod, "/status/phase") == "Running" {
            terminate(&mut pod, 143, "Error", "", now);
            registry::write(state, key, pod, KUBELET);
        } else if no_finalizers && (node.is_empty() || on_ready_node) {
            // The containers are gone: the kubelet ends the graceful deletion.
            let confirm = DeleteOptions { grace: Some(0), ..Default::default() };
            let _ = registry::delete(state, key, &confirm);
        }
        return;
    }
    if on_ready_node && str_at(&pod, "/status/phase") == "Pending" {
        start(&mut pod, now);
        registry::write(state, key, pod, KUBELET);
    }
}
