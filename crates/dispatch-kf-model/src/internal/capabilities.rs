//! The adapter's answers to the supervisor: a [`Support`] per [`Capability`] and per
//! recovery action, from facts the Backend probed. The rows are the tables of
//! `docs/capabilities.md#the-answers` and `docs/capabilities.md#rules`.
//!
//! Pure: the Backend gathers the [`PreflightFacts`] (its mode, whether it is read-only, the
//! preflight probe's hold round trip, its permissions, the readmission gate's proof);
//! this module only reads them.

use std::collections::BTreeMap;

use dispatch_core::{Action, Answer, Capability, Error, JobSpec, RuleSupport, Source, Support};

use crate::Mode;
use crate::runtime::rules::{self, JobShape};
use crate::runtime::{RuntimeRef, SourceRuntime};

/// What the Backend learned about the cluster at Factory. It reads and writes as JSON
/// (field names as here; each probe result as `{"Ok": null}` or `{"Err": "why"}`), so
/// a command may keep the last one it trusted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PreflightFacts {
    /// Plain or Kueue mode.
    pub mode: Mode,
    /// Whether the settings forbid writing (then nothing is probed).
    pub read_only: bool,
    /// The preflight probe's hold round trip: `Ok` when Hold then Release worked, else
    /// why not. Ignored when read-only.
    pub hold_round_trip: Result<(), String>,
    /// Kueue mode: whether the adapter may update Workloads (holds live there).
    pub may_update_workloads: bool,
    /// Kueue mode: `Ok` when the readmission gate is proven (ClusterQueue, AdmissionCheck,
    /// Lease), else the failing part.
    pub readmission_gate: Result<(), String>,
    /// Whether the adapter may get pods/log.
    pub may_read_logs: bool,
    /// The preflight probe's Start: `Ok` when it created its TrainJob, else why not (a
    /// missing write permission, a probe runtime that breaks a rule). Ignored when
    /// read-only.
    pub probe_started: Result<(), String>,
    /// The writes the adapter makes that its identity may not (`create trainjobs`,
    /// `patch trainingruntimes`, ...): any one makes it observe-only, naming each.
    /// Ignored when read-only.
    pub missing_writes: Vec<String>,
}

/// Whether what a preflight decided holds until a person changes something (a
/// permission granted, a cluster fixed), so that a command may keep it and trust it
/// later (`docs/cli.md`): not under read-only settings (nothing was probed), and not
/// an observe-only verdict for a readmission gate that is not proven (no gate holds a
/// fresh Lease: between leaders), which passes by itself within seconds. (A probe that
/// met no definite answer decides nothing: Factory fails *unreachable*.)
pub fn lasting(facts: &PreflightFacts) -> bool {
    let gate_unproven = facts.mode == Mode::Kueue && facts.readmission_gate.is_err();
    match access(facts) {
        Writability::ReadOnly => false,
        Writability::ObserveOnly { .. } => !gate_unproven,
        Writability::Writable => true,
    }
}

/// Whether the Backend may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Writability {
    /// It writes.
    Writable,
    /// It reads and reports, but refuses writes: the named gate is not proven.
    ObserveOnly {
        /// The capability that is not yes, and its reason.
        missing: String,
    },
    /// The settings say read-only.
    ReadOnly,
}

fn support(answer: Answer, source: Source, reason: &str) -> Support {
    Support::new(answer, source, reason)
}

/// The answer for one capability, from the facts and, when given, the spec's runtime.
pub(crate) fn answer(
    capability: Capability,
    facts: &PreflightFacts,
    runtime: Option<&SourceRuntime>,
) -> Support {
    use Answer::{No, Unknown, Yes};
    use Source::{Catalogue, Declared, Probed};
    let kueue = facts.mode == Mode::Kueue;
    match capability {
        Capability::ContainerImage => support(Yes, Declared, "spec.trainer.image"),
        Capability::NativeRequeue | Capability::NativeRestart => {
            support(No, Declared, "no push-down in v1")
        }
        Capability::Hold => hold(facts),
        Capability::PreTerminationSignal => support(
            Unknown,
            Catalogue,
            "terminationGracePeriodSeconds is honoured, but SIGTERM delivery was not observed",
        ),
        Capability::AccountingHistory => support(No, Declared, "a deleted TrainJob is gone"),
        Capability::AttemptInjection if kueue => {
            let gate = readmission_gate(facts);
            let reason = format!("the gate controller injects it; {}", gate.reason);
            Support::new(gate.answer, gate.source, reason)
        }
        Capability::AttemptInjection => {
            support(Yes, Declared, "Open and Release raise the admission count")
        }
        Capability::ReadmissionGate if kueue => readmission_gate(facts),
        Capability::ReadmissionGate => {
            support(No, Declared, "not needed: nothing re-admits a TrainJob without Kueue")
        }
        Capability::WorkingDirectory => support(Yes, Declared, "the prologue changes into WorkDir"),
        Capability::ProcsPerNode => procs_per_node(runtime),
        Capability::OutputPath => support(No, Declared, "no stable output location"),
        Capability::OutputRetained => support(No, Declared, "logs go with the pods"),
        Capability::OutputRead | Capability::OutputFollow if facts.may_read_logs => {
            support(Yes, Declared, "rank 0's log of the current execution")
        }
        Capability::OutputRead | Capability::OutputFollow => {
            support(No, Probed, "the adapter may not get pods/log")
        }
    }
}

/// Every capability's answer.
pub fn answers(
    facts: &PreflightFacts,
    runtime: Option<&SourceRuntime>,
) -> BTreeMap<Capability, Support> {
    Capability::ALL.into_iter().map(|c| (c, answer(c, facts, runtime))).collect()
}

fn hold(facts: &PreflightFacts) -> Support {
    if facts.read_only {
        return support(Answer::Unknown, Source::Declared, "not probed: the backend is read-only");
    }
    if facts.mode == Mode::Kueue && !facts.may_update_workloads {
        return support(Answer::No, Source::Probed, NO_WORKLOAD_UPDATES);
    }
    match &facts.hold_round_trip {
        Ok(()) => {
            support(Answer::Yes, Source::Probed, "the preflight probe's hold round trip worked")
        }
        Err(why) => Support::new(
            Answer::No,
            Source::Probed,
            format!("the preflight probe's hold round trip did not succeed: {why}"),
        ),
    }
}

/// Kueue mode's readmission gate: proven from the cluster's objects, and from the
/// permission to update Workloads, without which Hold and Release, the only way to
/// readmit a TrainJob after a preemption, cannot work
/// (`docs/capabilities.md#the-answers`, ReadmissionGate).
fn readmission_gate(facts: &PreflightFacts) -> Support {
    let mut missing = Vec::new();
    if let Err(why) = &facts.readmission_gate {
        missing.push(why.clone());
    }
    if !facts.may_update_workloads {
        missing.push(NO_WORKLOAD_UPDATES.to_owned());
    }
    if missing.is_empty() {
        support(
            Answer::Yes,
            Source::Probed,
            "proven from the ClusterQueue, the AdmissionCheck, the Lease and permission to update Workloads",
        )
    } else {
        Support::new(Answer::No, Source::Probed, format!("not proven: {}", missing.join("; ")))
    }
}

/// Why Kueue-mode holds, and so the readmission gate, fail without `update workloads`.
const NO_WORKLOAD_UPDATES: &str = "the adapter may not update Workloads (update workloads.kueue.x-k8s.io), which Hold and Release need";

fn procs_per_node(runtime: Option<&SourceRuntime>) -> Support {
    let Some(runtime) = runtime else {
        return support(Answer::Unknown, Source::Declared, "no spec: it depends on the runtime");
    };
    let policy = runtime.spec.get("mlPolicy").and_then(|p| p.as_object());
    match policy {
        Some(p) if p.contains_key("torch") => {
            support(Answer::Yes, Source::Declared, "the runtime has mlPolicy.torch")
        }
        Some(_) => support(
            Answer::No,
            Source::Declared,
            "the runtime's ML policy is not torch, and only torch honours numProcPerNode",
        ),
        None => support(
            Answer::No,
            Source::Declared,
            "the runtime has no ML policy, which ignores numProcPerNode",
        ),
    }
}

/// Whether the Backend may write: AttemptInjection must be yes, and in Kueue mode so
/// must ReadmissionGate.
pub fn access(facts: &PreflightFacts) -> Writability {
    if facts.read_only {
        return Writability::ReadOnly;
    }
    if !facts.missing_writes.is_empty() {
        return Writability::ObserveOnly {
            missing: format!(
                "the adapter may not {}: grant them to write (docs/rbac.md)",
                facts.missing_writes.join(", ")
            ),
        };
    }
    let gates: &[Capability] = match facts.mode {
        Mode::Plain => &[Capability::AttemptInjection],
        Mode::Kueue => &[Capability::AttemptInjection, Capability::ReadmissionGate],
    };
    for &gate in gates {
        let s = answer(gate, facts, None);
        if !s.is_yes() {
            return Writability::ObserveOnly {
                missing: format!("{gate:?} is not yes: {}", s.reason),
            };
        }
    }
    match &facts.probe_started {
        Err(why) => Writability::ObserveOnly { missing: why.clone() },
        Ok(()) => Writability::Writable,
    }
}

/// The runtime rules as Capabilities with a spec checks them: `wanted` (the spec's
/// `kubeflow/RuntimeRef`) must be one of the configured `runtimes`, exist (`source`, `None`
/// when it does not) and pass the rules for a job of the spec's counts under the longest
/// name render makes, so that it passes for every submission. Every broken rule is named
/// in one `Unsupported` error.
pub fn check_runtime(
    runtimes: &[RuntimeRef],
    wanted: &RuntimeRef,
    source: Option<&SourceRuntime>,
    spec: &JobSpec,
) -> Result<(), Error> {
    let shape = JobShape::for_capabilities(spec.nodes, spec.procs_per_node);
    rules::check(runtimes, wanted, source, &shape).map(|_| ())
}

/// Whether `action` can be carried out here, given the Hold capability's answer.
pub fn rule_support(action: Action, hold: &Support) -> RuleSupport {
    let (answer, reason) = match action {
        Action::Resubmit | Action::Escalate => {
            (Answer::Yes, "the supervisor carries it out".into())
        }
        Action::Hold => (hold.answer, format!("the Hold capability: {}", hold.reason)),
        Action::Requeue => (Answer::No, "Kubeflow has no requeue".into()),
        Action::Restart => (Answer::No, "no push-down in v1".into()),
    };
    RuleSupport { action, answer, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain() -> PreflightFacts {
        PreflightFacts {
            mode: Mode::Plain,
            read_only: false,
            hold_round_trip: Ok(()),
            may_update_workloads: false,
            readmission_gate: Err("not in Kueue mode".into()),
            may_read_logs: true,
            probe_started: Ok(()),
            missing_writes: Vec::new(),
        }
    }

    fn kueue() -> PreflightFacts {
        PreflightFacts {
            mode: Mode::Kueue,
            may_update_workloads: true,
            readmission_gate: Ok(()),
            ..plain()
        }
    }

    fn runtime(spec: serde_json::Value) -> SourceRuntime {
        SourceRuntime {
            reference: crate::runtime::RuntimeRef {
                kind: crate::runtime::RuntimeKind::ClusterTrainingRuntime,
                name: "torch-distributed".into(),
            },
            namespace: None,
            spec,
        }
    }

    #[test]
    fn plain_mode_writes_without_a_readmission_gate() {
        let a = answers(&plain(), None);
        assert_eq!(a[&Capability::ReadmissionGate].answer, Answer::No);
        assert_eq!(a[&Capability::AttemptInjection].answer, Answer::Yes);
        assert_eq!(a[&Capability::Hold].answer, Answer::Yes);
        assert_eq!(access(&plain()), Writability::Writable);
    }

    #[test]
    fn kueue_mode_without_a_proven_gate_is_observe_only_naming_it() {
        let facts =
            PreflightFacts { readmission_gate: Err("the Lease has expired".into()), ..kueue() };
        let a = answers(&facts, None);
        assert_eq!(a[&Capability::ReadmissionGate].answer, Answer::No);
        assert_eq!(a[&Capability::AttemptInjection].answer, Answer::No);
        match access(&facts) {
            Writability::ObserveOnly { missing } => {
                assert!(
                    missing.contains("AttemptInjection") && missing.contains("Lease"),
                    "{missing}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(access(&kueue()), Writability::Writable);
    }

    #[test]
    fn only_a_verdict_a_person_must_change_lasts() {
        assert!(lasting(&plain()), "writable");
        let forbidden =
            PreflightFacts { probe_started: Err("create trainjobs: forbidden".into()), ..plain() };
        assert!(lasting(&forbidden), "a refusal a person must fix lasts");
        assert!(
            !lasting(&PreflightFacts { read_only: true, ..plain() }),
            "read-only probes nothing"
        );
        let kueue = PreflightFacts {
            mode: Mode::Kueue,
            may_update_workloads: true,
            readmission_gate: Err("the gate's Lease is not fresh".into()),
            ..plain()
        };
        assert!(!lasting(&kueue), "a gate between leaders");
        assert!(lasting(&PreflightFacts { readmission_gate: Ok(()), ..kueue }), "a proven gate");
    }

    #[test]
    fn a_probe_that_could_not_start_makes_the_backend_observe_only() {
        let facts =
            PreflightFacts { probe_started: Err("create trainjobs: forbidden".into()), ..plain() };
        assert_eq!(
            access(&facts),
            Writability::ObserveOnly { missing: "create trainjobs: forbidden".into() }
        );
    }

    /// A write the adapter makes but may not is named, every one.
    #[test]
    fn a_missing_write_permission_makes_the_backend_observe_only_naming_each() {
        let facts = PreflightFacts {
            missing_writes: vec!["create trainjobs".into(), "update trainjobs".into()],
            ..plain()
        };
        match access(&facts) {
            Writability::ObserveOnly { missing } => {
                assert!(missing.contains("create trainjobs, update trainjobs"), "{missing}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(access(&PreflightFacts { read_only: true, ..facts }), Writability::ReadOnly);
    }

    #[test]
    fn read_only_probes_nothing_and_holds_are_unknown() {
        let facts =
            PreflightFacts { read_only: true, hold_round_trip: Err("not run".into()), ..plain() };
        let hold = answer(Capability::Hold, &facts, None);
        assert_eq!((hold.answer, hold.source), (Answer::Unknown, Source::Declared));
        assert_eq!(access(&facts), Writability::ReadOnly);
    }

    #[test]
    fn kueue_holds_need_permission_to_update_workloads() {
        let facts = PreflightFacts { may_update_workloads: false, ..kueue() };
        assert_eq!(answer(Capability::Hold, &facts, None).answer, Answer::No);
    }

    /// The permission counts in the gate's proof, so without it the
    /// Backend observes only, naming it.
    #[test]
    fn kueue_mode_without_permission_to_update_workloads_is_observe_only_naming_it() {
        let facts = PreflightFacts { may_update_workloads: false, ..kueue() };
        let gate = answer(Capability::ReadmissionGate, &facts, None);
        assert_eq!(gate.answer, Answer::No);
        assert!(gate.reason.contains("update workloads"), "{}", gate.reason);
        match access(&facts) {
            Writability::ObserveOnly { missing } => {
                assert!(missing.contains("update workloads"), "{missing}")
            }
            other => panic!("{other:?}"),
        }
        let both =
            PreflightFacts { readmission_gate: Err("the Lease has expired".into()), ..facts };
        let reason = answer(Capability::ReadmissionGate, &both, None).reason;
        assert!(reason.contains("Lease") && reason.contains("update workloads"), "{reason}");
    }

    #[test]
    fn output_is_lowered_without_pods_log() {
        let facts = PreflightFacts { may_read_logs: false, ..plain() };
        for c in [Capability::OutputRead, Capability::OutputFollow] {
            let s = answer(c, &facts, None);
            assert_eq!((s.answer, s.source), (Answer::No, Source::Probed));
        }
    }

    #[test]
    fn procs_per_node_depends_on_the_runtime_ml_policy() {
        let ask =
            |rt: Option<&SourceRuntime>| answer(Capability::ProcsPerNode, &plain(), rt).answer;
        assert_eq!(ask(None), Answer::Unknown);
        assert_eq!(ask(Some(&runtime(json!({"mlPolicy": {"torch": {}}})))), Answer::Yes);
        assert_eq!(ask(Some(&runtime(json!({"mlPolicy": {"mpi": {}}})))), Answer::No);
        assert_eq!(ask(Some(&runtime(json!({"template": {}})))), Answer::No);
    }

    #[test]
    fn rules_follow_the_seed_table() {
        let hold = answer(Capability::Hold, &plain(), None);
        let row = |a| rule_support(a, &hold).answer;
        assert_eq!(row(Action::Resubmit), Answer::Yes);
        assert_eq!(row(Action::Escalate), Answer::Yes);
        assert_eq!(row(Action::Hold), Answer::Yes);
        assert_eq!(row(Action::Requeue), Answer::No);
        assert_eq!(row(Action::Restart), Answer::No);
        let no_hold = answer(
            Capability::Hold,
            &PreflightFacts { hold_round_trip: Err("x".into()), ..plain() },
            None,
        );
        assert_eq!(rule_support(Action::Hold, &no_hold).answer, Answer::No);
    }
}
