//! The heavy dump: objects as `kubectl get -o json --show-managed-fields` prints them
//! from a real cluster, so most of every object is what classification skips. The
//! shapes are those of the TrainJob, JobSet, pods and Node of the cluster dumps under
//! `fixtures/dumps/` (`cluster-current-oom.json`, `cluster-current-exit-0.json`, `cluster-current-exit-1.json`,
//! taken from a live control plane), with the managedFields a server keeps for them put
//! back (kubectl hides them unless asked): one entry for the writer of metadata and
//! spec, one for the writer of status, each listing the fields it owns.
//!
//! The counts are the lean dump's: 2,000 TrainJobs, each with its JobSet and 8 pods,
//! and 500 Nodes at 1x, about 130 MB; every copy has its own job id, names and UIDs.

use std::path::Path;

use dispatch_kf_model::keys;

use serde_json::{Map, Value, json};

use super::list::{ListWriter, fake_uid, job_id, job_name};
use super::{BASE_JOBS, BASE_NODES, PODS_PER_JOB};
use crate::run::project_root;

/// The cluster dumps the shapes come from, taken in turn by successive jobs.
const SOURCES: [&str; 3] =
    ["cluster-current-oom.json", "cluster-current-exit-0.json", "cluster-current-exit-1.json"];

/// Writes the heavy dump of `scale` times the base size; returns its size in bytes.
pub(crate) fn generate(path: &Path, scale: usize) -> std::io::Result<u64> {
    let jobs: Vec<JobShapes> =
        SOURCES.iter().map(|f| JobShapes::load(f)).collect::<Result<_, _>>()?;
    let node = jobs[0].node.clone();
    let mut list = ListWriter::create(path)?;
    let nodes = BASE_NODES * scale;
    for j in 0..BASE_JOBS * scale {
        let shapes = &jobs[j % jobs.len()];
        let id = job_id(j);
        let mut holes =
            vec![id.clone(), id.to_lowercase(), String::new(), String::new(), String::new()];
        holes.extend((0..shapes.uids).map(|k| fake_uid(j as u64, 10 + k as u64)));
        list.item(&shapes.train_job.fill(&holes))?;
        list.item(&shapes.job_set.fill(&holes))?;
        for rank in 0..PODS_PER_JOB {
            holes[POD_NAME] = format!("{}-node-0-{rank}-x7k2p", job_name(j));
            holes[OWN_UID] = fake_uid(j as u64, 100 + rank as u64);
            holes[NODE_NAME] = format!("kwok-node-{}", (j * PODS_PER_JOB + rank) % nodes);
            list.item(&shapes.pods[rank % shapes.pods.len()].fill(&holes))?;
        }
    }
    for n in 0..nodes {
        let mut holes = vec![String::new(); 5];
        holes[NODE_NAME] = format!("kwok-node-{n}");
        holes[OWN_UID] = fake_uid(n as u64, 9);
        list.item(&node.fill(&holes))?;
    }
    list.finish(path)
}

/// The holes of a [`Shape`], by index; UIDs follow from [`FIRST_UID`].
const ID_UPPER: usize = 0;
const ID_LOWER: usize = 1;
const POD_NAME: usize = 2;
const OWN_UID: usize = 3;
const NODE_NAME: usize = 4;
const FIRST_UID: usize = 5;

/// One object's JSON text cut where each copy differs: literal text and holes, in turn.
#[derive(Clone)]
struct Shape(Vec<String>);

impl Shape {
    /// The text with holes written `@@<index>@@`.
    fn parse(text: &str) -> Shape {
        Shape(text.split("@@").map(str::to_owned).collect())
    }

    /// The text with each hole filled from `holes`.
    fn fill(&self, holes: &[String]) -> String {
        let mut out = String::with_capacity(self.0.iter().map(String::len).sum::<usize>() + 256);
        for (i, part) in self.0.iter().enumerate() {
            match i % 2 {
                0 => out.push_str(part),
                _ => out.push_str(&holes[part.parse::<usize>().unwrap_or(0)]),
            }
        }
        out
    }
}

/// The shapes of one cluster dump's job: its TrainJob, JobSet, pods and a Node.
struct JobShapes {
    train_job: Shape,
    job_set: Shape,
    pods: Vec<Shape>,
    node: Shape,
    /// How many distinct UIDs the job's objects mention.
    uids: usize,
}

impl JobShapes {
    fn load(file: &str) -> std::io::Result<JobShapes> {
        let path = project_root().join("fixtures/dumps").join(file);
        let dump: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
        let items = dump["items"].as_array().cloned().unwrap_or_default();
        let of_kind = |kind: &'static str| items.iter().filter(move |i| i["kind"] == kind);
        let tj = of_kind("TrainJob").next().ok_or_else(|| missing(file, "TrainJob"))?;
        let id = tj["metadata"]["labels"][keys::LABEL_JOB_ID].as_str().unwrap_or("");
        let mut uids: Vec<String> = Vec::new();
        for item in of_kind("TrainJob").chain(of_kind("JobSet")).chain(of_kind("Pod")) {
            collect_uids(item, &mut uids);
        }
        // Each pod's own name, UID and Node become holes first: they contain the job id.
        let pod = |p: &Value| {
            let mut text = with_managed_fields(p);
            for (value, hole) in [
                (p["metadata"]["name"].as_str(), POD_NAME),
                (p["metadata"]["uid"].as_str(), OWN_UID),
                (p["spec"]["nodeName"].as_str(), NODE_NAME),
            ] {
                if let Some(v) = value {
                    text = text.replace(&format!("\"{v}\""), &format!("\"@@{hole}@@\""));
                }
            }
            text
        };
        let job = |text: String| {
            let mut text = text.replace(id, &format!("@@{ID_UPPER}@@"));
            text = text.replace(&id.to_lowercase(), &format!("@@{ID_LOWER}@@"));
            for (k, uid) in uids.iter().enumerate() {
                text = text.replace(uid, &format!("@@{}@@", FIRST_UID + k));
            }
            Shape::parse(&text)
        };
        let js = of_kind("JobSet").next().ok_or_else(|| missing(file, "JobSet"))?;
        let node = of_kind("Node").next().ok_or_else(|| missing(file, "Node"))?;
        let mut node_text = with_managed_fields(node);
        for (value, hole) in [
            (node["metadata"]["name"].as_str(), NODE_NAME),
            (node["metadata"]["uid"].as_str(), OWN_UID),
        ] {
            if let Some(v) = value {
                node_text = node_text.replace(&format!("\"{v}\""), &format!("\"@@{hole}@@\""));
            }
        }
        Ok(JobShapes {
            train_job: job(with_managed_fields(tj)),
            job_set: job(with_managed_fields(js)),
            pods: of_kind("Pod").map(|p| job(pod(p))).collect(),
            node: Shape::parse(&node_text),
            uids: uids.len(),
        })
    }
}

fn missing(file: &str, kind: &str) -> std::io::Error {
    std::io::Error::other(format!("fixtures/dumps/{file} has no {kind}"))
}

/// Every UID an object names (its own and its owners'), once each, in order.
fn collect_uids(item: &Value, out: &mut Vec<String>) {
    let meta = &item["metadata"];
    let owners = meta["ownerReferences"].as_array().into_iter().flatten();
    for uid in std::iter::once(&meta["uid"]).chain(owners.map(|o| &o["uid"])) {
        if let Some(uid) = uid.as_str().filter(|u| !out.iter().any(|o| o == u)) {
            out.push(uid.to_owned());
        }
    }
}

/// The object's compact JSON with the managedFields a server keeps for it: who wrote
/// metadata and spec, and who writes status, each owning the fields it wrote.
fn with_managed_fields(item: &Value) -> String {
    let mut item = item.clone();
    let (spec_manager, status_manager) = match item["kind"].as_str() {
        Some("TrainJob") => ("dispatch-kf", "trainer-controller-manager"),
        Some("JobSet") => ("trainer-controller-manager", "jobset-controller-manager"),
        Some("Pod") => ("kube-controller-manager", "kubelet"),
        _ => ("kubelet", "kubelet"),
    };
    let time = item["metadata"]["creationTimestamp"].clone();
    let api = item["apiVersion"].clone();
    let mut meta_fields = Map::new();
    for (k, v) in item["metadata"].as_object().into_iter().flatten() {
        if !matches!(
            k.as_str(),
            "name" | "namespace" | "uid" | "resourceVersion" | "creationTimestamp" | "generation"
        ) {
            meta_fields.insert(format!("f:{k}"), fields_of(v));
        }
    }
    let owned = json!({"f:metadata": meta_fields, "f:spec": fields_of(&item["spec"])});
    let entries = json!([
        {"apiVersion": api, "fieldsType": "FieldsV1", "fieldsV1": owned, "manager": spec_manager,
         "operation": "Update", "time": time},
        {"apiVersion": api, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": fields_of(&item["status"])},
         "manager": status_manager, "operation": "Update", "subresource": "status", "time": time},
    ]);
    if let Some(meta) = item["metadata"].as_object_mut() {
        meta.insert("managedFields".to_owned(), entries);
    }
    item.to_string()
}

/// A field set as fieldsV1 writes it: `f:<key>` per object key, `k:{..}` per list
/// element with a name or type, `{}` for a leaf.
fn fields_of(value: &Value) -> Value {
    let mut out = Map::new();
    match value {
        Value::Object(map) => {
            out.insert(".".to_owned(), json!({}));
            for (k, v) in map {
                out.insert(format!("f:{k}"), fields_of(v));
            }
        }
        Value::Array(items) => {
            for item in items {
                let key = ["name", "type", "key"].iter().find_map(|k| Some((*k, item.get(*k)?)));
                if let Some((k, v)) = key {
                    out.insert(format!("k:{{\"{k}\":{v}}}"), fields_of(item));
                }
            }
        }
        _ => {}
    }
    Value::Object(out)
}
