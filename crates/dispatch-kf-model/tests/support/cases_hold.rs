//! Plain-mode dumps of the gate and the holds: gated, gated and held, held (in force
//! while suspended and while not), and an administrator's suspension.

use serde_json::{Value, json};

use super::k8s::*;
use super::scene::Scene;

const HOLD: &str = "/metadata/annotations/dispatch.phpboyscout.uk~1hold-instance";

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
    out
}
