//! The gate's rule, case by case: each admission story of `docs/gate.md#what-it-does` as
//! the Workload the controller reads at each step.

use super::*;

const CHECK: &str = "dispatch-readmission";
/// When [`workload`]'s quota was reserved.
const RESERVED_AT: &str = "2026-11-29T10:00:00Z";

/// Kueue evicts the Workload (counted in `schedulingStats`, as every eviction is) and
/// reserves quota again at `at`, the check Pending again.
fn evicted_and_reserved_again(wl: &mut Value, at: &str) {
    let evictions = wl.pointer("/status/schedulingStats/evictions/0/count").and_then(Value::as_u64);
    wl["status"]["schedulingStats"] = json!({"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": evictions.unwrap_or(0) + 1}]});
    wl["status"]["conditions"][0]["lastTransitionTime"] = json!(at);
}

/// A Workload with the check in `state`, quota reserved or not, and these annotations.
fn workload(state: &str, reserved: bool, annotations: Value) -> Value {
    let mut conditions = vec![json!({"type": "QuotaReserved",
        "status": if reserved { "True" } else { "False" }, "lastTransitionTime": RESERVED_AT})];
    if state == "Ready" && reserved {
        conditions.push(json!({"type": "Admitted", "status": "True"}));
    }
    json!({
        "metadata": {"name": "w", "namespace": "ns", "resourceVersion": "7", "annotations": annotations},
        "spec": {"podSets": [{"name": "node", "count": 2}]},
        "status": {"conditions": conditions,
                   "admissionChecks": [{"name": "other", "state": "Pending"}, {"name": CHECK, "state": state}]},
    })
}

fn approve(admission: u64, releases: u64) -> Decision {
    Decision::Approve { admission, releases, pod_set: "node".into() }
}

fn waits_for(decision: &Decision, words: &str) -> bool {
    matches!(decision, Decision::Wait { message } if message.contains(words))
}

#[test]
fn the_first_admission_is_approved_as_one() {
    assert_eq!(decide(&workload("Pending", true, json!({})), CHECK), approve(1, 0));
}

#[test]
fn nothing_happens_before_quota_is_reserved_or_once_the_check_moved() {
    for (state, reserved) in
        [("Pending", false), ("Ready", false), ("Retry", true), ("Retry", false)]
    {
        assert_eq!(decide(&workload(state, reserved, json!({})), CHECK), Decision::Idle, "{state}");
    }
    let unlisted = json!({"status": {"admissionChecks": [{"name": "other", "state": "Pending"}]}});
    assert_eq!(decide(&unlisted, CHECK), Decision::Idle);
    assert_eq!(decide(&json!(null), CHECK), Decision::Idle, "malformed input does not panic");
}

#[test]
fn an_eviction_dispatch_did_not_order_waits_for_a_release() {
    let evicted = workload(
        "Pending",
        true,
        json!({keys::ANN_GATE_ADMISSIONS: "1", keys::ANN_GATE_RELEASES_SEEN: "0"}),
    );
    assert!(waits_for(&decide(&evicted, CHECK), "waiting for Release: admission 1"));
    let mut preempted = evicted.clone();
    preempted["status"]["conditions"].as_array_mut().unwrap().push(json!({
        "type": "Evicted", "status": "False", "reason": "QuotaReserved",
        "message": "Previously: Preempted to accommodate a workload"}));
    assert!(waits_for(
        &decide(&preempted, CHECK),
        "only a Release readmits it (Evicted: QuotaReserved: Previously: Preempted to accommodate a workload)"
    ));
}

#[test]
fn a_release_since_the_last_admission_permits_the_next() {
    let released = workload(
        "Pending",
        true,
        json!({keys::ANN_GATE_ADMISSIONS: "1", keys::ANN_GATE_RELEASES_SEEN: "0", keys::ANN_RELEASES: "1"}),
    );
    assert_eq!(decide(&released, CHECK), approve(2, 1));
}

#[test]
fn a_hold_in_force_or_the_start_gate_waits() {
    let held = workload("Pending", true, json!({keys::ANN_HOLD_INSTANCE: "3"}));
    assert!(waits_for(&decide(&held, CHECK), "hold 3 is in force"));
    let gated = workload(
        "Pending",
        true,
        json!({keys::KUEUE_ADMISSION_GATED_BY: format!("example.com/x,{}", keys::START_GATE)}),
    );
    assert!(waits_for(&decide(&gated, CHECK), "waiting for Open"));
}

#[test]
fn a_release_the_running_admission_absorbed_is_used_up() {
    // Hold then Release before Kueue evicted: the admission kept running.
    let running = workload(
        "Ready",
        true,
        json!({keys::ANN_GATE_ADMISSIONS: "1", keys::ANN_GATE_RELEASES_SEEN: "0", keys::ANN_RELEASES: "1"}),
    );
    assert_eq!(decide(&running, CHECK), Decision::UseUpReleases { releases: 1 });
    let recorded = record(&running, &Decision::UseUpReleases { releases: 1 }).unwrap();
    assert_eq!(recorded["metadata"]["annotations"][keys::ANN_GATE_RELEASES_SEEN], "1");
}

#[test]
fn malformed_counters_fail_closed_naming_the_annotation() {
    let bad = workload("Pending", true, json!({keys::ANN_GATE_ADMISSIONS: "01"}));
    assert!(waits_for(&decide(&bad, CHECK), keys::ANN_GATE_ADMISSIONS));
    let idle = workload("Ready", true, json!({keys::ANN_RELEASES: "x"}));
    assert_eq!(decide(&idle, CHECK), Decision::Idle);
}

#[test]
fn the_trainer_pod_set_is_node_or_the_only_one() {
    let mut two = workload("Pending", true, json!({}));
    two["spec"]["podSets"] = json!([{"name": "dataset-initializer"}, {"name": "node"}]);
    assert_eq!(decide(&two, CHECK), approve(1, 0));
    two["spec"]["podSets"] = json!([{"name": "dataset-initializer"}, {"name": "trainer"}]);
    assert!(waits_for(&decide(&two, CHECK), "no trainer pod set"));
    two["spec"]["podSets"] = json!([{"name": "trainer"}]);
    assert!(
        matches!(decide(&two, CHECK), Decision::Approve { pod_set, .. } if pod_set == "trainer")
    );
}

#[test]
fn an_approval_is_recorded_then_applied_as_the_gate_s_own_entry() {
    let wl = workload("Pending", true, json!({}));
    let decision = decide(&wl, CHECK);
    let recorded = record(&wl, &decision).unwrap();
    assert_eq!(
        recorded,
        json!({"metadata": {"resourceVersion": "7", "annotations": {
            keys::ANN_GATE_ADMISSIONS: "1", keys::ANN_GATE_RELEASES_SEEN: "0",
            keys::ANN_GATE_APPROVED_RESERVATION: format!("0@{RESERVED_AT}")}}})
    );
    let applied =
        check_apply(&wl, CHECK, &decision, "2026-11-29T12:00:00Z".parse().unwrap()).unwrap();
    let entries = applied["status"]["admissionChecks"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "only the gate's own entry");
    assert_eq!(entries[0]["state"], "Ready");
    assert_eq!(entries[0]["podSetUpdates"][0]["annotations"][keys::ANN_ADMISSION], "1");
    assert_eq!(
        applied["metadata"],
        json!({"name": "w", "namespace": "ns", "resourceVersion": "7"})
    );
}

#[test]
fn a_wait_is_a_retry_with_a_delay_and_records_nothing() {
    let wl = workload("Pending", true, json!({keys::ANN_HOLD_INSTANCE: "1"}));
    let decision = decide(&wl, CHECK);
    assert_eq!(record(&wl, &decision), None);
    let applied = check_apply(&wl, CHECK, &decision, jiff::Timestamp::UNIX_EPOCH).unwrap();
    assert_eq!(applied["status"]["admissionChecks"][0]["state"], "Retry");
    assert_eq!(applied["status"]["admissionChecks"][0]["requeueAfterSeconds"], 60);
}

#[test]
fn only_dispatch_s_inactive_admission_checks_are_marked_active() {
    let ours =
        json!({"metadata": {"name": "c"}, "spec": {"controllerName": keys::GATE_CONTROLLER_NAME}});
    let applied = active_apply(&ours, jiff::Timestamp::UNIX_EPOCH).unwrap();
    assert_eq!(applied["status"]["conditions"][0]["status"], "True");
    let mut active = ours.clone();
    active["status"] = json!({"conditions": [{"type": "Active", "status": "True"}]});
    assert_eq!(active_apply(&active, jiff::Timestamp::UNIX_EPOCH), None);
    let foreign = json!({"metadata": {"name": "c"}, "spec": {"controllerName": "example.com/x"}});
    assert_eq!(active_apply(&foreign, jiff::Timestamp::UNIX_EPOCH), None);
}

/// The whole story on one Workload: first admission, a preemption, a Hold and Release,
/// and a controller restart in between (the counters are all it needs).
#[test]
fn the_admission_story_counts_one_two() {
    let mut wl = workload("Pending", true, json!({}));
    let apply_record = |wl: &mut Value, d: &Decision| {
        if let Some(patch) = record(wl, d) {
            for (k, v) in patch["metadata"]["annotations"].as_object().unwrap() {
                wl["metadata"]["annotations"][k] = v.clone();
            }
        }
    };
    let first = decide(&wl, CHECK);
    assert_eq!(first, approve(1, 0));
    apply_record(&mut wl, &first);
    // Kueue preempts; the check is Pending again when quota comes back.
    evicted_and_reserved_again(&mut wl, "2026-11-29T10:05:00Z");
    assert!(waits_for(&decide(&wl, CHECK), "waiting for Release"));
    // Hold then Release (the adapter counts it).
    wl["metadata"]["annotations"][keys::ANN_RELEASES] = json!("1");
    let second = decide(&wl, CHECK);
    assert_eq!(second, approve(2, 1));
    apply_record(&mut wl, &second);
    evicted_and_reserved_again(&mut wl, "2026-11-29T10:09:00Z");
    assert!(waits_for(&decide(&wl, CHECK), "admission 2"), "then waits again after eviction");
}

/// The counters were written, the check write was not (a conflict, a crash between
/// the two): under the same reservation the same admission is approved again, under
/// any later one, even in the same second, the gate waits for a Release.
#[test]
fn an_approval_whose_check_write_did_not_land_is_made_again_for_that_reservation_only() {
    let mut wl = workload("Pending", true, json!({}));
    let first = decide(&wl, CHECK);
    for (k, v) in record(&wl, &first).unwrap()["metadata"]["annotations"].as_object().unwrap() {
        wl["metadata"]["annotations"][k] = v.clone();
    }
    assert_eq!(decide(&wl, CHECK), approve(1, 0), "the same admission, not 2, not a wait");
    assert_eq!(
        record(&wl, &decide(&wl, CHECK)).unwrap()["metadata"]["annotations"],
        record(&workload("Pending", true, json!({})), &first).unwrap()["metadata"]["annotations"],
        "recording it again changes nothing"
    );
    evicted_and_reserved_again(&mut wl, RESERVED_AT);
    assert!(waits_for(&decide(&wl, CHECK), "waiting for Release: admission 1"));
}

#[test]
fn nothing_happens_while_kueue_is_still_evicting_the_workload() {
    // Kueue's preemption as a real cluster writes it: Evicted=True and the check reset
    // to Pending while the quota is still reserved. A Retry now would never be reset.
    let annotations = json!({"dispatch.phpboyscout.uk/gate-admissions": "1"});
    let mut evicting = workload("Pending", true, annotations);
    let conditions = evicting["status"]["conditions"].as_array_mut().unwrap();
    conditions.push(json!({"type": "Evicted", "status": "True", "reason": "Preempted"}));
    assert_eq!(decide(&evicting, CHECK), Decision::Idle);

    // Once Kueue reserves quota again it sets Evicted back to False, and the gate decides.
    evicting["status"]["conditions"][1]["status"] = json!("False");
    assert!(waits_for(&decide(&evicting, CHECK), "waiting for Release"));
}
