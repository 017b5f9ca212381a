//! Discovery documents with the real shapes: `APIVersions` at `/api`, `APIGroupList` at
//! `/apis`, `APIResourceList` at `/api/v1` and `/apis/<group>/<version>`, and `/version`.
//! Group-versions the sim is told not to serve are absent.

use serde_json::{Value, json};

use crate::plain::resources::RESOURCES;

/// Short names kubectl accepts (`kubectl get cm`), as the real resources declare them;
/// any resource not listed has none.
const SHORT_NAMES: &[(&str, &[&str])] = &[
    ("pods", &["po"]),
    ("nodes", &["no"]),
    ("namespaces", &["ns"]),
    ("configmaps", &["cm"]),
    ("events", &["ev"]),
    ("workloads", &["wl"]),
    ("localqueues", &["queue", "queues", "lq"]),
    ("clusterqueues", &["cq"]),
    ("resourceflavors", &["flavor", "flavors", "rf"]),
];

fn short_names(plural: &str) -> &'static [&'static str] {
    SHORT_NAMES.iter().find(|(p, _)| *p == plural).map_or(&[], |(_, s)| s)
}

/// The discovery document at `path`, or `None` (then `404 page not found`).
pub(crate) fn document(path: &str, served: impl Fn(&str) -> bool) -> Option<Value> {
    let path = path.trim_end_matches('/');
    match path {
        "/version" => Some(json!({
            "major": "1", "minor": "33", "gitVersion": "v1.33.0-dispatch-kf-sim",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"
        })),
        "/api" => Some(json!({
            "kind": "APIVersions",
            "versions": if served("v1") { json!(["v1"]) } else { json!([]) },
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
        })),
        "/apis" => {
            let mut groups: Vec<Value> = Vec::new();
            for r in RESOURCES.iter().filter(|r| !r.group.is_empty() && served(&r.group_version()))
            {
                if groups.iter().any(|g| g["name"] == r.group) {
                    continue;
                }
                let gv = json!({"groupVersion": r.group_version(), "version": r.version});
                groups.push(
                    json!({"name": r.group, "versions": [gv.clone()], "preferredVersion": gv}),
                );
            }
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        _ => {
            let gv = path.strip_prefix("/api/").or_else(|| path.strip_prefix("/apis/"))?;
            if !served(gv) {
                return None;
            }
            let mut list = Vec::new();
            for r in RESOURCES.iter().filter(|r| r.group_version() == gv) {
                list.push(json!({
                    "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                    "kind": r.kind, "verbs": r.verbs, "shortNames": short_names(r.plural),
                }));
                if r.status {
                    list.push(json!({
                        "name": format!("{}/status", r.plural), "singularName": "",
                        "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get", "patch", "update"],
                    }));
                }
                if r.kind == "Pod" {
                    list.push(json!({
                        "name": "pods/log", "singularName": "", "namespaced": true,
                        "kind": "Pod", "verbs": ["get"],
                    }));
                }
            }
            if list.is_empty() {
                return None;
            }
            Some(
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
            )
        }
    }
}
