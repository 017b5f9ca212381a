//! The scheduler (kube-scheduler's default plugins, reduced): a pending pod binds to the
//! first node (by name) that is Ready, schedulable, untainted for it, matches its
//! nodeSelector and has the `nvidia.com/gpu` it requests free; otherwise it gets
//! `PodScheduled=False`, reason `Unschedulable`, with the scheduler's message shape.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::KUBE_SCHEDULER;
use crate::plain::object::conditions::set_condition;
use crate::plain::object::keys::{GPU, gpus, quantity};
use crate::plain::object::meta::str_at;
use crate::plain::resources::id;
use crate::registry;
use crate::store::Key;
use crate::store::State;

fn tolerates(pod: &Value, taint: &Value) -> bool {
    pod.pointer("/spec/tolerations").and_then(Value::as_array).into_iter().flatten().any(|t| {
        (t["operator"] == "Exists" && (t["key"].is_null() || t["key"] == taint["key"]))
            || (t["key"] == taint["key"] && t["value"] == taint["value"])
    })
}

/// Why a node cannot take a pod, as the scheduler words it, or `None` when it fits.
fn misfit(node: &Value, pod: &Value, used: i64) -> Option<String> {
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool).unwrap_or(false) {
        return Some("node(s) were unschedulable".into());
    }
    for t in node.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten() {
        let hard = t["effect"] == "NoSchedule" || t["effect"] == "NoExecute";
        if hard && !tolerates(pod, t) {
            return Some(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                str_at(t, "/key"),
                str_at(t, "/value")
            ));
        }
    }
    let labels = node.pointer("/metadata/labels");
    let selector_ok = pod
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    if !selector_ok {
        return Some("node(s) didn't match Pod's node affinity/selector".into());
    }
    let want = gpus(pod);
    let have = quantity(node.pointer("/status/allocatable").and_then(|a| a.get(GPU)));
    if want > 0 && used + want > have {
        return Some(format!("Insufficient {GPU}"));
    }
    None
}

pub(crate) fn run(state: &mut State) {
    let now = state.now_str();
    // The store's index holds the pods to schedule (Pending, unbound, not deleting) and
    // the GPUs each node's bound pods use.
    let pods: Vec<(Key, Value)> = state
        .store
        .index()
        .unscheduled()
        .iter()
        .filter_map(|k| Some((k.clone(), state.store.get(k)?.clone())))
        .collect();
    for (key, mut pod) in pods {
        let nodes: Vec<Value> =
            state.store.range(id("nodes"), "").map(|(_, v)| v.clone()).collect();
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut chosen = None;
        for n in &nodes {
            let name = str_at(n, "/metadata/name");
            let ready = super::kubelet::is_ready(n);
            let why = if ready {
                misfit(n, &pod, state.store.index().gpus_used(name))
            } else {
                Some("node(s) were not ready".into())
            };
            match why {
                None => {
                    chosen = Some(name.to_string());
                    break;
                }
                Some(w) => *reasons.entry(w).or_default() += 1,
            }
        }
        match chosen {
            Some(node) => {
                pod["spec"]["nodeName"] = json!(node);
                set_condition(&mut pod, "PodScheduled", "True", "", "", &now);
            }
            None => {
                let total = nodes.len();
                let mut parts: Vec<String> =
                    reasons.iter().map(|(w, n)| format!("{n} {w}")).collect();
                parts.sort();
                let detail = if parts.is_empty() {
                    String::new()
                } else {
                    format!(": {}", parts.join(", "))
                };
                let message = format!(
                    "0/{total} nodes are available{detail}. preemption: 0/{total} nodes are available: {total} No preemption victims found for incoming pod."
                );
                set_condition(&mut pod, "PodScheduled", "False", "Unschedulable", &message, &now);
            }
        }
        registry::write(state, &key, pod, KUBE_SCHEDULER);
    }
}
