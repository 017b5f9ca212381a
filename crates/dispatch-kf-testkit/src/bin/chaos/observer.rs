//! The observer: the cluster as plain Kubernetes reads show it, sampled every half
//! second with the admin's own client (none of the adapter's code), and the checks
//! made on each sample:
//!
//! 1. the running pods of one job belong to one execution (submission, admission A,
//!    restart attempt J, JobSet UID): never two executions at once, and never a new
//!    submission beside the one before;
//! 2. no pod of an execution the adapter said ended was made after it said so (an
//!    ended execution stays ended, docs/execution-identity.md);
//! 3. in Kueue mode, a gate holds a fresh Lease again soon after each gate fault.
//!
//! A pod made after a sample that lacked its Job, where that sample came after one
//! that held the Job or after the first that missed the pod's TrainJob (so a pod made
//! for an owner already deleted, or of a Job made after its TrainJob was: by a
//! controller whose cache is behind), is no pod of the adapter's doing: it is noted
//! and counted apart, not judged by checks 1 and 2 (docs/dev/chaos.md).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dispatch_kf_model::keys;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use crate::report::Log;
use crate::{NS, resource};

/// How often the cluster is sampled.
const EVERY: Duration = Duration::from_millis(500);
/// How long no gate may hold a fresh Lease before it is a violation (a gate replica is
/// down or frozen at most ten seconds at a time, the Lease lasts fifteen, the other
/// replica looks every two).
const LEADERLESS: Duration = Duration::from_secs(60);

/// An execution as its pods carry it: admission count A, restart attempt J, JobSet UID.
type Execution = (String, String, String);

/// A pod as the observer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pod {
    pub(crate) name: String,
    pub(crate) job: String,
    pub(crate) submission: String,
    pub(crate) execution: Execution,
    pub(crate) node: String,
    pub(crate) running: bool,
    /// Whether it is being deleted (its phase may still say Running).
    pub(crate) terminating: bool,
    pub(crate) created: Option<jiff::Timestamp>,
    /// The name of its controller (a batch Job).
    pub(crate) owner: String,
    /// Its controller's UID.
    pub(crate) owner_uid: String,
    /// The name of its TrainJob (and JobSet).
    pub(crate) train_job: String,
}

impl Pod {
    fn of(pod: &DynamicObject) -> Option<Pod> {
        let labels = pod.metadata.labels.as_ref()?;
        let annotations = pod.metadata.annotations.clone().unwrap_or_default();
        let label = |k: &str| labels.get(k).cloned().unwrap_or_default();
        let owners = pod.metadata.owner_references.iter().flatten();
        let controller = owners.into_iter().find(|o| o.controller == Some(true));
        Some(Pod {
            name: pod.metadata.name.clone()?,
            job: labels.get(keys::LABEL_JOB_ID)?.clone(),
            submission: label(keys::LABEL_SUBMISSION),
            execution: (
                annotations.get(keys::ANN_ADMISSION).cloned().unwrap_or_default(),
                label("jobset.sigs.k8s.io/restart-attempt"),
                label("jobset.sigs.k8s.io/jobset-uid"),
            ),
            node: pod.data["spec"]["nodeName"].as_str().unwrap_or_default().to_owned(),
            running: pod.data["status"]["phase"] == "Running",
            terminating: pod.metadata.deletion_timestamp.is_some(),
            created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            owner: controller.map(|o| o.name.clone()).unwrap_or_default(),
            owner_uid: controller.map(|o| o.uid.clone()).unwrap_or_default(),
            train_job: label(keys::JOBSET_NAME),
        })
    }
}

/// The observer's task and what it last saw.
pub(crate) struct Observer {
    seen: Arc<Mutex<Vec<Pod>>>,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Observer {
    pub(crate) fn start(kube: kube::Client, kueue: bool, log: Arc<Log>) -> Observer {
        if !kueue {
            // No gate to wait for: nothing may answer read-only.
            log.gate_leads(Some(Instant::now()));
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let into = seen.clone();
        let task = tokio::spawn(async move {
            let pods = Api::<DynamicObject>::namespaced_with(
                kube.clone(),
                NS,
                &resource("", "v1", "Pod", "pods"),
            );
            let leases = Api::<DynamicObject>::namespaced_with(
                kube.clone(),
                "dispatch-system",
                &resource("coordination.k8s.io", "v1", "Lease", "leases"),
            );
            let jobs = Api::<DynamicObject>::namespaced_with(
                kube.clone(),
                NS,
                &resource("batch", "v1", "Job", "jobs"),
            );
            let train_jobs = Api::<DynamicObject>::namespaced_with(
                kube,
                NS,
                &resource(keys::TRAINER_GROUP, "v1alpha1", "TrainJob", "trainjobs"),
            );
            let mut checks = Checks::default();
            while !*stopped.borrow() {
                // Owners before pods: one missing here was deleted before any pod the
                // pods list shows was made after this moment.
                if let Ok(list) = train_jobs.list(&ListParams::default()).await {
                    let names = list.items.iter().filter_map(|j| j.metadata.name.clone());
                    checks.train_jobs.sample(names.collect(), jiff::Timestamp::now());
                }
                if let Ok(list) = jobs.list(&ListParams::default()).await {
                    let uids = list.items.iter().filter_map(|j| j.metadata.uid.clone());
                    checks.jobs.sample(uids, jiff::Timestamp::now());
                }
                if let Ok(list) = pods.list(&ListParams::default()).await {
                    let now: Vec<Pod> = list.items.iter().filter_map(Pod::of).collect();
                    for job in checks.sample(&now, &log) {
                        let of_job: Vec<&Pod> = now.iter().filter(|p| p.job == job).collect();
                        let evidence = violation_evidence(&jobs, &of_job).await;
                        log.note(format!(
                            "job {job}'s violation: {evidence}; what its supervisor did last:{}",
                            log.trace_of(&job)
                        ));
                    }
                    *into.lock().expect("not poisoned") = now;
                }
                if kueue {
                    let lease = leases.get_opt("dispatch-readmission-gate").await;
                    checks.lease(lease.ok().flatten(), &log);
                }
                let _ = tokio::time::timeout(EVERY, stopped.changed()).await;
            }
        });
        Observer { seen, stop, task }
    }

    /// The running pods of the last sample that are not being deleted: what a fault may
    /// pick. (A pod being deleted on a node already lost and replaced still says
    /// Running; picking it lost a node that was gone.)
    pub(crate) fn running(&self) -> Vec<Pod> {
        let seen = self.seen.lock().expect("not poisoned");
        seen.iter().filter(|p| p.running && !p.terminating).cloned().collect()
    }

    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// TrainJobs (by name) seen in the samples, and when a sample first missed each; a name
/// seen again (taken anew) is no longer missed.
#[derive(Default)]
struct Missed {
    seen: BTreeSet<String>,
    gone: BTreeMap<String, jiff::Timestamp>,
}

impl Missed {
    /// Takes a sample of the names `present`, listed by `at`.
    fn sample(&mut self, present: BTreeSet<String>, at: jiff::Timestamp) {
        for gone in self.seen.difference(&present) {
            self.gone.entry(gone.clone()).or_insert(at);
        }
        self.gone.retain(|owner, _| !present.contains(owner));
        self.seen.extend(present);
    }
}

/// The Jobs' samples: when each was taken, and each Job's first and last (a Job's UID
/// is present over one stretch of samples).
#[derive(Default)]
struct JobSamples {
    taken: Vec<jiff::Timestamp>,
    seen: BTreeMap<String, (jiff::Timestamp, jiff::Timestamp)>,
}

impl JobSamples {
    /// Takes a sample of the Jobs `present` (by UID), listed by `at`.
    fn sample(&mut self, present: impl Iterator<Item = String>, at: jiff::Timestamp) {
        for uid in present {
            self.seen.entry(uid).or_insert((at, at)).1 = at;
        }
        self.taken.push(at);
    }

    /// Whether a sample taken after `after` and before `before` lacked the Job `uid`.
    fn lacked(&self, uid: &str, after: jiff::Timestamp, before: jiff::Timestamp) -> bool {
        let from = self.taken.partition_point(|t| *t <= after);
        let stretch = self.seen.get(uid);
        self.taken[from..]
            .iter()
            .take_while(|t| **t < before)
            .any(|t| stretch.is_none_or(|(first, last)| t < first || t > last))
    }
}

/// What the checks remember between samples: each violation is said once; the owners
/// seen and missed.
#[derive(Default)]
struct Checks {
    said: BTreeSet<String>,
    train_jobs: Missed,
    jobs: JobSamples,
    leaderless_since: Option<Instant>,
    led_since: Option<Instant>,
}

impl Checks {
    /// Says a violation once per `key`; whether it was said now.
    fn say(&mut self, log: &Log, key: String, text: String) -> bool {
        let new = self.said.insert(key);
        if new {
            log.violation(text);
        }
        new
    }

    /// Whether `pod` was made for an owner already deleted, and which: a sample taken
    /// before the pod was made lacked its Job, after one had held the Job (the Job was
    /// deleted) or after the first that missed its TrainJob (the Job was deleted, or
    /// made after its TrainJob was). Creation times are whole seconds: "before" is
    /// before the second the pod was made in. A pod of a Job that outlived its
    /// TrainJob is judged: the adapter's StopJob waits for such a Job.
    fn made_for_a_deleted_owner(&self, pod: &Pod) -> Option<String> {
        let made = pod.created?;
        let uid = &pod.owner_uid;
        let held = self.jobs.seen.get(uid).map(|(_, last)| *last);
        if held.is_some_and(|last| self.jobs.lacked(uid, last, made)) {
            return Some(format!("Job {}, deleted before", pod.owner));
        }
        let missed = self.train_jobs.gone.get(&pod.train_job)?;
        self.jobs.lacked(uid, *missed, made).then(|| {
            format!(
                "TrainJob {} (missed at {missed}), Job {} not there after",
                pod.train_job, pod.owner
            )
        })
    }

    /// Checks one sample; returns the jobs newly seen running two executions at once, or
    /// a pod of an execution said ended.
    fn sample(&mut self, pods: &[Pod], log: &Log) -> Vec<String> {
        let mut judged = Vec::new();
        for pod in pods {
            let Some(owner) = self.made_for_a_deleted_owner(pod) else {
                judged.push(pod);
                continue;
            };
            if pod.running && self.said.insert(format!("stale {}", pod.name)) {
                log.stale_pod(format!(
                    "pod {} of job {} (s{} A={} J={}) made at {:?} for {owner}",
                    pod.name,
                    pod.job,
                    pod.submission,
                    pod.execution.0,
                    pod.execution.1,
                    pod.created
                ));
            }
        }
        let mut overlapping = Vec::new();
        let mut by_job: BTreeMap<&str, BTreeSet<(&str, &Execution)>> = BTreeMap::new();
        for pod in judged.iter().filter(|p| p.running) {
            by_job.entry(&pod.job).or_default().insert((&pod.submission, &pod.execution));
        }
        for (job, executions) in by_job {
            if executions.len() < 2 {
                continue;
            }
            let key = format!("{job} {executions:?}");
            let text = format!(
                "job {job} runs pods of {} executions at once: {executions:?}",
                executions.len()
            );
            // The Trainer makes a running TrainJob's JobSet again at once when someone
            // deletes it, while the old one's pods still terminate: the same submission,
            // A and J, another JobSet. Nothing the adapter does can stop it; it is
            // counted apart (docs/dev/chaos.md).
            let (submission, (admission, attempt, _)) = executions.first().expect("two");
            let remade = executions
                .iter()
                .all(|(s, (a, j, _))| (s, a, j) == (submission, admission, attempt));
            if remade && log.job_set_was_deleted(job) {
                if self.said.insert(key) {
                    log.note(format!(
                        "a JobSet deleted by hand was made again while its pods terminated: {text}"
                    ));
                }
            } else if self.say(log, key, text) {
                overlapping.push(job.to_owned());
            }
        }
        for ended in log.ended_so_far() {
            let after = ended.at + jiff::SignedDuration::from_secs(1);
            for pod in judged.iter().filter(|p| {
                p.running
                    && p.job == ended.job
                    && p.submission == ended.submission
                    && p.execution.0 == ended.admission.to_string()
                    && p.execution.1 == ended.restart_attempt.to_string()
                    && p.created.is_some_and(|c| c > after)
            }) {
                let text = format!(
                    "pod {} of job {} submission {} A={} J={} made at {:?} runs after that execution was said ended at {}",
                    pod.name,
                    pod.job,
                    pod.submission,
                    pod.execution.0,
                    pod.execution.1,
                    pod.created,
                    ended.at
                );
                if self.say(log, pod.name.clone(), text) {
                    overlapping.push(pod.job.clone());
                }
            }
        }
        overlapping
    }

    fn lease(&mut self, lease: Option<DynamicObject>, log: &Log) {
        let fresh = lease.is_some_and(|l| {
            let renewed = l.data["spec"]["renewTime"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok());
            let lasts = l.data["spec"]["leaseDurationSeconds"].as_i64().unwrap_or(0);
            let holder = l.data["spec"]["holderIdentity"].as_str().is_some_and(|h| !h.is_empty());
            holder
                && renewed.is_some_and(|r| {
                    r + jiff::SignedDuration::from_secs(lasts) > jiff::Timestamp::now()
                })
        });
        match (fresh, self.led_since) {
            (true, None) => self.led_since = Some(Instant::now()),
            (false, Some(_)) => self.led_since = None,
            _ => {}
        }
        log.gate_leads(self.led_since);
        match (fresh, self.leaderless_since) {
            (true, Some(since)) => {
                if since.elapsed() > Duration::from_secs(15) {
                    log.note(format!("no gate held a fresh Lease for {:.0?}", since.elapsed()));
                }
                self.leaderless_since = None;
            }
            (false, None) => self.leaderless_since = Some(Instant::now()),
            (false, Some(since)) if since.elapsed() > LEADERLESS => {
                let text = format!("no gate has held a fresh Lease for {LEADERLESS:?}");
                self.say(log, format!("leaderless {since:?}"), text);
            }
            _ => {}
        }
    }
}

/// Who made the pods of a violation: each pod's creation, whether it is being deleted,
/// and its Job, with the Job's creation and controller UID (against the pods' JobSet
/// UID) or that the Job is gone; so a report tells a JobSet or Job made again by a
/// controller from one the adapter left.
async fn violation_evidence(jobs: &Api<DynamicObject>, pods: &[&Pod]) -> String {
    let mut parts = Vec::new();
    let mut owners = BTreeSet::new();
    for pod in pods {
        parts.push(format!(
            "pod {} (s{} A={} J={} JobSet {}) made {:?}, running {}, of Job {}",
            pod.name,
            pod.submission,
            pod.execution.0,
            pod.execution.1,
            pod.execution.2,
            pod.created,
            pod.running,
            pod.owner
        ));
        owners.insert(pod.owner.clone());
    }
    for owner in owners.into_iter().filter(|o| !o.is_empty()) {
        parts.push(match jobs.get_opt(&owner).await {
            Ok(Some(job)) => format!(
                "Job {owner} made {:?}, deleting {}, controller {:?}, suspend {}, status {}",
                job.metadata.creation_timestamp.map(|t| t.0),
                job.metadata.deletion_timestamp.is_some(),
                job.metadata.owner_references.iter().flatten().map(|o| &o.uid).collect::<Vec<_>>(),
                job.data["spec"]["suspend"],
                job_status(&job.data["status"]),
            ),
            Ok(None) => format!("Job {owner} is gone"),
            Err(e) => format!("Job {owner}: {e}"),
        });
    }
    parts.join("; ")
}

/// A Job's counts and conditions, as `active/failed/terminating [Type=Status Reason ...]`.
fn job_status(status: &serde_json::Value) -> String {
    let count = |key: &str| status[key].as_i64().unwrap_or(0);
    let conditions: Vec<String> = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| format!("{}={} {}", c["type"], c["status"], c["reason"]))
        .collect();
    format!(
        "active {} failed {} terminating {} {conditions:?}",
        count("active"),
        count("failed"),
        count("terminating")
    )
}

/// The preflight probes whose TrainJob or runtime copy the namespace holds, by job id,
/// each with whether its expiry and the clock allowance have passed (read here from
/// the objects, not through the adapter).
pub(crate) async fn probes(kube: &kube::Client) -> BTreeMap<String, bool> {
    let now = jiff::Timestamp::now();
    let allowance =
        jiff::SignedDuration::try_from(dispatch_kf_model::internal::probe::CLOCK_ALLOWANCE)
            .expect("a short allowance");
    let selector = dispatch_kf_model::internal::probe::selector();
    let mut probes = BTreeMap::new();
    for kind in probe_kinds() {
        let api = Api::<DynamicObject>::namespaced_with(kube.clone(), NS, &kind);
        let list = api.list(&ListParams::default().labels(&selector)).await.expect("a list");
        for object in list.items {
            let meta = &object.metadata;
            let Some(job) = meta.labels.as_ref().and_then(|l| l.get(keys::LABEL_JOB_ID)) else {
                continue;
            };
            let expires = meta.annotations.as_ref().and_then(|a| a.get(keys::ANN_PROBE_EXPIRES));
            let expires = expires.and_then(|e| e.parse::<jiff::Timestamp>().ok());
            let expired = expires.is_some_and(|e| e + allowance < now);
            *probes.entry(job.clone()).or_insert(expired) &= expired;
        }
    }
    probes
}

/// The kinds a probe marks: its TrainJob and its runtime copy.
fn probe_kinds() -> [ApiResource; 2] {
    [
        resource(keys::TRAINER_GROUP, "v1alpha1", "TrainJob", "trainjobs"),
        resource(keys::TRAINER_GROUP, "v1alpha1", "TrainingRuntime", "trainingruntimes"),
    ]
}

/// Waits up to a minute until no TrainJob or runtime copy of the probes `jobs` is left;
/// returns those that still have one.
pub(crate) async fn until_gone<'a>(
    kube: &kube::Client,
    jobs: impl Iterator<Item = &'a String>,
) -> Vec<String> {
    let mut waiting: Vec<String> = jobs.cloned().collect();
    let until = Instant::now() + Duration::from_secs(60);
    while !waiting.is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let left = probes(kube).await;
        waiting.retain(|job| left.contains_key(job));
    }
    waiting
}

/// What is left of the run's jobs: every TrainJob, JobSet, batch Job, pod, Workload and
/// runtime copy of the namespace, as `kind/name`.
pub(crate) async fn left(kube: &kube::Client) -> Vec<String> {
    let kinds = [
        resource(keys::TRAINER_GROUP, "v1alpha1", "TrainJob", "trainjobs"),
        resource(keys::TRAINER_GROUP, "v1alpha1", "TrainingRuntime", "trainingruntimes"),
        resource("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
        resource("batch", "v1", "Job", "jobs"),
        resource("", "v1", "Pod", "pods"),
        resource("kueue.x-k8s.io", "v1beta2", "Workload", "workloads"),
    ];
    let mut left = Vec::new();
    for kind in kinds {
        let api = Api::<DynamicObject>::namespaced_with(kube.clone(), NS, &kind);
        // Kueue's API is not served in plain mode: nothing of it can be left.
        let Ok(list) = api.list(&ListParams::default()).await else { continue };
        left.extend(
            list.items
                .iter()
                .map(|o| format!("{}/{}", kind.kind, o.metadata.name.clone().unwrap_or_default())),
        );
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Ended;

    fn pod(name: &str, submission: &str, a: &str, job_set: &str) -> Pod {
        Pod {
            name: name.to_owned(),
            job: "job".to_owned(),
            submission: submission.to_owned(),
            execution: (a.to_owned(), "0".to_owned(), job_set.to_owned()),
            node: "n".to_owned(),
            running: true,
            terminating: false,
            created: Some("2026-12-05T06:00:00Z".parse().unwrap()),
            owner: format!("{job_set}-node-0"),
            owner_uid: format!("{job_set}-node-0-uid"),
            train_job: format!("tj-{submission}"),
        }
    }

    fn violations(log: &Log) -> usize {
        crate::report::Report::count_violations(log)
    }

    #[test]
    fn pods_of_two_executions_of_one_job_running_at_once_are_one_violation() {
        let log = Log::default();
        let mut checks = Checks::default();
        checks.sample(&[pod("a", "1", "1", "u"), pod("b", "1", "1", "u")], &log);
        assert_eq!(violations(&log), 0, "one execution");
        let both = [pod("a", "1", "1", "u"), pod("c", "1", "2", "u")];
        assert_eq!(checks.sample(&both, &log), ["job"], "the job to gather evidence of");
        assert!(checks.sample(&both, &log).is_empty());
        assert_eq!(violations(&log), 1, "a second execution, said once");
        checks.sample(&[pod("a", "1", "1", "u"), pod("d", "2", "1", "v")], &log);
        assert_eq!(violations(&log), 2, "a new submission beside the one before");
        let stopped = Pod { running: false, ..pod("e", "3", "1", "w") };
        checks.sample(&[pod("a", "1", "1", "u"), stopped], &log);
        assert_eq!(violations(&log), 2, "a pod that does not run does not count");
    }

    #[test]
    fn a_job_set_made_again_after_it_was_deleted_by_hand_is_a_note_not_a_violation() {
        let log = Log::default();
        let mut checks = Checks::default();
        let remade = [pod("a", "1", "1", "old"), pod("b", "1", "1", "new")];
        checks.sample(&remade, &log);
        assert_eq!(violations(&log), 1, "without a deletion by hand it is one");
        let log = Log::default();
        let mut checks = Checks::default();
        log.job_set_deleted("job");
        checks.sample(&remade, &log);
        assert_eq!(violations(&log), 0);
        checks.sample(&[pod("a", "1", "1", "old"), pod("c", "1", "2", "new")], &log);
        assert_eq!(violations(&log), 1, "another A is another execution all the same");
    }

    fn owners(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    /// Jobs samples: `present` at each of `at`.
    fn jobs_at(checks: &mut Checks, samples: &[(jiff::Timestamp, &[&str])]) {
        for (at, present) in samples {
            checks.jobs.sample(present.iter().map(|u| (*u).to_owned()), *at);
        }
    }

    #[test]
    fn a_pod_made_for_an_owner_a_sample_had_already_missed_is_counted_apart() {
        let made: jiff::Timestamp = "2026-12-05T06:00:00Z".parse().unwrap();
        let s = jiff::SignedDuration::from_millis(500);
        let both = [pod("a", "1", "1", "u"), pod("b", "2", "1", "v")];
        let judged = |checks: Checks| {
            let (log, mut checks) = (Log::default(), checks);
            checks.sample(&both, &log);
            (violations(&log), log.stale_pods())
        };

        let mut deleted = Checks::default();
        jobs_at(&mut deleted, &[(made - s * 3, &["v-node-0-uid"]), (made - s, &[])]);
        assert_eq!(judged(deleted), (0, 1), "b's Job was deleted before b was made");

        let mut made_after = Checks::default();
        made_after.train_jobs.sample(owners(&["tj-2"]), made - s * 4);
        made_after.train_jobs.sample(owners(&[]), made - s * 3);
        jobs_at(&mut made_after, &[(made - s * 2, &[]), (made + s, &["v-node-0-uid"])]);
        assert_eq!(judged(made_after), (0, 1), "b's Job was made after its TrainJob was missed");

        let mut outlived = Checks::default();
        outlived.train_jobs.sample(owners(&["tj-2"]), made - s * 4);
        outlived.train_jobs.sample(owners(&[]), made - s * 3);
        jobs_at(&mut outlived, &[(made - s * 5, &["v-node-0-uid"]), (made - s, &["v-node-0-uid"])]);
        assert_eq!(judged(outlived), (1, 0), "a Job that outlived its TrainJob: judged");

        let mut within = Checks::default();
        jobs_at(&mut within, &[(made - s, &["v-node-0-uid"]), (made + s / 2, &[])]);
        assert_eq!(judged(within), (1, 0), "lacked only within the second b was made: judged");

        let mut taken_anew = Missed::default();
        taken_anew.sample(owners(&["tj-2"]), made - s * 6);
        taken_anew.sample(owners(&[]), made - s * 4);
        taken_anew.sample(owners(&["tj-2"]), made - s * 2);
        assert!(taken_anew.gone.is_empty(), "a name taken anew is no longer missed");
    }

    #[test]
    fn a_pod_of_an_ended_execution_made_after_the_end_is_a_violation() {
        let log = Log::default();
        let at: jiff::Timestamp = "2026-12-05T06:00:00Z".parse().unwrap();
        let ended = Ended {
            job: "job".into(),
            submission: "1".into(),
            admission: 1,
            restart_attempt: 0,
            at,
        };
        log.ended(ended, 1, dispatch_core::CauseKind::NonZeroExit, "exit 1");
        let mut checks = Checks::default();
        checks.sample(&[pod("before", "1", "1", "u")], &log);
        assert_eq!(violations(&log), 0, "made before the end");
        let later = Pod {
            created: Some(at + jiff::SignedDuration::from_secs(5)),
            ..pod("after", "1", "1", "v")
        };
        checks.sample(std::slice::from_ref(&later), &log);
        assert_eq!(violations(&log), 1);
        let next = Pod { execution: ("2".into(), "0".into(), "v".into()), ..later };
        checks.sample(&[next], &log);
        assert_eq!(violations(&log), 1, "a new admission is a new execution");
    }
}
