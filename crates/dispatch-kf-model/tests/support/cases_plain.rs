//! The plain-mode dumps: one per row of the rule, reason, finding, foreign and
//! situation tables (`docs/classification.md`), plus orphans.

use serde_json::{Value, json};

use super::k8s::*;
use super::scene::Scene;

const FAILED_JOBS: &str = "jobset failed due to one or more job failures";

/// A failed-by-FailedJobs scene whose ranks terminate as `f` says.
fn failed_jobs(f: impl FnOnce(&mut Vec<Value>)) -> Value {
    let mut s = Scene::running().failed("FailedJobs", FAILED_JOBS, "10:30:05");
    f(&mut s.pods);
    s.dump()
}

fn disruption(reason: &str, message: &str) -> Value {
    failed_jobs(|p| {
        disrupt(&mut p[0], reason, message, "10:30:00");
        terminate(&mut p[0], 143, "Error", "", "10:30:02");
        terminate(&mut p[1], 143, "Error", "", "10:30:03");
    })
}

/// Every plain-mode case: (file stem, dump).
pub fn all() -> Vec<(&'static str, Value)> {
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    let mut s = Scene::running();
    let c =
        cond("Complete", "True", "AllJobsCompleted", "jobset completed successfully", "11:00:00");
    put_cond(&mut s.tj, "/status/conditions", c.clone());
    put_cond(s.js.as_mut().unwrap(), "/status/conditions", c);
    for p in &mut s.pods {
        terminate(p, 0, "Completed", "", "10:59:58");
    }
    out.push(("complete", s.dump()));
    out.push((
        "failed-deadline-exceeded",
        Scene::running()
            .failed("DeadlineExceeded", "TrainJob exceeded its active deadline", "12:00:00")
            .dump(),
    ));
    out.push((
        "failed-training-runtime-not-supported",
        Scene::running()
            .failed(
                "TrainingRuntimeNotSupported",
                "TrainingRuntime torch-v1 is not supported",
                "10:00:01",
            )
            .dump(),
    ));
    out.push((
        "failed-other-reason",
        Scene::running()
            .failed(
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                "10:40:00",
            )
            .dump(),
    ));
    out.push((
        "failed-jobs-oom",
        failed_jobs(|p| {
            terminate(&mut p[1], 137, "OOMKilled", "", "10:30:00");
            terminate(
                &mut p[0],
                1,
                "Error",
                "torch.distributed.DistBackendError: NCCL error: remote process exited",
                "10:30:04",
            );
        }),
    ));
    out.push((
        "failed-jobs-preempted-then-sigterm",
        failed_jobs(|p| {
            disrupt(
                &mut p[0],
                "PreemptionByScheduler",
                "default-scheduler: preempting to accommodate a higher priority pod",
                "10:30:00",
            );
            terminate(&mut p[0], 143, "Error", "", "10:30:30");
            terminate(&mut p[1], 143, "Error", "", "10:30:31");
        }),
    ));
    out.push((
        "failed-jobs-tie",
        failed_jobs(|p| {
            terminate(&mut p[0], 1, "Error", "", "10:30:00");
            terminate(&mut p[1], 137, "OOMKilled", "", "10:30:00");
        }),
    ));
    out.push((
        "failed-jobs-tie-same-kind",
        failed_jobs(|p| {
            terminate(&mut p[1], 2, "Error", "", "10:30:00");
            terminate(&mut p[0], 3, "Error", "", "10:30:00");
        }),
    ));
    let mut s = Scene::running().failed("FailedJobs", FAILED_JOBS, "10:30:05");
    s.captured = std::mem::take(&mut s.pods);
    terminate(
        &mut s.captured[0],
        1,
        "Error",
        "Traceback (most recent call last):\n  File \"train.py\", line 9",
        "10:30:00",
    );
    terminate(&mut s.captured[1], 143, "Error", "", "10:30:02");
    out.push(("failed-jobs-captured-only", s.dump()));
    let mut s = Scene::running().failed("FailedJobs", FAILED_JOBS, "10:30:05");
    s.pods.clear();
    out.push(("failed-jobs-no-pods", s.dump()));
    let mut s = Scene::running().failed(
        "ReachedMaxRestarts",
        "jobset failed due to reaching max number of restarts",
        "10:50:00",
    );
    s.pods = vec![pod(&s.tj, 0, 1, 2), pod(&s.tj, 1, 1, 2)];
    terminate(&mut s.pods[0], 1, "Error", "", "10:49:50");
    terminate(&mut s.pods[1], 143, "Error", "", "10:49:55");
    s.captured = vec![pod(&s.tj, 0, 1, 1)];
    terminate(&mut s.captured[0], 137, "OOMKilled", "", "10:40:00");
    out.push(("failed-max-restarts", s.dump()));
    out.push(("failed-policy-action-exit-127", {
        let mut s = Scene::running().failed(
            "FailJobSetFailurePolicyAction",
            "jobset failed due to FailJobSet action in failure policy rule \"no-retry-on-launch\"",
            "10:02:00",
        );
        terminate(
            &mut s.pods[0],
            127,
            "Error",
            "exec: \"torchrun\": executable file not found in $PATH",
            "10:01:30",
        );
        s.dump()
    }));
    for (stem, reason, message) in [
        ("failed-disruption-eviction-api", "EvictionByEvictionAPI", "Eviction API: evicting"),
        (
            "failed-disruption-exclusive-placement",
            "ExclusivePlacementViolation",
            "Pod violated exclusive placement: another JobSet's job runs in the same topology",
        ),
        (
            "failed-disruption-taint-manager",
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
        ),
        ("failed-disruption-pod-gc", "DeletionByPodGC", "PodGC: node no longer exists"),
        (
            "failed-disruption-terminated-by-kubelet",
            "TerminationByKubelet",
            "Pod was terminated in response to imminent node shutdown.",
        ),
        (
            "failed-disruption-other-reason",
            "SomethingNewByKubelet",
            "a reason this adapter does not know",
        ),
    ] {
        out.push((stem, disruption(reason, message)));
    }
    out.push(("failed-prologue-exit-125", failed_jobs(|p| {
        terminate(&mut p[0], 125, "Error", "dispatch-prologue: cannot enter working directory /workspace/run-7: no such file or directory", "10:01:25");
    })));
    out.push((
        "failed-exit-126",
        failed_jobs(|p| {
            terminate(&mut p[1], 126, "Error", "permission denied: ./train.sh", "10:01:25");
        }),
    ));
    out.push(("failed-start-error", failed_jobs(|p| {
        terminate(&mut p[0], 128, "StartError", "failed to create containerd task: failed to create shim task: OCI runtime create failed", "10:01:20");
        terminate(&mut p[1], 127, "ContainerCannotRun", "OCI runtime create failed: exec: no such file", "10:01:21");
    })));
    out.push((
        "failed-container-status-unknown",
        failed_jobs(|p| {
            terminate(
                &mut p[0],
                137,
                "ContainerStatusUnknown",
                "The container could not be located when the pod was terminated",
                "10:30:00",
            );
        }),
    ));
    out.push(("failed-long-message-last-state", failed_jobs(|p| {
        let long = format!("RuntimeError: CUDA error: an illegal memory access was encountered\n{}\nCompile with TORCH_USE_CUDA_DSA to enable device-side assertions.", "CUDA kernel errors might be asynchronously reported at some other API call. ".repeat(5));
        terminate(&mut p[0], 1, "Error", &long, "10:30:00");
        let t = p[0]["status"]["containerStatuses"][0]["state"].take();
        set(&mut p[0], "/status/containerStatuses/0/lastState", t);
        set(&mut p[0], "/status/containerStatuses/0/state", json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container=node"}}));
    })));
    out.extend(super::cases_hold::all());
    out.extend(super::cases_running::all());
    out.extend(super::cases_foreign::all());
    out
}
