//! Plain-mode dumps of the gate and the holds: gated, gated and held, held (in force
//! while suspended and while not), an administrator's suspension, and the gate dispatch
//! closes again once a job has failed (sealed: still failed, its JobSet made again, its
//! pods run again all the same).

use serde_json::{Value, json};

use super::k8s::*;
use super::scene::Scene;

const HOLD: &str = "/metadata/annotations/dispatch.phpboyscout.uk~1hold-instance";
const ENDED: &str = "/metadata/annotations/dispatch.phpboyscout.uk~1ended";

/// The end record dispatch wrote when the job failed on rank 1's exit 1.
fn end_record() -> Value {
    json!(
        r#"{"execution":{"admission":1,"restartAttempt":0,"index":1},"cause":{"kind":"non-zero-exit","provenance":"application","actor":null,"detail":"pod dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1-node-0-1-2e83e: node exited 1: Error; other ranks: dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1-node-0-0-f833b non-zero-exit (node exited 143: Error)","exitCode":1,"at":"2026-11-29T10:29:58Z"}}"#
    )
}

/// A failed job dispatch sealed: suspended, with its record, the failed pods still
/// there.
fn sealed() -> Scene {
    let mut s =
        Scene::running().failed("FailedJobs", "jobset failed due to failed jobs", "10:30:00");
    terminate(&mut s.pods[0], 143, "Error", "", "10:30:00");
    terminate(&mut s.pods[1], 1, "Error", "", "10:29:58");
    set(&mut s.tj, "/spec/suspend", json!(true));
    set(&mut s.tj, ENDED, end_record());
    s
}

/// The sealed job after its JobSet was deleted: the Trainer cleared `Failed` and made a
/// new JobSet, suspended; the failed pods went with the old one.
fn sealed_jobset_made_again() -> Scene {
    let mut s = sealed();
    let conditions = s.tj.pointer_mut("/status/conditions").and_then(Value::as_array_mut);
    conditions.unwrap().retain(|c| c["type"] != "Failed");
    s.js = Some(job_set(&s.tj));
    let mut s = s.suspended("10:31:00");
    if let Some(js) = &mut s.js {
        set(js, "/metadata/uid", json!(uid("jobset-made-again")));
    }
    s
}

/// Every case: (file stem, dump).
pub fn all() -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    out.push(("gated", Scene::gated().dump()));
    let mut s = Scene::gated();
    set(&mut s.tj, HOLD, json!("3"));
    out.push(("gated-and-held", s.dump()));
    let mut s = Scene::running().suspended("10:20:00");
    set(&mut s.tj, HOLD, json!("2"));
    push(
        &mut s.tj,
        "/metadata/managedFields",
        managed("dispatch-kf", "Update", "10:20:00", "suspend"),
    );
    out.push(("held", s.dump()));
    let mut s = Scene::running();
    set(&mut s.tj, HOLD, json!("4"));
    out.push(("held-not-suspended", s.dump()));
    let mut s = Scene::running().suspended("10:20:00");
    push(
        &mut s.tj,
        "/metadata/managedFields",
        managed("kubectl-patch", "Update", "10:19:59", "suspend"),
    );
    out.push(("admin-held", s.dump()));
    let mut s = Scene::running();
    set(&mut s.tj, "/spec/suspend", json!(true));
    s.tj["metadata"]["managedFields"] = json!([]);
    out.push(("admin-held-no-condition-no-manager", s.dump()));
    out.push(("sealed-still-failed", sealed().dump()));
    out.push(("sealed-jobset-made-again", sealed_jobset_made_again().dump()));
    let mut s = sealed_jobset_made_again();
    set(&mut s.tj, "/spec/suspend", json!(false));
    s.pods = vec![pod(&s.tj, 0, 1, 0), pod(&s.tj, 1, 1, 0)];
    out.push(("sealed-pods-run-again", s.dump()));
    out
}
