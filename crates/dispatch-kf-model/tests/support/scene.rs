//! A [`Scene`]: one job's objects, started from a running TrainJob and changed by each
//! case, then written as one dump.

use serde_json::{Value, json};

use super::k8s::*;

/// The objects of one dump.
pub struct Scene {
    pub tj: Value,
    pub js: Option<Value>,
    pub rt: Option<Value>,
    pub wl: Option<Value>,
    pub pods: Vec<Value>,
    pub captured: Vec<Value>,
    pub nodes: Vec<Value>,
    pub extra: Vec<Value>,
}

impl Scene {
    /// Submission 1 running in plain mode: TrainJob, JobSet, runtime copy, two Running
    /// ranks at A=1, J=0 on two Ready Nodes.
    pub fn running() -> Scene {
        let tj = train_job(1);
        Scene {
            js: Some(job_set(&tj)),
            rt: Some(runtime_copy(&tj)),
            wl: None,
            pods: vec![pod(&tj, 0, 1, 0), pod(&tj, 1, 1, 0)],
            captured: Vec::new(),
            nodes: vec![node("gpu-node-0"), node("gpu-node-1")],
            extra: Vec::new(),
            tj,
        }
    }

    /// The same in Kueue mode: the TrainJob carries the queue label and no admission
    /// annotation, and an admitted Workload stands for it.
    pub fn kueue_running() -> Scene {
        let mut s = Scene::running();
        set(&mut s.tj, "/metadata/labels/kueue.x-k8s.io~1queue-name", json!("team-a"));
        remove(&mut s.tj, "/metadata/annotations/dispatch.phpboyscout.uk~1admission");
        s.wl = Some(workload(&s.tj));
        s
    }

    /// Ended: the Failed condition with `reason` and `message` copied from the JobSet.
    pub fn failed(mut self, reason: &str, message: &str, time: &str) -> Scene {
        let c = cond("Failed", "True", reason, message, time);
        put_cond(&mut self.tj, "/status/conditions", c.clone());
        if let Some(js) = &mut self.js {
            put_cond(js, "/status/conditions", c);
            set(js, "/status/terminalState", json!("Failed"));
        }
        self
    }

    /// Suspended: `spec.suspend` true and `Suspended=True` (on the TrainJob and the
    /// JobSet); the pods are gone.
    pub fn suspended(mut self, time: &str) -> Scene {
        set(&mut self.tj, "/spec/suspend", json!(true));
        put_cond(
            &mut self.tj,
            "/status/conditions",
            cond("Suspended", "True", "Suspended", "TrainJob is suspended", time),
        );
        if let Some(js) = &mut self.js {
            set(js, "/spec/suspend", json!(true));
            put_cond(
                js,
                "/status/conditions",
                cond("Suspended", "True", "SuspendedJobs", "jobset is suspended", time),
            );
        }
        self.pods.clear();
        self
    }

    /// Gated in plain mode: created suspended with admission 0, never run.
    pub fn gated() -> Scene {
        let mut s = Scene::running();
        set(&mut s.tj, "/spec/suspend", json!(true));
        set(&mut s.tj, "/metadata/annotations/dispatch.phpboyscout.uk~1admission", json!("0"));
        put_cond(
            &mut s.tj,
            "/status/conditions",
            cond("Suspended", "True", "Suspended", "TrainJob is suspended", "10:00:01"),
        );
        if let Some(js) = &mut s.js {
            set(js, "/spec/suspend", json!(true));
        }
        s.pods.clear();
        s
    }

    /// The dump: a v1 List of every object (with `capturedPods` when any).
    pub fn dump(self) -> Value {
        let mut items = vec![self.tj];
        items.extend(self.js);
        items.extend(self.wl);
        items.extend(self.rt);
        items.extend(self.pods);
        items.extend(self.nodes);
        items.extend(self.extra);
        if self.captured.is_empty() {
            list(items)
        } else {
            list_with_captured(items, self.captured)
        }
    }
}
