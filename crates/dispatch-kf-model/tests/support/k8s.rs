//! Builders of real-shaped Kubernetes objects for the generated dumps: a TrainJob as
//! dispatch creates it, its JobSet, pods, Nodes, Workload and runtime copy, with full
//! metadata (UIDs, ownerReferences, JobSet's and Kueue's labels, managedFields where a
//! rule reads them) and helpers to change them.

use serde_json::{Value, json};

/// The job every generated dump is about (unless a case says otherwise).
pub const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";
/// The namespace of every generated object.
pub const NS: &str = "team-a";

/// `HH:MM:SS` on the fixtures' day.
pub fn at(hms: &str) -> String {
    format!("2026-11-29T{hms}Z")
}

/// A deterministic UID from a tag.
pub fn uid(tag: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tag.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let x = format!("{h:016x}{:016x}", h.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15);
    format!("{}-{}-4{}-9{}-{}", &x[0..8], &x[8..12], &x[13..16], &x[17..20], &x[20..32])
}

/// The TrainJob name of submission `n` of [`JOB`].
pub fn name(n: u32) -> String {
    format!("dj-{}-s{n}", JOB.to_lowercase())
}

/// Sets `path` (a JSON pointer) in `v`, creating objects on the way.
pub fn set(v: &mut Value, path: &str, value: Value) {
    let mut cur = v;
    let parts: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if cur.is_array() {
            let k: usize = part.parse().unwrap();
            if last {
                cur[k] = value;
                return;
            }
            cur = &mut cur[k];
            continue;
        }
        if last {
            cur[part.as_str()] = value;
            return;
        }
        if !cur[part.as_str()].is_object() && !cur[part.as_str()].is_array() {
            cur[part.as_str()] = json!({});
        }
        cur = &mut cur[part.as_str()];
    }
}

/// Removes the key at `path` from `v`.
pub fn remove(v: &mut Value, path: &str) {
    let (parent, key) = path.rsplit_once('/').unwrap();
    let key = key.replace("~1", "/");
    if let Some(obj) = v.pointer_mut(parent).and_then(Value::as_object_mut) {
        obj.remove(&key);
    }
}

/// Appends `item` to the array at `path`, creating it.
pub fn push(v: &mut Value, path: &str, item: Value) {
    if v.pointer(path).is_none_or(|a| !a.is_array()) {
        set(v, path, json!([]));
    }
    v.pointer_mut(path).unwrap().as_array_mut().unwrap().push(item);
}

/// A condition.
pub fn cond(kind: &str, status: &str, reason: &str, message: &str, time: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": at(time), "lastProbeTime": null})
}

/// A managedFields entry of `manager` that owns `spec.<field>`, written at `time`.
pub fn managed(manager: &str, operation: &str, time: &str, field: &str) -> Value {
    json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "fieldsType": "FieldsV1",
           "fieldsV1": {"f:spec": {format!("f:{field}"): {}}},
           "manager": manager, "operation": operation, "time": at(time)})
}

/// Submission `n`'s TrainJob, opened (admission 1) and running unsuspended.
pub fn train_job(n: u32) -> Value {
    let name = name(n);
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "annotations": {
                "dispatch.phpboyscout.uk/admission": "1",
                "dispatch.phpboyscout.uk/attempt-token": "1-3f9a2c1b7e4d5a60",
                "dispatch.phpboyscout.uk/comment": format!("dispatch job {JOB} generation 0 submission {n} a=1"),
                "dispatch.phpboyscout.uk/generation": "0"
            },
            "creationTimestamp": at("10:00:00"),
            "generation": 2,
            "labels": {
                "dispatch.phpboyscout.uk/job-id": JOB,
                "dispatch.phpboyscout.uk/managed-by": "dispatch",
                "dispatch.phpboyscout.uk/submission": n.to_string()
            },
            "managedFields": [managed("dispatch-kf", "Update", "10:00:05", "suspend")],
            "name": name,
            "namespace": NS,
            "resourceVersion": "48213",
            "uid": uid(&format!("trainjob-{n}"))
        },
        "spec": {
            "managedBy": "trainer.kubeflow.org/trainjob-controller",
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": name},
            "suspend": false,
            "trainer": {"command": ["python", "train.py"], "image": "ghcr.io/acme/train:1.4", "numNodes": 2}
        },
        "status": {"jobsStatus": [{"active": 2, "failed": 0, "name": "node", "ready": 2, "succeeded": 0, "suspended": 0}]}
    })
}

/// The metadata of an object a TrainJob controls.
fn owned_meta(tj: &Value, name: &str, tag: &str) -> Value {
    json!({
        "creationTimestamp": at("10:00:06"),
        "labels": tj["metadata"]["labels"].clone(),
        "name": name,
        "namespace": NS,
        "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "blockOwnerDeletion": true,
            "controller": true, "kind": "TrainJob", "name": tj["metadata"]["name"].clone(),
            "uid": tj["metadata"]["uid"].clone()}],
        "resourceVersion": "48220",
        "uid": uid(tag)
    })
}

/// The JobSet the Trainer makes for `tj`.
pub fn job_set(tj: &Value) -> Value {
    let name = tj["metadata"]["name"].as_str().unwrap();
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": owned_meta(tj, name, &format!("jobset-{name}")),
        "spec": {"failurePolicy": {"maxRestarts": 3}, "replicatedJobs": [{"name": "node", "replicas": 1}],
                 "suspend": false},
        "status": {"replicatedJobsStatus": [{"active": 1, "failed": 0, "name": "node", "ready": 1, "succeeded": 0, "suspended": 0}],
                   "restarts": 0, "terminalState": null}
    })
}

/// The runtime copy of `tj`.
pub fn runtime_copy(tj: &Value) -> Value {
    let name = tj["metadata"]["name"].as_str().unwrap();
    let mut meta = owned_meta(tj, name, &format!("runtime-{name}"));
    set(
        &mut meta,
        "/annotations",
        json!({"dispatch.phpboyscout.uk/runtime-source": "ClusterTrainingRuntime/torch-distributed"}),
    );
    json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime", "metadata": meta,
           "spec": {"mlPolicy": {"numNodes": 2, "torch": {"numProcPerNode": "auto"}}, "template": {"spec": {}}}})
}

/// Rank `rank` of `tj`'s trainer step at admission `a` and restart attempt `j`, Running
/// on `node-<rank>`.
pub fn pod(tj: &Value, rank: u32, a: u64, j: u64) -> Value {
    let js = tj["metadata"]["name"].as_str().unwrap();
    let name = format!("{js}-node-0-{rank}-{}", &uid(&format!("pod-{js}-{rank}-{a}-{j}"))[0..5]);
    let mut labels = tj["metadata"]["labels"].clone();
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid(&format!("job-{js}-{j}")).as_str()),
        ("batch.kubernetes.io/job-completion-index", rank.to_string().as_str()),
        ("batch.kubernetes.io/job-name", format!("{js}-node-0").as_str()),
        ("jobset.sigs.k8s.io/job-index", "0"),
        ("jobset.sigs.k8s.io/jobset-name", js),
        ("jobset.sigs.k8s.io/replicatedjob-name", "node"),
        ("jobset.sigs.k8s.io/restart-attempt", j.to_string().as_str()),
        ("trainer.kubeflow.org/trainjob-ancestor-step", "trainer"),
    ] {
        labels[k] = json!(v);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {"batch.kubernetes.io/job-completion-index": rank.to_string(),
                            "dispatch.phpboyscout.uk/admission": a.to_string()},
            "creationTimestamp": at("10:01:00"),
            "generateName": format!("{js}-node-0-{rank}-"),
            "labels": labels,
            "name": name,
            "namespace": NS,
            "ownerReferences": [{"apiVersion": "batch/v1", "blockOwnerDeletion": true, "controller": true,
                "kind": "Job", "name": format!("{js}-node-0"), "uid": uid(&format!("job-{js}-{j}"))}],
            "uid": uid(&format!("poduid-{name}"))
        },
        "spec": {
            "containers": [{"name": "node", "image": "ghcr.io/acme/train:1.4", "command": ["torchrun", "train.py"],
                "env": [{"name": "DISPATCH_JOB_ID", "value": JOB}],
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "nodeName": format!("gpu-node-{rank}"),
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler"
        },
        "status": {
            "conditions": [
                cond("PodReadyToStartContainers", "True", "", "", "10:01:05"),
                cond("Initialized", "True", "", "", "10:01:05"),
                cond("Ready", "True", "", "", "10:01:20"),
                cond("ContainersReady", "True", "", "", "10:01:20"),
                cond("PodScheduled", "True", "", "", "10:01:01")
            ],
            "containerStatuses": [{"name": "node", "image": "ghcr.io/acme/train:1.4", "ready": true,
                "restartCount": 0, "started": true, "state": {"running": {"startedAt": at("10:01:19")}}}],
            "hostIP": format!("10.0.1.{}", 10 + rank),
            "phase": "Running",
            "podIP": format!("10.244.{}.7", rank),
            "qosClass": "Burstable",
            "startTime": at("10:01:01")
        }
    })
}

/// The node container of `pod` terminated with `exit`, `reason` and `message` at
/// `time`; the pod is Failed (Succeeded for exit 0).
pub fn terminate(pod: &mut Value, exit: i64, reason: &str, message: &str, time: &str) {
    let mut t = json!({"containerID": "containerd://4f1e0c", "exitCode": exit, "reason": reason,
                       "startedAt": at("10:01:19"), "finishedAt": at(time)});
    if !message.is_empty() {
        t["message"] = json!(message);
    }
    set(pod, "/status/containerStatuses/0/state", json!({"terminated": t}));
    pod["status"]["containerStatuses"][0]["ready"] = json!(false);
    pod["status"]["containerStatuses"][0]["started"] = json!(false);
    set(pod, "/status/phase", json!(if exit == 0 { "Succeeded" } else { "Failed" }));
}

/// Adds `DisruptionTarget=True` with `reason` and `message` at `time` to `pod`.
pub fn disrupt(pod: &mut Value, reason: &str, message: &str, time: &str) {
    push(pod, "/status/conditions", cond("DisruptionTarget", "True", reason, message, time));
}

/// Marks `pod` Terminating since `time`.
pub fn terminating(pod: &mut Value, time: &str) {
    set(pod, "/metadata/deletionTimestamp", json!(at(time)));
    set(pod, "/metadata/deletionGracePeriodSeconds", json!(30));
}

/// A Ready GPU Node.
pub fn node(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "H100"},
                     "name": name, "uid": uid(&format!("node-{name}"))},
        "spec": {"podCIDR": "10.244.0.0/24", "providerID": format!("gce://acme/europe-west4-a/{name}")},
        "status": {"allocatable": {"nvidia.com/gpu": "8"},
            "conditions": [cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available", "09:00:00"),
                           cond("Ready", "True", "KubeletReady", "kubelet is posting ready status", "09:00:00")],
            "nodeInfo": {"kubeletVersion": "v1.33.2"}}
    })
}

/// The Workload Kueue makes for `tj`, admitted.
pub fn workload(tj: &Value) -> Value {
    let tj_name = tj["metadata"]["name"].as_str().unwrap();
    let name = format!("trainjob-{tj_name}-{}", &uid(tj_name)[0..5]);
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "creationTimestamp": at("10:00:01"),
            "labels": {"kueue.x-k8s.io/job-uid": tj["metadata"]["uid"].clone(), "kueue.x-k8s.io/queue-name": "team-a"},
            "managedFields": [managed("kueue-admission", "Update", "10:00:01", "active")],
            "name": name,
            "namespace": NS,
            "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "blockOwnerDeletion": true,
                "controller": true, "kind": "TrainJob", "name": tj_name, "uid": tj["metadata"]["uid"].clone()}],
            "uid": uid(&format!("workload-{tj_name}"))
        },
        "spec": {"active": true, "podSets": [{"count": 2, "name": "node"}], "priority": 0, "queueName": "team-a"},
        "status": {
            "admission": {"clusterQueue": "gpu-cq", "podSetAssignments": [{"count": 2, "name": "node"}]},
            "admissionChecks": [{"name": "dispatch-readmission", "state": "Ready", "message": "admission 1 permitted",
                "lastTransitionTime": at("10:00:03"),
                "podSetUpdates": [{"name": "node", "annotations": {"dispatch.phpboyscout.uk/admission": "1"}}]}],
            "conditions": [
                cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue gpu-cq", "10:00:02"),
                cond("Admitted", "True", "Admitted", "The workload is admitted", "10:00:03")
            ]
        }
    })
}

/// Replaces the condition of type `kind` in the array at `path` (or adds it).
pub fn put_cond(v: &mut Value, path: &str, c: Value) {
    if v.pointer(path).is_none_or(|a| !a.is_array()) {
        set(v, path, json!([]));
    }
    let arr = v.pointer_mut(path).unwrap().as_array_mut().unwrap();
    arr.retain(|x| x["type"] != c["type"]);
    arr.push(c);
}

/// A v1 List of `items`, as kubectl prints it.
pub fn list(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}})
}

/// A v1 List of `items` with the pods a Watch captured.
pub fn list_with_captured(items: Vec<Value>, captured: Vec<Value>) -> Value {
    let mut l = list(items);
    l["capturedPods"] = Value::Array(captured);
    l
}
