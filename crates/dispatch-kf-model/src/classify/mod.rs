//! Classification: `classify(snapshot, options, now)` reports every TrainJob of a
//! snapshot, and every orphan, as an [`ObjectObs`] (`docs/classification.md`).
//!
//! For each TrainJob, in order: the six rules decide state and cause (`rules`); a
//! cause left at none becomes unknown for a True condition the adapter does not know
//! (`unknown_condition`); then the detail is the cause's own, the foreign notes
//! (`foreign`) and the situation notes (`situation`), joined with `; ` (or the cause's
//! own alone, [`Detail::CauseOnly`]). Orphans
//! (`orphans`) follow. Same snapshot, options and `now`: the same observations.

mod disruption_target;
pub(crate) mod execution;
mod facts;
pub(crate) mod findings;
mod foreign;
mod gone;
pub(crate) mod index;
mod initializer;
pub(crate) mod instance;
mod node_loss;
mod node_termination;
mod orphans;
mod rules;
mod situation;
mod text;
mod unknown_condition;

use crate::lenient::Str;
use dispatch_core::{ObjectKind, ObjectObs, ObjectRef};
use jiff::Timestamp;

use crate::mode::Mode;
use crate::snapshot::Snapshot;
use crate::view::TrainJob;
use facts::Facts;
pub use gone::gone;
use index::Index;

/// The settings of one classification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassifyOptions {
    /// Plain or Kueue.
    pub mode: Mode,
    /// Whether the adapter may get Nodes. Without it, a running object is never judged
    /// node-lost from a Node's state (only from a pod's own finding).
    pub nodes_readable: bool,
    /// The backend's configured name, for [`ObjectRef::backend`].
    pub backend: String,
    /// What the cause's detail carries besides the cause's own words.
    pub detail: Detail,
}

/// What an observation's `cause.detail` carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// The cause's own words, then the foreign notes and the situation notes, joined
    /// with `; `: what `explain` prints.
    WithNotes,
    /// The cause's own words alone (rank, pod, exit code, the scheduler's words): what
    /// an Event about the end of an execution says.
    CauseOnly,
}

/// The observation of every TrainJob of `snapshot`, sorted by namespace, name and UID,
/// then of every orphan, sorted by namespace, kind and name.
pub fn classify<S: Str>(
    snapshot: &Snapshot<S>,
    options: &ClassifyOptions,
    now: Timestamp,
) -> Vec<ObjectObs> {
    let index = Index::new(snapshot);
    let mut out = train_jobs(&index, snapshot, options, |_| options.mode, now);
    let mut orphans = orphans::find(snapshot, &index);
    orphans.sort_by(|a, b| (&a.ns, a.kind, &a.name, &a.uid).cmp(&(&b.ns, b.kind, &b.name, &b.uid)));
    out.extend(orphans.into_iter().map(|o| ObjectObs {
        object: ObjectRef {
            backend: options.backend.clone(),
            kind: o.kind,
            namespace: o.ns,
            name: o.name,
            uid: o.uid,
        },
        submission: o.submission,
        state: o.state,
        admin_held: false,
        hold_instance: None,
        cause: o.cause,
        execution: o.execution,
        foreign: true,
        seen_at: now,
    }));
    out
}

/// The observation of every TrainJob of `snapshot`, each classified in the mode
/// `mode_of` gives it (`options.mode` is not read), sorted by namespace, name and UID.
/// No orphans: this answers for TrainJobs whoever made them (`dispatch-kf explain`),
/// and a namespace's other JobSets and pods are not a job's.
pub fn classify_train_jobs<S: Str>(
    snapshot: &Snapshot<S>,
    options: &ClassifyOptions,
    mode_of: impl Fn(&TrainJob<S>) -> Mode,
    now: Timestamp,
) -> Vec<ObjectObs> {
    train_jobs(&Index::new(snapshot), snapshot, options, mode_of, now)
}

/// The TrainJobs' observations, sorted, each in the mode `mode_of` gives it.
fn train_jobs<S: Str>(
    index: &Index<'_, S>,
    snapshot: &Snapshot<S>,
    options: &ClassifyOptions,
    mode_of: impl Fn(&TrainJob<S>) -> Mode,
    now: Timestamp,
) -> Vec<ObjectObs> {
    let in_mode = |mode| ClassifyOptions { mode, ..options.clone() };
    let (plain, kueue) = (in_mode(Mode::Plain), in_mode(Mode::Kueue));
    // Classified in the snapshot's order, which keeps a job's objects near each other
    // in memory as they were read, then sorted (stable: merged copies keep their order).
    let mut out: Vec<ObjectObs> = snapshot
        .train_jobs
        .iter()
        .map(|tj| {
            let options = match mode_of(tj) {
                Mode::Plain => &plain,
                Mode::Kueue => &kueue,
            };
            train_job(&Facts::gather(index, options, tj), now)
        })
        .collect();
    out.sort_by(|a, b| observation_order(a).cmp(&observation_order(b)));
    out
}

/// The order of the TrainJobs' observations: namespace, name, UID.
fn observation_order(o: &ObjectObs) -> (&str, &str, &str) {
    (&o.object.namespace, &o.object.name, &o.object.uid)
}

fn train_job<S: Str>(f: &Facts<'_, S>, now: Timestamp) -> ObjectObs {
    let mut outcome = rules::decide(f);
    unknown_condition::apply(f.tj, &mut outcome.cause);
    let foreign = foreign::notes(f);
    let is_foreign = !foreign.is_empty();
    if f.options.detail == Detail::WithNotes {
        let gated = rules::gated::is_closed(f.tj, f.options.mode);
        let situation = situation::notes(f, &outcome, gated);
        let mut parts = Vec::with_capacity(1 + foreign.len() + situation.len());
        if !outcome.cause.detail.is_empty() {
            parts.push(std::mem::take(&mut outcome.cause.detail));
        }
        parts.extend(foreign);
        parts.extend(situation);
        outcome.cause.detail = parts.join(text::JOIN);
    }
    let meta = &f.tj.meta;
    ObjectObs {
        object: ObjectRef {
            backend: f.options.backend.clone(),
            kind: ObjectKind::TrainJob,
            namespace: meta.namespace().to_owned(),
            name: meta.name().to_owned(),
            uid: meta.uid().to_owned(),
        },
        submission: f.submission(),
        state: outcome.state,
        admin_held: outcome.admin_held,
        hold_instance: f.hold_instance,
        cause: outcome.cause,
        execution: f.execution,
        foreign: is_foreign,
        seen_at: now,
    }
}
