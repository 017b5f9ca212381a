//! What a test makes happen to pods and nodes: a container exits (with a code, OOM, a
//! start error), an image cannot be pulled, the scheduler preempts, the Eviction API
//! evicts, a node is lost, deleted or tainted out-of-service, GPU nodes are added. Each
//! writes what the kubelet or controller would, then the controllers settle.

use serde_json::{Value, json};

use crate::controllers::kubelet::terminate;
use crate::controllers::nodes::{OUT_OF_SERVICE, UNREACHABLE};
use crate::controllers::{self, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, KUBELET};
use crate::facade::sim::Sim;
use crate::plain::object::conditions::set_condition;
use crate::plain::object::keys::GPU;
use crate::plain::resources::id;
use crate::registry::{self, DeleteOptions};
use crate::store::Key;
use crate::store::State;

/// The field manager of an eviction's pod update: the client that asked for it
/// (`kubectl drain`).
const EVICTION_CLIENT: &str = "kubectl";
/// The field manager of an administrator's `kubectl taint`.
const ADMINISTRATOR: &str = "kubectl-taint";

impl Sim {
    fn with_pod(&self, ns: &str, pod: &str, f: impl FnOnce(&mut State, &Key, &mut Value)) -> bool {
        self.with_state(|st| {
            let key = Key::new(id("pods"), ns, pod);
            let Some(mut p) = st.store.get(&key).cloned() else { return false };
            f(st, &key, &mut p);
            true
        })
    }

    /// The kubelet reports a change of the pod's status: `change` (given the clock's
    /// time) is made to the pod and written as the kubelet's.
    fn kubelet_reports(&self, ns: &str, pod: &str, change: impl FnOnce(&mut Value, &str)) -> bool {
        self.with_pod(ns, pod, |st, key, p| {
            change(p, &st.now_str());
            registry::write(st, key, p.clone(), KUBELET);
        })
    }

    /// Kueue preempts the Workload `workload` for a higher-priority one, which keeps its
    /// quota until the placeholder `preemptor-<workload>` is deleted.
    pub fn kueue_preempt(&self, ns: &str, workload: &str) -> bool {
        self.with_state(|st| {
            controllers::kueue::preempt(st, &Key::new(id("workloads"), ns, workload))
        })
    }

    /// Kueue evicts the Workload `workload` because its pods were not ready in time
    /// (`PodsReadyTimeout`), and requeues it.
    pub fn kueue_pods_ready_timeout(&self, ns: &str, workload: &str) -> bool {
        self.with_state(|st| {
            controllers::kueue::pods_ready_timeout(st, &Key::new(id("workloads"), ns, workload))
        })
    }

    /// The `node` container (and every other) exits with `code`.
    pub fn exit(&self, ns: &str, pod: &str, code: i64) -> bool {
        self.exit_with_message(ns, pod, code, "")
    }

    /// The `node` container (and every other) exits with `code`, leaving `message` in
    /// its termination log, as a program that writes `/dev/termination-log` does.
    pub fn exit_with_message(&self, ns: &str, pod: &str, code: i64, message: &str) -> bool {
        let reason = if code == 0 { "Completed" } else { "Error" };
        self.kubelet_reports(ns, pod, |p, now| terminate(p, code, reason, message, now))
    }

    /// The container is killed by the kernel's OOM killer (exit 137, `OOMKilled`).
    pub fn oom(&self, ns: &str, pod: &str) -> bool {
        self.kubelet_reports(ns, pod, |p, now| terminate(p, 137, "OOMKilled", "", now))
    }

    /// The container cannot start (exit 128, `StartError`, with the runtime's message).
    pub fn start_error(&self, ns: &str, pod: &str, message: &str) -> bool {
        self.kubelet_reports(ns, pod, |p, now| terminate(p, 128, "StartError", message, now))
    }

    /// The image cannot be pulled: the container waits with `ImagePullBackOff`.
    pub fn image_pull_backoff(&self, ns: &str, pod: &str) -> bool {
        self.kubelet_reports(ns, pod, |p, _| {
            let image = p.pointer("/spec/containers/0/image").cloned().unwrap_or(Value::Null);
            let msg = format!("Back-off pulling image {image}");
            let names: Vec<Value> = p.pointer("/spec/containers").and_then(Value::as_array).map(|c| c.iter().map(|c| c["name"].clone()).collect()).unwrap_or_default();
            let statuses: Vec<Value> = names.into_iter().map(|n| json!({"name": n, "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff", "message": msg}}})).collect();
            p["status"]["phase"] = json!("Pending");
            p["status"]["containerStatuses"] = json!(statuses);
        })
    }

    /// `manager` marks the pod a `DisruptionTarget` for `reason`, then deletes it.
    fn disrupt(&self, ns: &str, pod: &str, manager: &str, reason: &str, message: &str) -> bool {
        self.with_pod(ns, pod, |st, key, p| {
            let now = st.now_str();
            set_condition(p, "DisruptionTarget", "True", reason, message, &now);
            registry::write(st, key, p.clone(), manager);
            let _ = registry::delete(st, key, &DeleteOptions::default());
        })
    }

    /// The scheduler preempts the pod (DisruptionTarget `PreemptionByScheduler`).
    pub fn preempt(&self, ns: &str, pod: &str) -> bool {
        self.disrupt(
            ns,
            pod,
            KUBE_SCHEDULER,
            "PreemptionByScheduler",
            "default-scheduler: preempting to accommodate a higher priority pod",
        )
    }

    /// The Eviction API evicts the pod (DisruptionTarget `EvictionByEvictionAPI`).
    pub fn evict(&self, ns: &str, pod: &str) -> bool {
        self.disrupt(ns, pod, EVICTION_CLIENT, "EvictionByEvictionAPI", "Eviction API: evicting")
    }

    /// Adds a Ready node with `gpus` of `nvidia.com/gpu`.
    pub fn add_gpu_node(&self, name: &str, gpus: u32) {
        self.with_state(|st| {
            let now = st.now_str();
            let cap = json!({"cpu": "32", "memory": "256Gi", "pods": "110", GPU: gpus.to_string()});
            st.insert(id("nodes"), json!({
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {},
                "status": {"capacity": cap, "allocatable": cap, "conditions": [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastTransitionTime": now, "lastHeartbeatTime": now}
                ]}
            }), "sim");
        });
    }

    /// The node stops reporting: `Ready=Unknown`, the unreachable taints; its pods are
    /// evicted by the taint manager after 300 s of virtual time and stay Terminating.
    pub fn lose_node(&self, name: &str) -> bool {
        self.with_state(|st| {
            let key = Key::new(id("nodes"), "", name);
            let Some(mut n) = st.store.get(&key).cloned() else { return false };
            let now = st.now_str();
            set_condition(
                &mut n,
                "Ready",
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
                &now,
            );
            n["spec"]["taints"] = json!([
                {"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": now},
                {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": now},
            ]);
            registry::write(st, &key, n, KUBE_CONTROLLER_MANAGER);
            let pods: Vec<Key> = st
                .store
                .list(id("pods"), "")
                .into_iter()
                .filter(|(_, p)| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(name))
                .map(|(k, _)| k.clone())
                .collect();
            for k in pods {
                let Some(mut p) = st.store.get(&k).cloned() else { continue };
                set_condition(&mut p, "Ready", "False", "NodeNotReady", "", &now);
                registry::write(st, &k, p, KUBE_CONTROLLER_MANAGER);
            }
            true
        })
    }

    /// The Node object is deleted; pod GC then fails and removes its pods.
    pub fn delete_node(&self, name: &str) -> bool {
        self.with_state(|st| {
            registry::delete(st, &Key::new(id("nodes"), "", name), &DeleteOptions::default())
                .is_ok()
        })
    }

    /// The administrator taints the node `out-of-service`; pod GC then removes its
    /// Terminating pods.
    pub fn taint_out_of_service(&self, name: &str) -> bool {
        self.with_state(|st| {
            let key = Key::new(id("nodes"), "", name);
            let Some(mut n) = st.store.get(&key).cloned() else { return false };
            let now = st.now_str();
            let mut taints = n.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
            taints.push(json!({"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute", "timeAdded": now}));
            n["spec"]["taints"] = json!(taints);
            registry::write(st, &key, n, ADMINISTRATOR);
            true
        })
    }
}
