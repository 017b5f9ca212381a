//! Plain-mode dumps of foreign objects (one per row of the foreign table), stripped
//! labels (which contradict nothing) and orphans of each kind.

use serde_json::{Value, json};

use super::k8s::*;
use super::scene::Scene;

const OTHER_JOB: &str = "01JDQ5A0000000000000000000";

/// Every case: (file stem, dump).
pub fn all() -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let mut s = Scene::running();
    set(&mut s.tj, "/metadata/labels/dispatch.phpboyscout.uk~1job-id", json!(OTHER_JOB));
    out.push(("foreign-job-id-label", s.dump()));
    let mut s = Scene::running();
    set(&mut s.tj, "/metadata/labels/dispatch.phpboyscout.uk~1submission", json!("7"));
    out.push(("foreign-submission-label", s.dump()));
    let mut s = Scene::running();
    s.tj["spec"]["runtimeRef"] = json!({"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "torch-distributed"});
    out.push(("foreign-runtime-ref", s.dump()));
    let mut s = Scene::running();
    s.tj["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    out.push(("foreign-managed-by", s.dump()));
    let mut s = Scene::running();
    set(s.js.as_mut().unwrap(), "/metadata/ownerReferences/0/uid", json!(uid("someone-else")));
    out.push(("foreign-jobset-controller", s.dump()));
    let mut s = Scene::running();
    set(&mut s.pods[0], "/metadata/labels/jobset.sigs.k8s.io~1jobset-name", json!("other-jobset"));
    set(&mut s.pods[1], "/metadata/labels/dispatch.phpboyscout.uk~1submission", json!("2"));
    out.push(("foreign-pod-labels", s.dump()));
    let mut s = Scene::running().suspended("10:20:00");
    set(&mut s.tj, "/metadata/annotations/dispatch.phpboyscout.uk~1hold-instance", json!("02"));
    out.push(("foreign-hold-instance-malformed", s.dump()));
    let mut s = Scene::running();
    s.tj["metadata"]["name"] = json!("my-own-trainjob");
    s.js = None;
    s.pods.clear();
    out.push(("foreign-name", s.dump()));
    let mut s = Scene::running();
    for v in [&mut s.tj].into_iter().chain(s.pods.iter_mut()) {
        for key in ["job-id", "submission", "managed-by"] {
            remove(v, &format!("/metadata/labels/dispatch.phpboyscout.uk~1{key}"));
        }
    }
    out.push(("labels-removed", s.dump()));
    let mut s = Scene::running();
    let tj = s.tj.take();
    let mut gone = s.pods.remove(1);
    terminate(&mut gone, 143, "Error", "", "11:00:01");
    s.pods.push(gone);
    s.nodes.clear();
    let dump = {
        let mut items: Vec<Value> = s.js.into_iter().chain(s.rt).chain(s.pods).collect();
        let stray = pod(&tj, 5, 1, 0);
        let mut stray = stray;
        remove(&mut stray, "/metadata/labels/jobset.sigs.k8s.io~1jobset-name");
        terminating(&mut stray, "11:00:00");
        items.push(stray);
        list(items)
    };
    out.push(("orphans-of-a-deleted-trainjob", dump));
    let mut s = Scene::running();
    let old_uid = uid("trainjob-1-previous");
    for v in [s.js.as_mut().unwrap(), s.rt.as_mut().unwrap()] {
        set(v, "/metadata/ownerReferences/0/uid", json!(old_uid));
    }
    put_cond(
        s.js.as_mut().unwrap(),
        "/status/conditions",
        cond("Completed", "True", "AllJobsCompleted", "jobset completed successfully", "09:59:00"),
    );
    s.pods.clear();
    out.push(("orphans-of-an-earlier-uid", s.dump()));
    let mut rt = runtime_copy(&train_job(3));
    remove(&mut rt, "/metadata/ownerReferences");
    out.push(("orphan-runtime-copy-without-owner", list(vec![rt])));
    out
}
