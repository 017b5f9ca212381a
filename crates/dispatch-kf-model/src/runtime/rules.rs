//! The runtime rules: what a runtime must state before a job may run on it
//! (`docs/runtime-requirements.md`, rules 1-8). A runtime not listed in `runtimes`, one
//! that does not exist, one that breaks a rule, and ProcsPerNode on a runtime without
//! `mlPolicy.torch` are all *unsupported*
//! (`docs/render.md#runtime-rules-unsupported-every-broken-rule-named`).
//!
//! [`check`] is the one place these rules live. Render calls it with the real name and
//! node count; Capabilities with a spec calls it with the spec's node count and a name of
//! [`crate::names::MAX_LEN`] characters. Every broken rule is reported at once.

use dispatch_core::Error;
use serde_json::Value;

use super::{RuntimeRef, SourceRuntime};
use crate::keys;

/// The longest name Kubernetes gives a pod (an RFC 1123 label).
const MAX_POD_NAME: usize = 63;
/// The random suffix a Job adds to a pod's name (`-xxxxx`).
const POD_SUFFIX: &str = "-xxxxx";

/// The parts of a job the rules depend on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobShape<'a> {
    /// The TrainJob's name (the JobSet's name too).
    pub name: &'a str,
    /// The number of nodes the job asks for.
    pub nodes: i64,
    /// Processes per node; above 0 needs `mlPolicy.torch`.
    pub procs_per_node: i64,
}

impl JobShape<'static> {
    /// The shape Capabilities with a spec checks: the spec's counts and a name of the
    /// longest length render makes ([`crate::names::MAX_LEN`]), so that a runtime that
    /// passes here passes for every submission.
    pub(crate) fn for_capabilities(nodes: i64, procs_per_node: i64) -> JobShape<'static> {
        JobShape { name: crate::names::LONGEST, nodes, procs_per_node }
    }
}

/// A runtime that passed the rules, and what render needs from it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TrainerStep<'s> {
    /// The runtime checked.
    pub source: &'s SourceRuntime,
    /// The name of the replicated job that carries the trainer step.
    pub replicated_job: String,
}

/// A rule over a runtime that exists and is configured: the problems it finds.
type Rule = fn(&Runtime<'_>, &JobShape<'_>) -> Vec<String>;

/// Rules 2 to 8 of "Runtime requirements", one row each (rule 1, configured and
/// present, is checked first by [`check`] because the others need the runtime).
const RULES: [(u8, Rule); 7] = [
    (2, rule_one_trainer_job),
    (3, rule_restart_never),
    (4, rule_backoff_zero),
    (5, rule_names_fit),
    (6, rule_jobset_managed_by),
    (7, rule_torch_for_procs),
    (8, rule_restarts_counted),
];

/// JobSet failure-policy actions that run ranks again without raising the restart
/// attempt the pods carry (J): they recreate one child Job and count it only in
/// `replicatedJobsStatus[].jobRestarts` (JobSet v0.12, feature gate `RestartJob`).
const UNCOUNTED_ACTIONS: [&str; 2] = ["RestartJob", "RestartJobAndIgnoreMaxRestarts"];

/// The JobSet restart strategy that restarts ranks in place, counted only in a pod
/// annotation (JobSet v0.11, feature gate `InPlaceRestart`).
const UNCOUNTED_STRATEGY: &str = "InPlaceRestart";

/// Checks `wanted` against the configured `runtimes`, its `source` (`None` when it does
/// not exist) and the rules, for a job of `shape`. Every broken rule is named in one
/// `Unsupported` error; on success, the trainer step render patches.
pub(crate) fn check<'s>(
    runtimes: &[RuntimeRef],
    wanted: &RuntimeRef,
    source: Option<&'s SourceRuntime>,
    shape: &JobShape<'_>,
) -> Result<TrainerStep<'s>, Error> {
    let refuse = |reasons: Vec<String>| {
        Error::unsupported(format!("runtime {wanted} cannot run the job: {}", reasons.join("; ")))
    };
    let mut reasons = Vec::new();
    if !runtimes.contains(wanted) {
        let list: Vec<String> = runtimes.iter().map(ToString::to_string).collect();
        reasons.push(format!("it is not one of the configured runtimes ({})", list.join(", ")));
    }
    let source = source.filter(|s| s.reference == *wanted);
    let Some(source) = source else {
        reasons.push("it does not exist".to_owned());
        return Err(refuse(reasons));
    };
    let runtime = Runtime::new(&source.spec);
    for (_, rule) in RULES {
        reasons.extend(rule(&runtime, shape));
    }
    match (reasons.is_empty(), runtime.trainer_job()) {
        (true, Some(job)) => Ok(TrainerStep { source, replicated_job: job.name.to_owned() }),
        _ => Err(refuse(reasons)),
    }
}

/// A replicated job of the runtime's JobSet template.
struct ReplicatedJob<'a> {
    name: &'a str,
    raw: &'a Value,
}

impl ReplicatedJob<'_> {
    /// `replicas`, which JobSet defaults to 1; `None` when it is not a whole number.
    fn replicas(&self) -> Option<i64> {
        match self.raw.get("replicas") {
            None => Some(1),
            Some(v) => v.as_i64(),
        }
    }
    fn job_spec(&self) -> Option<&Value> {
        self.raw.pointer("/template/spec")
    }
    fn pod_spec(&self) -> Option<&Value> {
        self.raw.pointer("/template/spec/template/spec")
    }
    fn is_trainer(&self) -> bool {
        let step = self
            .raw
            .pointer("/template/metadata/labels")
            .and_then(|l| l.get(keys::TRAINER_ANCESTOR_STEP));
        step.and_then(Value::as_str) == Some(keys::TRAINER_STEP)
    }
}

/// The parts of a runtime spec the rules read.
struct Runtime<'a> {
    spec: &'a Value,
    jobs: Vec<ReplicatedJob<'a>>,
}

impl<'a> Runtime<'a> {
    fn new(spec: &'a Value) -> Runtime<'a> {
        let list = spec.pointer("/template/spec/replicatedJobs").and_then(Value::as_array);
        let jobs = list
            .into_iter()
            .flatten()
            .map(|raw| ReplicatedJob {
                name: raw.get("name").and_then(Value::as_str).unwrap_or(""),
                raw,
            })
            .collect();
        Runtime { spec, jobs }
    }
    /// The trainer job, when exactly one replicated job carries the trainer step.
    fn trainer_job(&self) -> Option<&ReplicatedJob<'a>> {
        let mut trainers = self.jobs.iter().filter(|j| j.is_trainer());
        match (trainers.next(), trainers.next()) {
            (Some(job), None) => Some(job),
            _ => None,
        }
    }
}

/// Rule 2: exactly one trainer job, with one replica and a `node` container.
fn rule_one_trainer_job(rt: &Runtime<'_>, _: &JobShape<'_>) -> Vec<String> {
    let step = format!("{}: {}", keys::TRAINER_ANCESTOR_STEP, keys::TRAINER_STEP);
    let count = rt.jobs.iter().filter(|j| j.is_trainer()).count();
    let Some(job) = rt.trainer_job() else {
        return vec![format!("{count} replicated jobs carry {step}: want exactly one")];
    };
    let mut problems = Vec::new();
    if job.replicas() != Some(1) {
        problems.push(format!(
            "replicated job {} has replicas {}: want 1",
            job.name,
            shown(job.raw.get("replicas"))
        ));
    }
    let containers = job.pod_spec().and_then(|p| p.get("containers")).and_then(Value::as_array);
    let has_node = containers
        .into_iter()
        .flatten()
        .any(|c| c.get("name").and_then(Value::as_str) == Some(keys::NODE_CONTAINER));
    if !has_node {
        problems.push(format!(
            "replicated job {} has no container named {}: the Trainer would ignore the job's image and command",
            job.name,
            keys::NODE_CONTAINER
        ));
    }
    problems
}

/// Rule 3: the trainer job's pods state `restartPolicy: Never`.
fn rule_restart_never(rt: &Runtime<'_>, _: &JobShape<'_>) -> Vec<String> {
    let Some(job) = rt.trainer_job() else { return Vec::new() };
    let policy = job.pod_spec().and_then(|p| p.get("restartPolicy"));
    if policy.and_then(Value::as_str) == Some("Never") {
        return Vec::new();
    }
    vec![format!(
        "replicated job {} has restartPolicy {}: want Never, so a failed container is not restarted in place",
        job.name,
        shown(policy)
    )]
}

/// Rule 4: the trainer job states `backoffLimit: 0`.
fn rule_backoff_zero(rt: &Runtime<'_>, _: &JobShape<'_>) -> Vec<String> {
    let Some(job) = rt.trainer_job() else { return Vec::new() };
    let limit = job.job_spec().and_then(|s| s.get("backoffLimit"));
    if limit.and_then(Value::as_i64) == Some(0) {
        return Vec::new();
    }
    vec![format!(
        "replicated job {} has backoffLimit {}: want 0, so a failed pod is not replaced inside one execution",
        job.name,
        shown(limit)
    )]
}

/// Rule 5: every name JobSet generates fits in 63 characters.
fn rule_names_fit(rt: &Runtime<'_>, shape: &JobShape<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    for job in &rt.jobs {
        let replicas = job.replicas().unwrap_or(1);
        if replicas >= 1 {
            let name = format!("{}-{}-{}", shape.name, job.name, replicas - 1);
            if name.len() > MAX_POD_NAME {
                problems.push(too_long(&name));
            }
        }
        if job.is_trainer() {
            let pod =
                format!("{}-{}-0-{}{POD_SUFFIX}", shape.name, job.name, shape.nodes.max(1) - 1);
            if pod.len() > MAX_POD_NAME {
                problems.push(too_long(&pod));
            }
        }
    }
    problems
}

fn too_long(name: &str) -> String {
    format!(
        "JobSet would generate the name {name} ({} characters): want at most {MAX_POD_NAME}",
        name.len()
    )
}

/// Rule 6: the JobSet template names no manager but JobSet's own controller.
fn rule_jobset_managed_by(rt: &Runtime<'_>, _: &JobShape<'_>) -> Vec<String> {
    match rt.spec.pointer("/template/spec/managedBy") {
        None => Vec::new(),
        Some(Value::String(m)) if m == keys::JOBSET_CONTROLLER => Vec::new(),
        Some(other) => vec![format!(
            "its JobSet template sets managedBy {}: want none or {}",
            shown(Some(other)),
            keys::JOBSET_CONTROLLER
        )],
    }
}

/// Rule 7: a job that asks for ProcsPerNode needs `mlPolicy.torch`.
fn rule_torch_for_procs(rt: &Runtime<'_>, shape: &JobShape<'_>) -> Vec<String> {
    if shape.procs_per_node > 0 && rt.spec.pointer("/mlPolicy/torch").is_none() {
        return vec![
            "the job asks for procsPerNode but the runtime has no mlPolicy.torch, which would ignore it"
                .to_owned(),
        ];
    }
    Vec::new()
}

/// Rule 8: the JobSet's failure policy restarts ranks only in ways the execution
/// identity counts (`RestartJobSet`, which raises J on every pod; `FailJobSet`).
fn rule_restarts_counted(rt: &Runtime<'_>, _: &JobShape<'_>) -> Vec<String> {
    const WHY: &str = "JobSet would run ranks again under the restart attempt they already carry, so two executions would share one identity";
    let Some(policy) = rt.spec.pointer("/template/spec/failurePolicy") else { return Vec::new() };
    let mut problems = Vec::new();
    let strategy = policy.get("restartStrategy");
    if strategy.and_then(Value::as_str) == Some(UNCOUNTED_STRATEGY) {
        problems.push(format!(
            "its JobSet template's failurePolicy.restartStrategy is {}: {WHY}",
            shown(strategy)
        ));
    }
    let rules = policy.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let action = rule.get("action");
        if action.and_then(Value::as_str).is_some_and(|a| UNCOUNTED_ACTIONS.contains(&a)) {
            problems.push(format!(
                "its JobSet template's failurePolicy.rules[{i}].action is {}: {WHY}",
                shown(action)
            ));
        }
    }
    problems
}

/// A value as a message shows it; `none` when absent.
fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "none".to_owned(), Value::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::Kind;
    use serde_json::json;

    fn source(spec: Value) -> SourceRuntime {
        SourceRuntime {
            reference: RuntimeRef {
                kind: super::super::RuntimeKind::ClusterTrainingRuntime,
                name: "t".into(),
            },
            namespace: None,
            spec,
        }
    }

    fn good() -> Value {
        json!({"mlPolicy": {"torch": {}}, "template": {"spec": {"replicatedJobs": [{
            "name": "node",
            "template": {"metadata": {"labels": {keys::TRAINER_ANCESTOR_STEP: keys::TRAINER_STEP}},
                         "spec": {"backoffLimit": 0, "template": {"spec": {
                             "restartPolicy": "Never", "containers": [{"name": "node"}]}}}}}]}}})
    }

    const SHAPE: JobShape<'static> =
        JobShape { name: "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1", nodes: 2, procs_per_node: 8 };

    #[test]
    fn a_runtime_stating_every_rule_passes() {
        let rt = source(good());
        let step =
            check(std::slice::from_ref(&rt.reference), &rt.reference, Some(&rt), &SHAPE).unwrap();
        assert_eq!(step.replicated_job, "node");
    }

    #[test]
    fn every_broken_rule_is_named_at_once() {
        let mut spec = good();
        spec["mlPolicy"] = json!({"mpi": {}});
        spec["template"]["spec"]["managedBy"] = json!("someone/else");
        let job = &mut spec["template"]["spec"]["replicatedJobs"][0];
        job["replicas"] = json!(2);
        job["template"]["spec"]["backoffLimit"] = json!(6);
        job["template"]["spec"]["template"]["spec"] = json!({"containers": [{"name": "trainer"}]});
        spec["template"]["spec"]["failurePolicy"] = json!({"restartStrategy": "InPlaceRestart",
            "rules": [{"action": "FailJobSet"}, {"action": "RestartJob"}]});
        let rt = source(spec);
        let err = check(&[], &rt.reference, Some(&rt), &SHAPE).unwrap_err();
        assert!(err.is(Kind::Unsupported));
        for part in [
            "configured runtimes",
            "replicas 2",
            "no container named node",
            "restartPolicy none",
            "backoffLimit 6",
            "managedBy \"someone/else\"",
            "mlPolicy.torch",
            "failurePolicy.restartStrategy is \"InPlaceRestart\"",
            "failurePolicy.rules[1].action is \"RestartJob\"",
        ] {
            assert!(err.message().contains(part), "{part}: {err}");
        }
    }

    #[test]
    fn restarts_the_identity_counts_pass_and_others_are_named() {
        let with_policy = |policy: Value| {
            let mut spec = good();
            spec["template"]["spec"]["failurePolicy"] = policy;
            source(spec)
        };
        let passes = with_policy(json!({"maxRestarts": 3, "restartStrategy": "BlockingRecreate",
            "rules": [{"action": "FailJobSet"}, {"action": "RestartJobSet"},
                      {"action": "RestartJobSetAndIgnoreMaxRestarts"}]}));
        assert!(
            check(
                std::slice::from_ref(&passes.reference),
                &passes.reference,
                Some(&passes),
                &SHAPE
            )
            .is_ok()
        );
        let refused = with_policy(json!({"rules": [{"action": "RestartJobAndIgnoreMaxRestarts"}]}));
        let err = check(
            std::slice::from_ref(&refused.reference),
            &refused.reference,
            Some(&refused),
            &SHAPE,
        )
        .unwrap_err();
        assert!(err.is(Kind::Unsupported), "{err}");
        assert!(
            err.message().ends_with(
                "failurePolicy.rules[0].action is \"RestartJobAndIgnoreMaxRestarts\": JobSet would run ranks again under the restart attempt they already carry, so two executions would share one identity"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_missing_runtime_is_unsupported() {
        let rt = source(good());
        let err =
            check(std::slice::from_ref(&rt.reference), &rt.reference, None, &SHAPE).unwrap_err();
        assert!(err.is(Kind::Unsupported) && err.message().ends_with("it does not exist"), "{err}");
    }

    #[test]
    fn capabilities_check_with_the_longest_name() {
        let rt = source(good());
        let shape = JobShape::for_capabilities(2, 0);
        assert!(
            check(std::slice::from_ref(&rt.reference), &rt.reference, Some(&rt), &shape).is_ok()
        );
    }

    #[test]
    fn names_fit_checks_the_real_node_count() {
        let rt = source(good());
        let many = JobShape { nodes: 1_000_000_000_000_000_000, ..SHAPE };
        let err = check(std::slice::from_ref(&rt.reference), &rt.reference, Some(&rt), &many)
            .unwrap_err();
        assert!(
            err.message().contains("-node-0-999999999999999999-xxxxx (64 characters)"),
            "{err}"
        );
    }
}
