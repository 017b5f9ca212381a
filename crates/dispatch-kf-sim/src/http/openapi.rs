//! OpenAPI v3 as the apiserver serves it: an index at `/openapi/v3` naming one document
//! per served group-version, and each document at `/openapi/v3/api/v1` or
//! `/openapi/v3/apis/<group>/<version>`, with a path per resource and a schema per kind
//! ([`crate::plain::schema`]).
//!
//! kubectl reads these twice. `kubectl explain` finds the kind's schema by its
//! `x-kubernetes-group-version-kind`. `kubectl apply` and `create` look for a
//! `fieldValidation` parameter on the kind's PATCH operation: finding it, they leave
//! field validation to the server and send `fieldValidation=Strict`, which the sim
//! honours on every write.

use serde_json::{Map, Value, json};

use crate::plain::resources::{RESOURCES, Resource};
use crate::plain::schema::Releases;
use crate::plain::schema::{self, Shape};

/// The OpenAPI document at `path` (`/openapi/v3...`), or `None` (then 404).
pub(crate) fn document(
    path: &str,
    served: impl Fn(&str) -> bool,
    releases: &Releases,
) -> Option<Value> {
    let rest = path.trim_end_matches('/').strip_prefix("/openapi/v3")?;
    if rest.is_empty() {
        return Some(index(served, releases));
    }
    let gv = rest.strip_prefix("/api/").or_else(|| rest.strip_prefix("/apis/"))?;
    served(gv).then(|| of_group_version(gv, releases)).flatten()
}

/// The document of one group-version, if any resource is of it.
fn of_group_version(gv: &str, releases: &Releases) -> Option<Value> {
    let resources: Vec<&Resource> = RESOURCES.iter().filter(|r| r.group_version() == gv).collect();
    (!resources.is_empty()).then(|| group_version(&resources, releases))
}

/// `/openapi/v3`: each served group-version and where its document is, with a hash
/// of the document as the apiserver gives one (clients cache by it).
fn index(served: impl Fn(&str) -> bool, releases: &Releases) -> Value {
    let mut paths = Map::new();
    for r in RESOURCES.iter().filter(|r| served(&r.group_version())) {
        let at = relative(r);
        if paths.contains_key(&at) {
            continue;
        }
        let doc = of_group_version(&r.group_version(), releases).unwrap_or_default();
        let hash = fnv1a(doc.to_string().as_bytes());
        let url = format!("/openapi/v3/{at}?hash={hash:016X}");
        paths.insert(at, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// `api/v1` or `apis/<group>/<version>`.
fn relative(r: &Resource) -> String {
    if r.group.is_empty() {
        format!("api/{}", r.version)
    } else {
        format!("apis/{}", r.group_version())
    }
}

/// The document of one group-version's resources.
fn group_version(resources: &[&Resource], releases: &Releases) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for r in resources {
        let name = schema_name(r);
        let mut kind = to_openapi(&schema::of_kind(r.kind));
        for (parent, field) in schema::not_in_release(r.kind, releases) {
            if let Some(p) = kind["properties"][*parent]["properties"].as_object_mut() {
                p.remove(*field);
            }
        }
        kind["description"] =
            json!(format!("{} ({}), as the simulated cluster serves it.", r.kind, r.api_version()));
        kind["x-kubernetes-group-version-kind"] =
            json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
        schemas.insert(name.clone(), kind);
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let op = |action: &str, writes: bool| {
            let mut parameters = vec![query("dryRun"), query("fieldManager")];
            if writes {
                parameters.push(query("fieldValidation"));
            }
            json!({
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": parameters,
                "responses": {"200": {"description": "OK",
                    "content": {"application/json": {"schema": reference}}}},
            })
        };
        let base = match (r.group.is_empty(), r.namespaced) {
            (true, true) => format!("/api/{}/namespaces/{{namespace}}/{}", r.version, r.plural),
            (true, false) => format!("/api/{}/{}", r.version, r.plural),
            (false, true) => {
                format!("/apis/{}/namespaces/{{namespace}}/{}", r.group_version(), r.plural)
            }
            (false, false) => format!("/apis/{}/{}", r.group_version(), r.plural),
        };
        let verbs = |v: &str| r.verbs.contains(&v);
        let mut collection = Map::new();
        if verbs("list") {
            collection.insert("get".into(), op("list", false));
        }
        if verbs("create") {
            collection.insert("post".into(), op("post", true));
        }
        let mut item = Map::new();
        for (method, verb, action, writes) in [
            ("get", "get", "get", false),
            ("put", "update", "put", true),
            ("patch", "patch", "patch", true),
            ("delete", "delete", "delete", false),
        ] {
            if verbs(verb) {
                item.insert(method.into(), op(action, writes));
            }
        }
        if r.status {
            let status: Map<String, Value> = ["get", "put", "patch"]
                .into_iter()
                .filter_map(|m| item.get(m).map(|o| (m.to_owned(), o.clone())))
                .collect();
            paths.insert(format!("{base}/{{name}}/status"), Value::Object(status));
        }
        if !collection.is_empty() {
            paths.insert(base.clone(), Value::Object(collection));
        }
        if !item.is_empty() {
            paths.insert(format!("{base}/{{name}}"), Value::Object(item));
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "dispatch-kf-sim", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn query(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

/// A kind's schema name, its group reversed as Kubernetes names them:
/// `org.kubeflow.trainer.v1alpha1.TrainJob`, `io.k8s.api.core.v1.Pod`.
fn schema_name(r: &Resource) -> String {
    if r.group.is_empty() {
        return format!("io.k8s.api.core.{}.{}", r.version, r.kind);
    }
    let reversed: Vec<&str> = r.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), r.version, r.kind)
}

/// A shape as an OpenAPI schema.
pub(crate) fn to_openapi(shape: &Shape) -> Value {
    let mut out = json!({"type": shape.openapi_type()});
    match shape {
        Shape::Time => out["format"] = json!("date-time"),
        Shape::Int => out["format"] = json!("int64"),
        Shape::List(item) => out["items"] = to_openapi(item),
        Shape::Map(item) => out["additionalProperties"] = to_openapi(item),
        Shape::Object(fields) | Shape::Open(fields) => {
            let properties: Map<String, Value> = fields
                .iter()
                .map(|f| {
                    let mut p = to_openapi(&f.shape);
                    p["description"] = json!(f.about);
                    (f.name.to_owned(), p)
                })
                .collect();
            if !properties.is_empty() {
                out["properties"] = Value::Object(properties);
            }
            if matches!(shape, Shape::Open(_)) {
                out["x-kubernetes-preserve-unknown-fields"] = json!(true);
            }
        }
        Shape::Str | Shape::Bool => {}
    }
    out
}

/// FNV-1a, 64 bits: a document's stable hash for the index's URLs.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEWEST: Releases =
        Releases { trainer_runtime_patches: true, kueue_admission_gated_by: true };

    #[test]
    fn the_index_names_each_served_group_version_once() {
        let index = document("/openapi/v3", |gv| gv != "kueue.x-k8s.io/v1beta2", &NEWEST).unwrap();
        let paths = index["paths"].as_object().unwrap();
        assert!(paths.contains_key("api/v1"));
        assert!(paths.contains_key("apis/trainer.kubeflow.org/v1alpha1"));
        assert!(!paths.contains_key("apis/kueue.x-k8s.io/v1beta2"));
        let url = paths["api/v1"]["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
    }

    #[test]
    fn a_document_declares_the_kind_and_the_field_validation_of_its_patch() {
        let doc =
            document("/openapi/v3/apis/trainer.kubeflow.org/v1alpha1", |_| true, &NEWEST).unwrap();
        let train_job = &doc["components"]["schemas"]["org.kubeflow.trainer.v1alpha1.TrainJob"];
        assert_eq!(train_job["x-kubernetes-group-version-kind"][0]["kind"], "TrainJob");
        let spec = &train_job["properties"]["spec"]["properties"];
        assert_eq!(spec["trainer"]["properties"]["numNodes"]["type"], "integer");
        assert_eq!(spec["suspend"]["type"], "boolean");
        let patch = &doc["paths"]["/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}"]
            ["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "TrainJob");
        assert!(
            patch["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation")
        );
        assert!(document("/openapi/v3/apis/nothing.example/v1", |_| true, &NEWEST).is_none());
        assert!(document("/openapi/v3/apis/kueue.x-k8s.io/v1beta2", |_| false, &NEWEST).is_none());
    }

    /// The schema served is the release's: Trainer v2.1's TrainJob spec has no
    /// runtimePatches, the newer ones' has.
    #[test]
    fn a_trainer_v2_1_serves_a_train_job_without_runtime_patches() {
        let spec = |releases: &Releases| {
            let path = "/openapi/v3/apis/trainer.kubeflow.org/v1alpha1";
            let doc = document(path, |_| true, releases).unwrap();
            doc["components"]["schemas"]["org.kubeflow.trainer.v1alpha1.TrainJob"]["properties"]
                ["spec"]["properties"]
                .clone()
        };
        let v2_1 = Releases { trainer_runtime_patches: false, ..NEWEST };
        assert!(spec(&NEWEST).get("runtimePatches").is_some());
        assert!(spec(&v2_1).get("runtimePatches").is_none());
        assert!(spec(&v2_1).get("suspend").is_some());
    }
}
