//! Kueue-mode dumps (file names start `kueue-`): the admission gate, holds on the
//! Workload, evictions by reason, quota, admission checks and readmission.

use serde_json::{Value, json};

use super::k8s::*;
use super::scene::Scene;

const GATED_BY: &str = "/metadata/annotations/kueue.x-k8s.io~1admission-gated-by";
const HOLD: &str = "/metadata/annotations/dispatch.phpboyscout.uk~1hold-instance";
const CONDS: &str = "/status/conditions";

/// Kueue has suspended the TrainJob and the Workload is not admitted.
fn not_admitted(s: &mut Scene, quota: Value) {
    set(&mut s.tj, "/spec/suspend", json!(true));
    put_cond(
        &mut s.tj,
        CONDS,
        cond("Suspended", "True", "Suspended", "TrainJob is suspended", "10:20:00"),
    );
    let w = s.wl.as_mut().unwrap();
    remove(w, "/status/admission");
    put_cond(
        w,
        CONDS,
        cond("Admitted", "False", "NoReservation", "The workload has no reservation", "10:20:00"),
    );
    put_cond(w, CONDS, quota);
    s.pods.clear();
}

fn evicted(reason: &str, message: &str) -> Scene {
    let mut s = Scene::kueue_running();
    not_admitted(
        &mut s,
        cond("QuotaReserved", "False", "Pending", "The workload is pending", "10:20:00"),
    );
    let w = s.wl.as_mut().unwrap();
    put_cond(w, CONDS, cond("Evicted", "True", reason, message, "10:20:00"));
    put_cond(w, CONDS, cond("Requeued", "True", reason, message, "10:20:00"));
    set(w, "/status/admissionChecks/0/state", json!("Retry"));
    set(
        w,
        "/status/admissionChecks/0/message",
        json!("evicted without dispatch's order: waiting for a Release"),
    );
    s
}

fn gated() -> Scene {
    let mut s = Scene::kueue_running();
    set(&mut s.tj, GATED_BY, json!("dispatch.phpboyscout.uk/start"));
    not_admitted(
        &mut s,
        cond(
            "QuotaReserved",
            "False",
            "AdmissionGated",
            "The workload is gated by: dispatch.phpboyscout.uk/start",
            "10:00:01",
        ),
    );
    set(s.wl.as_mut().unwrap(), GATED_BY, json!("dispatch.phpboyscout.uk/start"));
    set(s.wl.as_mut().unwrap(), "/status/admissionChecks/0/state", json!("Pending"));
    set(s.wl.as_mut().unwrap(), "/status/admissionChecks/0/message", json!(""));
    s.js = None;
    s
}

/// Every Kueue case: (file stem, dump).
pub fn all() -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    out.push(("kueue-running", Scene::kueue_running().dump()));
    // Admitted with no flavor, so with no admission check (a job that requests none of
    // its ClusterQueue's resources): its pods carry no admission count.
    let mut s = Scene::kueue_running();
    let wl = s.wl.as_mut().unwrap();
    remove(wl, "/status/admissionChecks");
    set(wl, "/status/admission/podSetAssignments/0/flavors", json!({}));
    for pod in &mut s.pods {
        remove(pod, "/metadata/annotations/dispatch.phpboyscout.uk~1admission");
    }
    out.push(("kueue-admitted-without-the-check", s.dump()));
    out.push(("kueue-gated", gated().dump()));
    let mut s = gated();
    set(s.wl.as_mut().unwrap(), HOLD, json!("1"));
    set(s.wl.as_mut().unwrap(), "/spec/active", json!(false));
    out.push(("kueue-gated-and-held", s.dump()));
    let mut s = evicted("Deactivated", "The workload is deactivated");
    set(s.wl.as_mut().unwrap(), HOLD, json!("1"));
    set(s.wl.as_mut().unwrap(), "/spec/active", json!(false));
    push(
        s.wl.as_mut().unwrap(),
        "/metadata/managedFields",
        managed("dispatch-kf", "Update", "10:19:59", "active"),
    );
    out.push(("kueue-held", s.dump()));
    let mut s = evicted("Deactivated", "The workload is deactivated");
    set(s.wl.as_mut().unwrap(), "/spec/active", json!(false));
    push(
        s.wl.as_mut().unwrap(),
        "/metadata/managedFields",
        managed("kubectl-edit", "Update", "10:19:58", "active"),
    );
    out.push(("kueue-admin-held", s.dump()));
    let mut s = Scene::kueue_running().suspended("10:25:00");
    push(&mut s.tj, "/metadata/managedFields", managed("ops-bot", "Apply", "10:24:59", "suspend"));
    out.push(("kueue-admin-suspended-trainjob", s.dump()));
    let mut s = evicted(
        "Preempted",
        "Preempted to accommodate a workload (UID: 8a1c, JobUID: 77f2) due to prioritization in the ClusterQueue",
    );
    put_cond(
        s.wl.as_mut().unwrap(),
        CONDS,
        cond(
            "Preempted",
            "True",
            "InClusterQueue",
            "Preempted to accommodate a workload (UID: 8a1c, JobUID: 77f2) due to prioritization in the ClusterQueue",
            "10:20:00",
        ),
    );
    out.push(("kueue-preempted", s.dump()));
    out.push((
        "kueue-requeued-pods-ready-timeout",
        evicted("PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/trainjob-x").dump(),
    ));
    out.push((
        "kueue-node-failures",
        evicted("NodeFailures", "Workload was evicted as there were not enough healthy nodes")
            .dump(),
    ));
    let mut s = Scene::kueue_running();
    not_admitted(
        &mut s,
        cond(
            "QuotaReserved",
            "False",
            "Pending",
            "couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu in flavor h100, 16 more needed",
            "10:00:02",
        ),
    );
    s.js = None;
    out.push(("kueue-no-quota", s.dump()));
    let mut s = Scene::kueue_running();
    not_admitted(
        &mut s,
        cond(
            "QuotaReserved",
            "True",
            "QuotaReserved",
            "Quota reserved in ClusterQueue gpu-cq",
            "10:00:02",
        ),
    );
    set(s.wl.as_mut().unwrap(), "/status/admissionChecks/0/state", json!("Pending"));
    set(
        s.wl.as_mut().unwrap(),
        "/status/admissionChecks/0/message",
        json!("waiting for dispatch-kf-gate"),
    );
    s.js = None;
    out.push(("kueue-admission-check-pending", s.dump()));
    let mut s = Scene::kueue_running();
    set(&mut s.tj, "/spec/suspend", json!(true));
    s.wl = None;
    s.js = None;
    s.pods.clear();
    out.push(("kueue-no-workload", s.dump()));
    let mut s = Scene::kueue_running();
    s.pods = vec![pod(&s.tj, 0, 2, 0), pod(&s.tj, 1, 2, 0)];
    s.captured = vec![pod(&s.tj, 0, 1, 0)];
    disrupt(&mut s.captured[0], "PreemptionByScheduler", "preempted", "10:20:00");
    set(
        s.wl.as_mut().unwrap(),
        "/status/admissionChecks/0/message",
        json!("admission 2 permitted"),
    );
    out.push(("kueue-readmitted-a2", s.dump()));
    let mut s = Scene::kueue_running();
    set(s.wl.as_mut().unwrap(), "/metadata/ownerReferences/0/uid", json!(uid("someone-else")));
    out.push(("kueue-foreign-workload-owner", s.dump()));
    let mut s = evicted("Deactivated", "The workload is deactivated");
    set(s.wl.as_mut().unwrap(), "/spec/active", json!(false));
    set(s.wl.as_mut().unwrap(), HOLD, json!("-1"));
    out.push(("kueue-hold-instance-malformed", s.dump()));
    out
}
