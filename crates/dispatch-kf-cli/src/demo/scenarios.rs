//! The stories: each starts its own cluster, drives the demo's job through the real
//! Backend, and checks that the adapter reports what the story says, failing with what
//! it reported instead.

use std::time::Duration;

use dispatch_core::{CauseKind, Kind, ObjectRef, ObjectState, Provenance, Result};

use dispatch_kf_model::keys;
use dispatch_kf_sim::Propagation;

use super::cluster::NS;
use super::narrate::Narration;
use super::stage::{Stage, require};

const MINUTE: Duration = Duration::from_secs(60);

/// Start and Open submission `submission`, narrating gated then running.
async fn running(s: &mut Stage<'_>, submission: u32) -> Result<ObjectRef> {
    let object = s.start(submission).await?;
    s.expect("gated", "the TrainJob gated", |o| {
        o.submission == submission && o.state == ObjectState::Gated
    })
    .await?;
    s.note(
        "created with its start gate closed, on a private copy of the runtime: \
         nothing runs until the supervisor opens it",
    );
    s.open(&object).await?;
    let obs = s
        .expect("running", "the TrainJob running", |o| {
            o.submission == submission && o.state == ObjectState::Running
        })
        .await?;
    require(obs.execution.is_some(), "an execution", &obs)?;
    Ok(object)
}

/// After a Release: Watch reports `submission` running again, as a new execution with
/// admission count 2, narrated as `step`.
async fn running_again_as_admission_two(
    s: &mut Stage<'_>,
    step: &'static str,
    submission: u32,
) -> Result<()> {
    let released = s
        .expect(step, "the TrainJob running again", |o| {
            o.submission == submission && o.state == ObjectState::Running
        })
        .await?;
    require(
        released.execution.is_some_and(|e| e.admission == 2),
        "a new execution, with admission count A = 2",
        &released,
    )
}

/// The scheduler preempts a rank; the cause is preempted, said by the scheduler. The
/// job runs again (plain mode: a new submission), and Hold then Release make a new
/// execution of it.
pub(crate) async fn preemption(n: &mut Narration) -> Result<()> {
    let mut s = Stage::plain(n).await?;
    let first = running(&mut s, 1).await?;
    s.advance(20 * MINUTE);
    let victim = s.ranks(&first).into_iter().nth(1).map(|r| r.pod).unwrap_or_default();
    s.cluster(
        &format!("the scheduler preempts rank 1 (pod {victim}) for a higher-priority pod"),
        |sim| sim.preempt(NS, &victim),
    )?;
    let obs =
        s.expect("preempted", "the TrainJob ended", |o| o.state == ObjectState::Ended).await?;
    require(
        obs.cause.kind == CauseKind::Preempted
            && obs.cause.provenance == Some(Provenance::Scheduler),
        "cause preempted, said by the scheduler",
        &obs,
    )?;
    s.note(
        "preempted, not failed: the scheduler took the GPUs, the program did nothing wrong, \
         so the supervisor runs the job again instead of giving up",
    );
    let refused = s.hold(&first, 1).await;
    if !refused.as_ref().is_err_and(|e| e.is(Kind::Rejected)) {
        return Err(dispatch_core::Error::unreachable(
            "demo: expected Hold on the preempted TrainJob to be rejected",
        ));
    }
    s.note(
        "in plain mode a preemption ends the TrainJob (its JobSet fails), so it cannot be \
         held and released: running again means a new submission (in Kueue mode a \
         preemption suspends the TrainJob instead, and Hold then Release readmit it)",
    );
    s.stop(&first).await?;
    let second = running(&mut s, 2).await?;
    s.advance(10 * MINUTE);
    s.hold(&second, 1).await?;
    s.expect("held", "the TrainJob held", |o| o.submission == 2 && o.state == ObjectState::Held)
        .await?;
    s.note(
        "the higher-priority job wants the GPUs again: rather than be preempted a second \
         time, the supervisor yields them by holding submission 2, which keeps the TrainJob",
    );
    s.advance(30 * MINUTE);
    s.release(&second, 1).await?;
    running_again_as_admission_two(&mut s, "released", 2).await?;
    s.note(
        "the same TrainJob runs again as a new execution: A went from 1 to 2, and the \
         ranks read it (DISPATCH_K8S_ADMISSION) to fence their checkpoints",
    );
    s.stop_job().await
}

/// Both nodes under a running job stop reporting: running with node-lost; Ceased
/// says no until an administrator takes the nodes out of service; stop and resubmit.
pub(crate) async fn node_loss(n: &mut Narration) -> Result<()> {
    let mut s = Stage::plain(n).await?;
    let first = running(&mut s, 1).await?;
    s.advance(30 * MINUTE);
    let nodes: Vec<String> = s.ranks(&first).into_iter().map(|r| r.node).collect();
    let listed = nodes.join(" and ");
    s.cluster(
        &format!("the switch of {listed} fails: both nodes stop reporting (Ready=Unknown)"),
        |sim| nodes.iter().all(|node| sim.lose_node(node)),
    )?;
    let obs =
        s.expect("node-lost", "cause node-lost", |o| o.cause.kind == CauseKind::NodeLost).await?;
    require(obs.state == ObjectState::Running, "still running", &obs)?;
    s.note(
        "still running as far as the TrainJob says, but its ranks cannot be reached: \
         node-lost, said by the scheduler. The job must run elsewhere",
    );
    let cessation = s.ceased(&first).await?;
    if cessation.ceased {
        return Err(dispatch_core::Error::unreachable(
            "demo: expected Ceased to say no while the nodes are only unreachable",
        ));
    }
    s.note(
        "an unreachable node may still be running its rank and writing checkpoints: a \
         second copy started now could meet it, so the supervisor waits",
    );
    s.advance(5 * MINUTE);
    s.cluster(
        "the taint manager evicts the pods of the unreachable nodes; they stay terminating, \
         since no kubelet can confirm that they stopped",
        |sim| sim.list("pods", NS).iter().all(|p| p["metadata"]["deletionTimestamp"].is_string()),
    )?;
    let obs = s
        .expect("evicted", "the pods terminating", |o| o.cause.detail.contains("terminating"))
        .await?;
    require(obs.cause.kind == CauseKind::NodeLost, "still node-lost", &obs)?;
    s.note(
        "still node-lost: the pods are being deleted, but a terminating pod on an \
         unreachable node may still be running there",
    );
    s.cluster(
        &format!(
            "an administrator confirms {listed} are down and taints them \
             node.kubernetes.io/out-of-service; the pod garbage collector removes their pods"
        ),
        |sim| nodes.iter().all(|node| sim.taint_out_of_service(node)),
    )?;
    let obs = s.expect("ended", "the TrainJob ended", |o| o.state == ObjectState::Ended).await?;
    require(obs.cause.kind == CauseKind::NodeLost, "cause node-lost", &obs)?;
    s.note(
        "the pods are gone, so the JobSet failed and the TrainJob ended: node-lost still, \
         from what Watch kept of the deleted pods, and not a failure of the program",
    );
    let cessation = s.ceased(&first).await?;
    if !cessation.ceased || cessation.nodes.len() != nodes.len() {
        return Err(dispatch_core::Error::unreachable(
            "demo: expected Ceased to say yes, naming both nodes, once they are out of service",
        ));
    }
    s.note("every node of the last execution is out of service: the old ranks cannot run");
    s.stop(&first).await?;
    s.find("cleared").await?;
    let second = running(&mut s, 2).await?;
    let elsewhere = s.ranks(&second).iter().all(|r| !nodes.contains(&r.node));
    if !elsewhere {
        return Err(dispatch_core::Error::unreachable(
            "demo: expected submission 2 to run on other nodes",
        ));
    }
    s.note("submission 2 runs on the healthy nodes");
    s.stop_job().await
}

/// One rank runs out of GPU memory and its peer exits because of it: the cause names
/// the rank that ran out, and lists the other as a consequence.
pub(crate) async fn oom(n: &mut Narration) -> Result<()> {
    let mut s = Stage::plain(n).await?;
    let first = running(&mut s, 1).await?;
    s.advance(45 * MINUTE);
    let ranks = s.ranks(&first);
    let (rank0, rank1) = match ranks.as_slice() {
        [r0, r1] => (r0.pod.clone(), r1.pod.clone()),
        _ => return Err(dispatch_core::Error::unreachable("demo: expected two ranks")),
    };
    s.cluster_at_once(
        &format!(
            "rank 1 (pod {rank1}) runs out of memory and the kernel kills it (exit 137); \
             rank 0 (pod {rank0}) loses its peer and exits 1"
        ),
        |sim| sim.oom(NS, &rank1) && sim.exit(NS, &rank0, 1),
    )?;
    let obs = s.expect("ended", "the TrainJob ended", |o| o.state == ObjectState::Ended).await?;
    require(
        obs.cause.kind == CauseKind::OutOfMemory
            && obs.cause.detail.starts_with(&format!("pod {rank1}:"))
            && obs.cause.detail.contains(&format!("other ranks: {rank0} non-zero-exit")),
        "cause out-of-memory naming rank 1, with rank 0 among the other ranks",
        &obs,
    )?;
    s.note(
        "the cause names the rank that ran out of memory; rank 0's exit 1 is listed \
         under other ranks, a consequence rather than the cause. Out of memory calls for \
         another response (more memory, a smaller batch) than a script that exits 1",
    );
    s.stop_job().await
}

/// A job is started, opened, runs and completes; Output reads rank 0's log.
pub(crate) async fn success(n: &mut Narration) -> Result<()> {
    let mut s = Stage::plain(n).await?;
    let first = running(&mut s, 1).await?;
    let ranks = s.ranks(&first);
    let (rank0, rank1) = match ranks.as_slice() {
        [r0, r1] => (r0.pod.clone(), r1.pod.clone()),
        _ => return Err(dispatch_core::Error::unreachable("demo: expected two ranks")),
    };
    for (minutes, loss) in [(20, 2.31), (40, 1.87), (60, 1.52)] {
        s.advance(20 * MINUTE);
        s.sim.append_log(NS, &rank0, &format!("minute {minutes}: loss {loss:.2}\n"));
    }
    s.output(1).await?;
    s.advance(5 * MINUTE);
    s.cluster_at_once("both ranks finish: their node containers exit 0", |sim| {
        sim.exit(NS, &rank0, 0) && sim.exit(NS, &rank1, 0)
    })?;
    let obs = s.expect("complete", "the TrainJob ended", |o| o.state == ObjectState::Ended).await?;
    require(
        obs.cause.kind == CauseKind::None
            && obs.cause.provenance == Some(Provenance::Scheduler)
            && obs.cause.detail.starts_with("TrainJob Complete"),
        "ended complete",
        &obs,
    )?;
    s.note("ended with nothing to explain: the job completed");
    s.stop_job().await
}

/// The Workload Kueue made for `object`.
fn workload_of(s: &Stage<'_>, object: &ObjectRef) -> Result<String> {
    let workloads = s.sim.list("workloads", NS);
    let mine = workloads.iter().find(|w| {
        w.pointer(&format!("/metadata/labels/{}", keys::KUEUE_JOB_UID.replace('/', "~1")))
            .and_then(serde_json::Value::as_str)
            == Some(object.uid.as_str())
    });
    mine.and_then(|w| w["metadata"]["name"].as_str().map(str::to_owned))
        .ok_or_else(|| dispatch_core::Error::unreachable("demo: expected the TrainJob's Workload"))
}

/// Kueue mode: the job is queued behind dispatch's start gate, admitted through the
/// readmission gate, preempted by Kueue for a higher-priority Workload, not readmitted
/// on its own when the quota comes back, then held and released into a new execution.
pub(crate) async fn kueue(n: &mut Narration) -> Result<()> {
    let mut s = Stage::kueue(n).await?;
    let first = running(&mut s, 1).await?;
    s.note(
        "Open lifted dispatch's start gate; Kueue reserved quota, and the readmission gate \
         approved admission 1, which Kueue wrote into the pods (A = 1)",
    );
    s.advance(20 * MINUTE);
    let workload = workload_of(&s, &first)?;
    s.cluster(
        &format!("Kueue preempts Workload {workload} for a higher-priority Workload"),
        |sim| sim.kueue_preempt(NS, &workload),
    )?;
    let obs =
        s.expect("preempted", "cause preempted", |o| o.cause.kind == CauseKind::Preempted).await?;
    require(obs.cause.provenance == Some(Provenance::Scheduler), "said by the scheduler", &obs)?;
    s.note(
        "in Kueue mode a preemption suspends the TrainJob rather than ending it: the same \
         TrainJob can run again, when the supervisor says so",
    );
    s.advance(15 * MINUTE);
    s.cluster(
        "the higher-priority Workload finishes and frees its quota; Kueue reserves quota \
         for the preempted Workload again",
        |sim| {
            sim.delete("workloads", NS, &format!("preemptor-{workload}"), Propagation::Background)
        },
    )?;
    let obs = s
        .expect("turned away", "the readmission gate's answer", |o| {
            o.cause.detail.contains("waiting for Release")
        })
        .await?;
    require(obs.state != ObjectState::Running, "not running again on its own", &obs)?;
    s.note(
        "the readmission gate sets its check to Retry: Kueue does not readmit a job dispatch \
         did not ask to run again. The supervisor decides: resubmit, or Hold then Release",
    );
    s.hold(&first, 1).await?;
    s.expect("held", "the TrainJob held", |o| o.state == ObjectState::Held).await?;
    s.release(&first, 1).await?;
    s.advance(MINUTE + Duration::from_secs(1));
    running_again_as_admission_two(&mut s, "readmitted", 1).await?;
    s.note(
        "the Release let the gate approve admission 2: the same TrainJob runs again as a \
         new execution, and its ranks read A = 2 to fence their checkpoints",
    );
    s.stop_job().await
}
