//! The readmission gate against the simulated cluster, with the real Backend in Kueue
//! mode: the admission stories of `docs/gate.md#what-it-does`, leader election on the
//! virtual clock, and a restart that decides the same.

use std::time::Duration;

use dispatch_core::{Backend, ObjectRef};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_gate::telemetry::{Role, Telemetry};
use dispatch_kf_model::internal::capabilities::Writability;
use dispatch_kf_model::keys;
use dispatch_kf_sim::{Fault, Identity, Propagation, Rule, Sim, SimOptions};
use dispatch_kf_testkit::*;
use serde_json::{Value, json};

const CHECK: &str = "dispatch-readmission";
const LEASE_NS: &str = "dispatch-system";
const LEASE: &str = "dispatch-readmission-gate";
const LEASE_SECS: u64 = 15;

/// A cluster whose virtual clock starts at the wall clock's now (the adapter checks
/// the Lease against its own clock), with the sim's Kueue setup for the gate: a
/// ClusterQueue listing the check, the LocalQueue `team-a`, and the AdmissionCheck, not
/// yet Active.
async fn kueue_cluster() -> Sim {
    kueue_cluster_with(SimOptions::default()).await
}

/// [`kueue_cluster`], started with `options` (its clock at the wall clock's now).
async fn kueue_cluster_with(options: SimOptions) -> Sim {
    let sim = cluster_with(SimOptions { start: jiff::Timestamp::now(), ..options }).await;
    sim.install_kueue_in(32, NS).unwrap();
    sim
}

/// Starts a gate replica named `identity`, acting as the sim user of the same name.
async fn start_gate(sim: &Sim, identity: &str) -> dispatch_kf_gate::Running {
    start_gate_with(sim, identity, Telemetry::new()).await
}

/// [`start_gate`], recording into `telemetry`.
async fn start_gate_with(
    sim: &Sim,
    identity: &str,
    telemetry: Telemetry,
) -> dispatch_kf_gate::Running {
    allow_gate(sim, identity);
    start_gate_on(sim, identity, telemetry, config(sim, identity).await)
}

/// Lets the sim user `identity` do what a gate does.
fn allow_gate(sim: &Sim, identity: &str) {
    sim.add_identity(
        Identity::new(identity)
            .allow(Rule::new(&["*"], "kueue.x-k8s.io", &["*"]))
            .allow(Rule::new(&["*"], "coordination.k8s.io", &["*"])),
    );
}

/// Starts a gate replica named `identity` (already allowed), connecting as `config`
/// says (through a proxy, say), recording into `telemetry`.
fn start_gate_on(
    sim: &Sim,
    identity: &str,
    telemetry: Telemetry,
    config: kube::Config,
) -> dispatch_kf_gate::Running {
    let client = kube::Client::try_from(config).unwrap();
    let mut options = dispatch_kf_gate::Options::new(LEASE_NS, LEASE, identity);
    options.lease_duration = Duration::from_secs(LEASE_SECS);
    options.retry_period = Duration::from_millis(50);
    options.clock = std::sync::Arc::new(sim.clock());
    options.telemetry = telemetry;
    dispatch_kf_gate::spawn(client, options)
}

/// How often [`eventually`] looks.
const POLL: Duration = Duration::from_millis(20);

/// Polls `probe` until it gives a value; fails with `what` if that never happens.
async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    for _ in 0..1500 {
        if let Some(value) = probe() {
            return value;
        }
        tokio::time::sleep(POLL).await;
    }
    panic!("never happened: {what}");
}

fn holder(sim: &Sim) -> Option<String> {
    let lease = sim.get("leases", LEASE_NS, LEASE)?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

fn workload_of(sim: &Sim, object: &ObjectRef) -> Value {
    sim.list("workloads", NS)
        .into_iter()
        .find(|w| w["metadata"]["labels"][keys::KUEUE_JOB_UID] == object.uid.as_str())
        .expect("the TrainJob has a Workload")
}

fn check_state(workload: &Value) -> String {
    dispatch_kf_model::internal::readmission::check_state(workload, CHECK).unwrap_or("").to_owned()
}

fn admitted(workload: &Value) -> bool {
    dispatch_kf_model::internal::json::has_true_condition(workload, "Admitted")
}

/// The admission counts the TrainJob's pods carry (its JobSet's pods are named after
/// it).
fn pod_admissions(sim: &Sim, object: &ObjectRef) -> Vec<String> {
    let mut counts: Vec<String> = sim
        .list("pods", NS)
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| {
            p["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("{}-", object.name)))
        })
        .filter_map(|p| {
            p["metadata"]["annotations"][keys::ANN_ADMISSION].as_str().map(str::to_owned)
        })
        .collect();
    counts.sort();
    counts.dedup();
    counts
}

async fn kueue_backend(sim: &Sim) -> KubeflowBackend {
    let b = backend(sim, settings(json!({"mode": "kueue", "kueue": {"queue": "team-a"}}))).await;
    assert_eq!(b.preflight().access, Writability::Writable, "{:?}", b.preflight().capabilities);
    b
}

/// Waits until the gate has made the adapter writable: the check is Active and the
/// Lease is held.
async fn gate_ready(sim: &Sim) {
    eventually("the gate holds the Lease and the check is Active", || {
        let check = sim.get("admissionchecks", "", CHECK)?;
        let active = dispatch_kf_model::internal::json::has_true_condition(&check, "Active");
        (active && holder(sim).is_some()).then_some(())
    })
    .await;
}

/// A Kueue cluster with one gate replica running and a writable Kueue-mode Backend.
async fn with_gate(identity: &str) -> (Sim, dispatch_kf_gate::Running, KubeflowBackend) {
    let sim = kueue_cluster().await;
    let gate = start_gate(&sim, identity).await;
    gate_ready(&sim).await;
    let b = kueue_backend(&sim).await;
    (sim, gate, b)
}

/// Hold and Release (instance 1), then past Kueue's retry delay: the job must run
/// again as admission `n`.
async fn hold_release_runs_as(sim: &Sim, b: &KubeflowBackend, object: &ObjectRef, n: &str) {
    b.hold(&hold_cx(), object, 1).await.unwrap();
    b.release(&hold_cx(), object, 1).await.unwrap();
    sim.advance(Duration::from_secs(61));
    sim.settle();
    eventually(&format!("readmitted as admission {n}"), || {
        (pod_admissions(sim, object) == [n]).then_some(())
    })
    .await;
    assert!(admitted(&workload_of(sim, object)));
}

/// Starts and opens one job, and waits until its pods run as admission 1.
async fn first_admission(sim: &Sim, b: &KubeflowBackend) -> ObjectRef {
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    eventually("the pods carry admission 1", || {
        (pod_admissions(sim, &object) == ["1"]).then_some(())
    })
    .await;
    object
}

/// Kueue preempts the Workload, then the quota comes back (the preemptor goes): the
/// Workload reserves quota again with its check Pending.
fn preempt_and_free_quota(sim: &Sim, object: &ObjectRef) {
    let name = workload_of(sim, object)["metadata"]["name"].as_str().unwrap().to_owned();
    assert!(sim.kueue_preempt(NS, &name));
    assert!(sim.delete("workloads", NS, &format!("preemptor-{name}"), Propagation::Background));
    sim.settle();
}

/// Waits until the gate has turned the Workload away.
async fn turned_away(sim: &Sim, object: &ObjectRef) {
    eventually("the gate asks for a Retry", || {
        (check_state(&workload_of(sim, object)) == "Retry").then_some(())
    })
    .await;
    assert!(!admitted(&workload_of(sim, object)), "not readmitted on its own");
}

#[tokio::test(start_paused = true)]
async fn the_gate_marks_its_admission_check_active_and_holds_the_lease() {
    let sim = kueue_cluster().await;
    let gate = start_gate(&sim, "gate-a").await;
    gate_ready(&sim).await;
    assert_eq!(holder(&sim).as_deref(), Some("gate-a"));
    let check = sim.get("admissionchecks", "", CHECK).unwrap();
    assert_eq!(check["status"]["conditions"][0]["reason"], "Active");
    gate.shut_down().await;
    assert_eq!(holder(&sim), None, "a clean shutdown gives the Lease up");
}

#[tokio::test(start_paused = true)]
async fn the_first_admission_is_approved_as_one_and_the_pods_carry_it() {
    let (sim, gate, b) = with_gate("gate-a").await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    sim.settle();
    assert!(!admitted(&workload_of(&sim, &object)), "gated until Open");
    b.open(&hold_cx(), &object).await.unwrap();
    eventually("the pods carry admission 1", || {
        (pod_admissions(&sim, &object) == ["1"]).then_some(())
    })
    .await;
    let wl = workload_of(&sim, &object);
    assert!(admitted(&wl));
    assert_eq!(wl["metadata"]["annotations"][keys::ANN_GATE_ADMISSIONS], "1");
    let observation = b.inspect(&cx(), &object).await.unwrap();
    assert_eq!(observation.execution.map(|e| e.admission), Some(1), "{observation:?}");
    gate.shut_down().await;
}

/// The gate writes its counters, then the check; a conflict on the check write (Kueue's
/// own status write, another check controller) leaves the counters saying "approved"
/// with the check Pending. Decided again, the same reservation gets the same admission:
/// the Workload is admitted as 1, not turned away waiting for a Release.
#[tokio::test(start_paused = true)]
async fn a_conflict_on_the_check_write_still_admits_the_workload_as_one() {
    let (sim, gate, b) = with_gate("gate-a").await;
    let conflict = Fault::status(409, "Conflict", "the object has been modified");
    sim.add_fault(Fault::on("patch", "workloads/status", conflict));
    let object = first_admission(&sim, &b).await;
    let wl = workload_of(&sim, &object);
    assert!(admitted(&wl), "{wl}");
    assert_eq!(wl["metadata"]["annotations"][keys::ANN_GATE_ADMISSIONS], "1");
    gate.shut_down().await;
}

/// A write that lost a race is decided again at once on a fresh read of the Workload,
/// not after a requeue from the watch's copy, which is as stale as the decision that
/// lost: under load, Kueue writes a Workload several times just as its quota is reserved.
#[tokio::test(start_paused = true)]
async fn a_conflict_is_decided_again_at_once_on_a_fresh_read() {
    let (sim, gate, b) = with_gate("gate-a").await;
    let conflict = Fault::status(409, "Conflict", "the object has been modified");
    sim.add_fault(Fault::on("patch", "workloads/status", conflict));
    let object = first_admission(&sim, &b).await;
    let requests = sim.requests();
    let by_gate = |verb: &str, resource: &str| {
        let by_gate = requests.iter().filter(|r| r.user.as_deref() == Some("gate-a"));
        by_gate.filter(|r| r.verb == verb && r.resource == resource).count()
    };
    assert_eq!(by_gate("patch", "workloads/status"), 2, "the check written twice: {requests:#?}");
    assert_eq!(by_gate("get", "workloads"), 1, "one fresh read, after the conflict");
    assert_eq!(
        workload_of(&sim, &object)["metadata"]["annotations"][keys::ANN_GATE_ADMISSIONS],
        "1"
    );
    gate.shut_down().await;
}

#[tokio::test(start_paused = true)]
async fn a_preemption_is_not_readmitted_until_release_then_runs_as_two() {
    let (sim, gate, b) = with_gate("gate-a").await;
    let object = first_admission(&sim, &b).await;
    preempt_and_free_quota(&sim, &object);
    turned_away(&sim, &object).await;
    let wl = workload_of(&sim, &object);
    assert!(wl["status"]["admissionChecks"].to_string().contains("waiting for Release"), "{wl}");
    // Past the Retry delay Kueue queues it again; the gate still turns it away.
    sim.advance(Duration::from_secs(61));
    sim.settle();
    turned_away(&sim, &object).await;

    hold_release_runs_as(&sim, &b, &object, "2").await;
    gate.shut_down().await;
}

#[tokio::test(start_paused = true)]
async fn a_held_workload_is_not_approved_until_released() {
    let (sim, gate, b) = with_gate("gate-a").await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    b.open(&hold_cx(), &object).await.unwrap();
    sim.settle();
    // Give the gate every chance to act wrongly: it sees each change of the Workload.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let wl = workload_of(&sim, &object);
    assert!(!admitted(&wl) && check_state(&wl) == "Pending", "{wl}");
    assert!(pod_admissions(&sim, &object).is_empty());
    b.release(&hold_cx(), &object, 1).await.unwrap();
    eventually("approved once released", || (pod_admissions(&sim, &object) == ["1"]).then_some(()))
        .await;
    gate.shut_down().await;
}

/// Requests that wrote something, by user.
fn writes_by(sim: &Sim, user: &str) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.user.as_deref() == Some(user))
        .filter(|r| matches!(r.verb.as_str(), "patch" | "update" | "create"))
        .filter(|r| !r.resource.starts_with("leases"))
        .count()
}

#[tokio::test(start_paused = true)]
async fn of_two_controllers_one_acts_and_the_other_takes_over_within_the_lease_duration() {
    let sim = kueue_cluster().await;
    let first = start_gate(&sim, "gate-a").await;
    gate_ready(&sim).await;
    let second = start_gate(&sim, "gate-b").await;
    let b = kueue_backend(&sim).await;
    let object = first_admission(&sim, &b).await;
    assert_eq!(holder(&sim).as_deref(), Some("gate-a"));
    assert!(writes_by(&sim, "gate-a") > 0);
    assert_eq!(writes_by(&sim, "gate-b"), 0, "the follower writes nothing");

    first.abort().await;
    let crashed_at = sim.now();
    sim.advance(Duration::from_secs(LEASE_SECS + 1));
    eventually("gate-b takes the Lease", || {
        (holder(&sim).as_deref() == Some("gate-b")).then_some(())
    })
    .await;
    assert!(
        sim.now().duration_since(crashed_at)
            <= jiff::SignedDuration::from_secs(LEASE_SECS as i64 + 1)
    );
    // The new leader acts: a Hold and Release readmit the job through it.
    hold_release_runs_as(&sim, &b, &object, "2").await;
    assert!(writes_by(&sim, "gate-b") > 0);
    second.shut_down().await;
}

/// A leader whose Lease requests hang (a half-open connection: the proxy passes nothing
/// more on it, while its other connections work) stops reconciling within the renew
/// deadline, on a timer of its own, before the follower may take the Lease; once the
/// follower leads, the old leader writes nothing, and when its path comes back it
/// follows.
#[tokio::test(start_paused = true)]
async fn a_leader_whose_lease_requests_hang_stops_reconciling_within_the_renew_deadline() {
    // Plain HTTP, so that the proxy can tell a Lease request by its path.
    let sim = kueue_cluster_with(SimOptions { tls: false, ..SimOptions::default() }).await;
    let proxy = Proxy::to(&sim).await;
    let a = Telemetry::new();
    allow_gate(&sim, "gate-a");
    let first = start_gate_on(&sim, "gate-a", a.clone(), proxy.config(&sim, "gate-a").await);
    gate_ready(&sim).await;
    let second = start_gate(&sim, "gate-b").await;
    let b = kueue_backend(&sim).await;
    let object = first_admission(&sim, &b).await;
    assert_eq!(holder(&sim).as_deref(), Some("gate-a"));
    assert_eq!(a.role(), Role::Leading);

    proxy.freeze_carrying(&["/leases/"]);
    let frozen = tokio::time::Instant::now();
    eventually("gate-a stops leading", || (a.role() != Role::Leading).then_some(())).await;
    let renew_deadline = dispatch_kf_gate::Options::new(LEASE_NS, LEASE, "gate-a").renew_deadline;
    assert!(frozen.elapsed() <= renew_deadline + POLL, "stopped after {:?}", frozen.elapsed());
    let written = writes_by(&sim, "gate-a");

    // Only now may the follower take the Lease: a whole Lease after it saw the last renewal.
    sim.advance(Duration::from_secs(LEASE_SECS + 1));
    eventually("gate-b takes the Lease", || {
        (holder(&sim).as_deref() == Some("gate-b")).then_some(())
    })
    .await;
    hold_release_runs_as(&sim, &b, &object, "2").await;
    assert_eq!(writes_by(&sim, "gate-a"), written, "the leader that stopped wrote nothing more");

    proxy.thaw();
    eventually("gate-a follows", || (a.role() == Role::StandingBy).then_some(())).await;
    assert_eq!(writes_by(&sim, "gate-a"), written);
    first.shut_down().await;
    second.shut_down().await;
}

#[tokio::test(start_paused = true)]
async fn a_restarted_controller_decides_the_same() {
    let (sim, gate, b) = with_gate("gate-a").await;
    let object = first_admission(&sim, &b).await;
    gate.shut_down().await;
    // Preempted while no controller runs; the check is Pending with quota reserved.
    preempt_and_free_quota(&sim, &object);
    assert_eq!(check_state(&workload_of(&sim, &object)), "Pending");
    let restarted = start_gate(&sim, "gate-a2").await;
    turned_away(&sim, &object).await;
    hold_release_runs_as(&sim, &b, &object, "2").await;
    restarted.shut_down().await;
}

#[tokio::test(start_paused = true)]
async fn a_gate_whose_lease_is_stale_leaves_the_adapter_observe_only_saying_so() {
    // The gate's clock runs an hour behind the adapter's: every renewal it writes is
    // already expired when the adapter reads it.
    let sim = kueue_cluster().await;
    let gate = start_gate(&sim, "gate-a").await;
    gate_ready(&sim).await;
    let lagging = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
    let mut lease = sim.get("leases", LEASE_NS, LEASE).unwrap();
    gate.abort().await;
    lease["spec"]["renewTime"] = json!(lagging.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string());
    sim.apply(lease).unwrap();
    let b = backend(&sim, settings(json!({"mode": "kueue", "kueue": {"queue": "team-a"}}))).await;
    let Writability::ObserveOnly { missing } = &b.preflight().access else {
        panic!("{:?}", b.preflight().access)
    };
    assert!(missing.contains("held by gate-a") && missing.contains("expired"), "{missing}");
}

/// A probe server for `telemetry` on a loopback port, serving until the test ends.
async fn probe_server(telemetry: &Telemetry) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let forever = tokio_util::sync::CancellationToken::new();
    let telemetry = std::sync::Arc::new(telemetry.clone());
    tokio::spawn(dispatch_kf_replica::probes::serve(listener, telemetry, forever));
    address
}

#[tokio::test]
async fn the_probes_show_a_standby_then_a_leader_and_the_metrics_count_its_work() {
    let sim = kueue_cluster().await;
    let leader = Telemetry::new();
    let first = start_gate_with(&sim, "gate-a", leader.clone()).await;
    gate_ready(&sim).await;
    let standby = Telemetry::new();
    let (leader_probes, standby_probes) =
        (probe_server(&leader).await, probe_server(&standby).await);
    assert_eq!(http_get(standby_probes, "/readyz").await.0, 503, "not started");
    assert_eq!(http_get(standby_probes, "/healthz").await.0, 503, "not started");
    let second = start_gate_with(&sim, "gate-b", standby.clone()).await;
    eventually("gate-b stands by", || (standby.role() == Role::StandingBy).then_some(())).await;
    assert_eq!(http_get(standby_probes, "/healthz").await.0, 200);
    assert_eq!(http_get(standby_probes, "/readyz").await.0, 200, "a standby is ready");
    assert_eq!(http_get(leader_probes, "/readyz").await.0, 200, "the leader is ready");

    let b = kueue_backend(&sim).await;
    let object = first_admission(&sim, &b).await;
    let (status, metrics) = http_get(leader_probes, "/metrics").await;
    assert_eq!(status, 200);
    assert_eq!(series_value(&metrics, "dispatch_gate_leading"), Some(1.0), "{metrics}");
    let reconciles = "dispatch_gate_reconciles_total{object=\"workload\"}";
    assert!(series_value(&metrics, reconciles).is_some_and(|n| n >= 1.0), "{metrics}");
    let checks = "dispatch_gate_reconciles_total{object=\"admission_check\"}";
    assert!(series_value(&metrics, checks).is_some_and(|n| n >= 1.0), "{metrics}");
    let approved = "dispatch_gate_decisions_total{outcome=\"approve\"}";
    assert!(series_value(&metrics, approved).is_some_and(|n| n >= 1.0), "{metrics}");
    let (_, metrics) = http_get(standby_probes, "/metrics").await;
    assert_eq!(series_value(&metrics, "dispatch_gate_leading"), Some(0.0), "{metrics}");
    assert!(!metrics.contains("dispatch_gate_decisions_total{"), "a standby decides nothing");
    assert!(!metrics.contains("dispatch_gate_reconciles_total{"), "nor reconciles");

    first.abort().await;
    assert_eq!(http_get(leader_probes, "/healthz").await.0, 503, "the crashed loop is not live");
    sim.advance(Duration::from_secs(LEASE_SECS + 1));
    eventually("gate-b leads", || (standby.role() == Role::Leading).then_some(())).await;
    let (_, metrics) = http_get(standby_probes, "/metrics").await;
    assert_eq!(series_value(&metrics, "dispatch_gate_leading"), Some(1.0), "{metrics}");
    hold_release_runs_as(&sim, &b, &object, "2").await;
    let (_, metrics) = http_get(standby_probes, "/metrics").await;
    assert!(series_value(&metrics, approved).is_some_and(|n| n >= 1.0), "the new leader decides");
    second.shut_down().await;
    assert_eq!(http_get(standby_probes, "/readyz").await.0, 503, "shut down");
}
