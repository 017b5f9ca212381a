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
    out.push(("orphan-pods-of-an-earlier-instance", earlier_instance().dump()));
    out
}

const JOBSET_UID: &str = "/metadata/labels/jobset.sigs.k8s.io~1jobset-uid";

/// The same submission started again after Stop and StopJob: the new instance runs
/// execution 1+0 on gpu-node-1; the earlier one, which had restarted once (1+1, a
/// higher R), left a rank terminating on a lost gpu-node-0 and the evidence a Watch
/// captured. Both carry the earlier JobSet's UID, not the new one's.
fn earlier_instance() -> Scene {
    let mut s = Scene::running();
    let js_uid = s.js.as_ref().unwrap()["metadata"]["uid"].clone();
    for p in &mut s.pods {
        set(p, JOBSET_UID, js_uid.clone());
        set(p, "/spec/nodeName", json!("gpu-node-1"));
    }
    let earlier = json!(uid("jobset-of-the-earlier-instance"));
    let mut left = pod(&s.tj, 0, 1, 1);
    set(&mut left, JOBSET_UID, earlier.clone());
    set(&mut left, "/spec/nodeName", json!("gpu-node-0"));
    terminating(&mut left, "10:00:30");
    let name = format!("{}-node-0-0-e4rl1", s.tj["metadata"]["name"].as_str().unwrap());
    set(&mut left, "/metadata/name", json!(name));
    set(&mut left, "/metadata/uid", json!(uid("pod-of-the-earlier-instance")));
    s.pods.push(left);
    let mut captured = pod(&s.tj, 1, 1, 1);
    set(&mut captured, JOBSET_UID, earlier);
    set(&mut captured, "/spec/nodeName", json!("gpu-node-0"));
    terminate(&mut captured, 137, "OOMKilled", "", "10:00:20");
    s.captured = vec![captured];
    s
}
