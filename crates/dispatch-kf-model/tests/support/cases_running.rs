//! Plain-mode dumps of running objects: lost nodes (with and without permission to read
//! Nodes), restarts, unschedulable ranks, the start-up notes and an unknown condition.

use serde_json::{Value, json};

use super::k8s::*;
use super::scene::Scene;

fn node_not_ready() -> Scene {
    let mut s = Scene::running();
    put_cond(
        &mut s.nodes[1],
        "/status/conditions",
        cond(
            "Ready",
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
            "10:40:00",
        ),
    );
    s
}

fn node_gone() -> Scene {
    let mut s = Scene::running();
    s.nodes.truncate(1);
    s
}

/// Every case: (file stem, dump).
pub fn all() -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    out.push(("running", Scene::running().dump()));
    out.push(("running-node-ready-unknown", node_not_ready().dump()));
    out.push(("running-node-ready-unknown-no-nodes", node_not_ready().dump()));
    out.push(("running-node-gone", node_gone().dump()));
    out.push(("running-node-gone-no-nodes", {
        let mut s = node_gone();
        s.nodes.clear();
        s.dump()
    }));
    let mut s = Scene::running();
    put_cond(
        &mut s.nodes[0],
        "/status/conditions",
        cond(
            "Ready",
            "False",
            "KubeletNotReady",
            "container runtime network not ready",
            "10:41:00",
        ),
    );
    out.push(("running-node-ready-false", s.dump()));
    let mut s = Scene::running();
    s.nodes[0]["spec"]["taints"] = json!([{"effect": "NoExecute", "key": "node.kubernetes.io/out-of-service",
        "value": "nodeshutdown", "timeAdded": at("10:45:00")}]);
    out.push(("running-node-out-of-service", s.dump()));
    let mut s = Scene::running();
    disrupt(
        &mut s.pods[1],
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
        "10:46:00",
    );
    terminating(&mut s.pods[1], "10:46:00");
    out.push(("running-node-lost-finding", s.dump()));
    let mut s = Scene::running();
    let old: Vec<Value> = s.pods.drain(..).collect();
    s.pods = vec![pod(&s.tj, 0, 1, 1), pod(&s.tj, 1, 1, 1)];
    for mut p in old {
        terminating(&mut p, "10:35:00");
        terminate(&mut p, 143, "Error", "", "10:35:10");
        s.pods.push(p);
    }
    set(s.js.as_mut().unwrap(), "/status/restarts", json!(1));
    out.push(("running-restart-j1", s.dump()));
    let mut s = Scene::running();
    s.pods = vec![pod(&s.tj, 0, 1, 2), pod(&s.tj, 1, 1, 2)];
    s.captured = vec![pod(&s.tj, 0, 1, 1)];
    terminate(&mut s.captured[0], 1, "Error", "", "10:40:00");
    set(s.js.as_mut().unwrap(), "/status/restarts", json!(2));
    out.push(("running-restart-j2", s.dump()));
    let mut s = Scene::running();
    unschedule(&mut s.pods[1]);
    out.push(("running-unschedulable", s.dump()));
    let mut s = node_gone();
    s.pods.push(pod(&s.tj, 2, 1, 0));
    unschedule(&mut s.pods[2]);
    out.push(("running-node-gone-and-unschedulable", s.dump()));
    let mut s = Scene::running();
    s.js = None;
    s.pods.clear();
    out.push(("running-no-jobset", s.dump()));
    let mut s = Scene::running();
    s.pods.clear();
    out.push(("running-no-pods", s.dump()));
    let mut s = Scene::running();
    set(
        &mut s.pods[0],
        "/status/containerStatuses/0/state",
        json!({"waiting": {"reason": "ImagePullBackOff",
        "message": "Back-off pulling image \"ghcr.io/acme/train:1.4\""}}),
    );
    set(
        &mut s.pods[1],
        "/status/containerStatuses/0/state",
        json!({"waiting": {"reason": "ContainerCreating"}}),
    );
    out.push(("running-waiting-image-pull", s.dump()));
    let mut s = Scene::running();
    s.pods = vec![pod(&s.tj, 0, 2, 0)];
    for rank in 0..10 {
        let mut p = pod(&s.tj, rank, 1, 0);
        terminating(&mut p, "10:50:00");
        s.pods.push(p);
    }
    set(&mut s.tj, "/metadata/annotations/dispatch.phpboyscout.uk~1admission", json!("2"));
    out.push(("running-many-terminating", s.dump()));
    let mut s = Scene::running();
    put_cond(
        &mut s.tj,
        "/status/conditions",
        cond(
            "RuntimePatched",
            "True",
            "PatchApplied",
            "runtime patch applied by the adapter",
            "10:00:07",
        ),
    );
    put_cond(
        &mut s.tj,
        "/status/conditions",
        cond("Created", "False", "JobSetCreated", "", "10:00:07"),
    );
    out.push(("unknown-condition", s.dump()));
    let mut s = Scene::running();
    for p in &mut s.pods {
        remove(p, "/metadata/annotations/dispatch.phpboyscout.uk~1admission");
    }
    out.push(("running-pods-without-admission", s.dump()));
    out
}

fn unschedule(p: &mut Value) {
    put_cond(
        p,
        "/status/conditions",
        cond(
            "PodScheduled",
            "False",
            "Unschedulable",
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
            "10:02:00",
        ),
    );
    set(p, "/status/phase", json!("Pending"));
    remove(p, "/spec/nodeName");
    p["status"]["containerStatuses"] = json!([]);
}
