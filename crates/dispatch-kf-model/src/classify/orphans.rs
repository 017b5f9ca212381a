//! Orphans: what is left of a TrainJob that is gone
//! (`docs/classification.md#orphans-classifyorphansrs`). A JobSet, live pod or runtime
//! copy of dispatch's with no live TrainJob of its UID is its own object: foreign, cause
//! unknown with no provenance.
//!
//! Which objects are dispatch's: a JobSet or runtime copy whose name `names::parse`
//! accepts or that carries the `d/job-id` label; a pod whose `jobset-name` label is such
//! a name or that carries `d/job-id`. A JobSet or runtime copy is an orphan when its
//! controller owner's UID is no TrainJob of its name (or, with no controller, when no
//! TrainJob has its name). A pod is an orphan when no TrainJob has its `jobset-name` label's
//! name, nor the name its job-id and submission labels make, nor the name its own name
//! begins with, or when its JobSet is an orphan, or when it is not of the instance of the
//! TrainJob of its name (`instance`: its `jobset-uid` names a JobSet that is gone).
//! Captured pods are never reported: they are gone.

use crate::lenient::Str;
use std::borrow::Cow;

use dispatch_core::{Cause, CauseKind, Execution, ObjectKind, ObjectState};

use super::execution;
use super::index::{Index, PodRef};
use super::instance::Instance;
use super::situation::terminating;
use super::text::JOIN;
use crate::keys;
use crate::names;
use crate::object::Meta;
use crate::snapshot::Snapshot;
use crate::view::{JobSet, true_condition};

/// One orphan, before it becomes an observation.
pub(crate) struct Orphan {
    /// Its kind.
    pub(crate) kind: ObjectKind,
    /// Its namespace, name and UID.
    pub(crate) ns: String,
    /// Its name.
    pub(crate) name: String,
    /// Its UID.
    pub(crate) uid: String,
    /// The submission, from its name or label.
    pub(crate) submission: u32,
    /// Ended or running.
    pub(crate) state: ObjectState,
    /// Cause unknown with the orphan detail.
    pub(crate) cause: Cause,
    /// The execution of its pods.
    pub(crate) execution: Option<Execution>,
}

fn is_dispatch_name_or_labelled<S: Str>(meta: &Meta<S>) -> bool {
    names::parse(meta.name()).is_some() || meta.label(keys::LABEL_JOB_ID).is_some()
}

fn submission_of<S: Str>(name: &str, meta: &Meta<S>) -> u32 {
    names::parse(name).map(|(_, n)| n).unwrap_or_else(|| {
        meta.label(keys::LABEL_SUBMISSION).and_then(names::parse_submission_label).unwrap_or(0)
    })
}

/// Whether an object owned (or not) by a TrainJob of `name` has no live TrainJob.
fn is_orphan<S: Str>(index: &Index<'_, S>, meta: &Meta<S>, name: &str) -> bool {
    let live = index.train_jobs(meta.namespace(), name);
    match meta.controller().and_then(|o| o.uid.get()) {
        Some(uid) => !live.iter().any(|tj| tj.meta.uid() == uid),
        None => live.is_empty(),
    }
}

fn detail(kind: ObjectKind, name: &str, owner: Option<&str>, notes: Vec<String>) -> Cause {
    let mut parts = vec![match owner {
        Some(uid) => format!("orphan {} {name} of TrainJob {uid}", kind.name()),
        None => format!("orphan {} {name} of a TrainJob that is gone", kind.name()),
    }];
    parts.extend(notes);
    Cause { kind: CauseKind::Unknown, detail: parts.join(JOIN), ..Cause::none() }
}

fn job_set_is_orphan<S: Str>(index: &Index<'_, S>, js: &JobSet<S>) -> bool {
    is_orphan(index, &js.meta, js.meta.name())
}

/// Every orphan of the snapshot: JobSets, then live pods, then runtime copies.
pub(crate) fn find<S: Str>(snapshot: &Snapshot<S>, index: &Index<'_, S>) -> Vec<Orphan> {
    let mut out = orphan_job_sets(snapshot, index);
    out.extend(orphan_pods(index));
    out.extend(orphan_runtime_copies(snapshot, index));
    out
}

impl Orphan {
    /// The orphan `meta` names, its submission read from its name or label.
    fn new<S: Str>(
        kind: ObjectKind,
        meta: &Meta<S>,
        state: ObjectState,
        cause: Cause,
        execution: Option<Execution>,
    ) -> Orphan {
        Orphan {
            kind,
            ns: meta.namespace().to_owned(),
            name: meta.name().to_owned(),
            uid: meta.uid().to_owned(),
            submission: submission_of(meta.name(), meta),
            state,
            cause,
            execution,
        }
    }
}

/// dispatch's JobSets with no live TrainJob: ended once Completed or Failed, else
/// running, with the execution of their live pods.
fn orphan_job_sets<S: Str>(snapshot: &Snapshot<S>, index: &Index<'_, S>) -> Vec<Orphan> {
    let mut out = Vec::new();
    for js in &snapshot.job_sets {
        let meta = &js.meta;
        if !is_dispatch_name_or_labelled(meta) || !job_set_is_orphan(index, js) {
            continue;
        }
        let finished =
            ["Completed", "Failed"].iter().any(|t| true_condition(&js.conditions, t).is_some());
        let state = if finished { ObjectState::Ended } else { ObjectState::Running };
        let owner = meta.controller().and_then(|o| o.uid.get());
        let pods = index.pods_of(meta.namespace(), meta.name(), None);
        let exec = execution::current(pods.iter().filter(|p| !p.captured).filter_map(|p| p.exec));
        let cause = detail(ObjectKind::JobSet, meta.name(), owner, Vec::new());
        out.push(Orphan::new(ObjectKind::JobSet, meta, state, cause, exec));
    }
    out
}

/// dispatch's live pods whose TrainJob is gone or whose JobSet is an orphan.
fn orphan_pods<S: Str>(index: &Index<'_, S>) -> Vec<Orphan> {
    let mut out = Vec::new();
    // A JobSet's pods stand together in a dump: once one is found live by its
    // `jobset-name` label (a TrainJob of that name, the JobSet no orphan, the pod of its
    // instance), the next pods of the same labels are too, and are not looked up again.
    let mut settled: Option<(&str, &str, Option<&str>)> = None;
    for p in index.pods.iter().filter(|p| !p.captured) {
        let ns = p.pod.meta.namespace();
        let labels = p.jobset.map(|label| (ns, label, p.pod.meta.label(keys::JOBSET_UID)));
        if labels.is_some() && settled == labels {
            continue;
        }
        match pod_owner(index, p) {
            PodOwner::NotDispatchs | PodOwner::Live { by_label: false } => {}
            PodOwner::Live { by_label: true } => settled = labels,
            PodOwner::Orphan(o) => out.push(o),
        }
    }
    out
}

/// Whose a live pod is, as far as orphans go.
enum PodOwner {
    /// Not dispatch's: neither its labels nor its name make one of dispatch's names.
    NotDispatchs,
    /// A live TrainJob's; `by_label` when the TrainJob has its `jobset-name` label's
    /// name.
    Live { by_label: bool },
    /// Nobody's: an orphan.
    Orphan(Orphan),
}

/// Whose the live pod `p` is: a TrainJob that has its `jobset-name` label's name, the
/// name its job-id and submission labels make or the name its own name begins with,
/// unless its JobSet is an orphan.
fn pod_owner<S: Str>(index: &Index<'_, S>, p: &PodRef<'_, S>) -> PodOwner {
    let (pod, meta) = (p.pod, &p.pod.meta);
    let ns = meta.namespace();
    let job_label = p.job_id;
    // The name the job-id and submission labels make: built only when the JobSet
    // label does not settle the question, so a pod of a live job costs no copy.
    let made = || {
        job_label.zip(p.submission).and_then(|(id, n)| {
            let job = dispatch_core::JobId::parse(id).ok()?;
            let n = names::parse_submission_label(n)?;
            Some(names::make(&job, n))
        })
    };
    let label = p.jobset;
    let jobset: Cow<'_, str> = match label {
        Some(label) => Cow::Borrowed(label),
        None => match made() {
            Some(name) => Cow::Owned(name),
            None => return PodOwner::NotDispatchs,
        },
    };
    if job_label.is_none() && names::parse(&jobset).is_none() {
        return PodOwner::NotDispatchs;
    }
    let has_train_job = |name: &str| !index.train_jobs(ns, name).is_empty();
    // The pod's own name also says whose it is: a label removed must not make it an
    // orphan (a removed label contradicts nothing).
    let named = || names::parse_prefix(meta.name()).map(|(job, n)| names::make(&job, n));
    let by_label = has_train_job(&jobset);
    let live = by_label
        || made().is_some_and(|n| has_train_job(&n))
        || named().is_some_and(|n| has_train_job(&n));
    let js = index.job_set(ns, &jobset);
    let train_job = index.train_jobs(ns, &jobset).first().map(|tj| tj.meta.uid());
    let of_instance = !by_label || Instance::of(js, train_job).has(pod);
    if live && of_instance && !js.is_some_and(|js| job_set_is_orphan(index, js)) {
        return PodOwner::Live { by_label };
    }
    // A pod of another instance names a JobSet that is gone, and so no owner.
    let js = js.filter(|_| of_instance);
    let owner = js.and_then(|js| js.meta.controller()).and_then(|o| o.uid.get());
    let state = if pod.is_terminal() { ObjectState::Ended } else { ObjectState::Running };
    let notes = terminating(pod).into_iter().collect();
    let cause = detail(ObjectKind::Pod, meta.name(), owner, notes);
    let mut o = Orphan::new(ObjectKind::Pod, meta, state, cause, execution::of_pod(pod));
    o.submission = p
        .submission
        .and_then(names::parse_submission_label)
        .unwrap_or_else(|| submission_of(&jobset, meta));
    PodOwner::Orphan(o)
}

/// dispatch's runtime copies with no live TrainJob: ended, with no execution.
fn orphan_runtime_copies<S: Str>(snapshot: &Snapshot<S>, index: &Index<'_, S>) -> Vec<Orphan> {
    let mut out = Vec::new();
    for rt in &snapshot.runtimes {
        let meta = &rt.meta;
        if !is_dispatch_name_or_labelled(meta) || !is_orphan(index, meta, meta.name()) {
            continue;
        }
        let owner = meta.controller().and_then(|o| o.uid.get());
        let cause = detail(ObjectKind::TrainingRuntime, meta.name(), owner, Vec::new());
        out.push(Orphan::new(ObjectKind::TrainingRuntime, meta, ObjectState::Ended, cause, None));
    }
    out
}
