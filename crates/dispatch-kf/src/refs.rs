//! Object references: the checks every call that takes one makes first
//! (`docs/errors.md#the-adapters-own-refusals`).

use dispatch_core::{Error, JobId, ObjectKind, ObjectObs, ObjectRef, Result};
use dispatch_kf_client::resources::{JOB_SET, POD, Resource, TRAIN_JOB, TRAINING_RUNTIME};
use dispatch_kf_model::Snapshot;
use dispatch_kf_model::names;
use dispatch_kf_model::view::Meta;

use crate::Inner;

/// What a reference names, once it passed the checks.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The job its name encodes.
    pub(crate) job: JobId,
}

/// The resource of each kind an observation can name.
pub(crate) fn resource_of(kind: ObjectKind) -> Resource {
    match kind {
        ObjectKind::TrainJob => TRAIN_JOB,
        ObjectKind::JobSet => JOB_SET,
        ObjectKind::Pod => POD,
        ObjectKind::TrainingRuntime => TRAINING_RUNTIME,
    }
}

impl Inner {
    /// Checks that `object` is this adapter's: its backend, a UID, a name the adapter
    /// makes (`Invalid` otherwise), in the configured namespace (`NotFound` otherwise).
    pub(crate) fn target(&self, object: &ObjectRef) -> Result<Target> {
        let settings = &self.settings;
        if object.backend != settings.name {
            return Err(Error::invalid(format!(
                "the object reference names backend {:?}, not this one ({:?})",
                object.backend, settings.name
            )));
        }
        if object.uid.is_empty() {
            return Err(Error::invalid(format!(
                "the object reference to {} {} carries no UID",
                object.kind.name(),
                object.name
            )));
        }
        let parsed = match object.kind {
            ObjectKind::Pod => names::parse_prefix(&object.name),
            _ => names::parse(&object.name),
        };
        let Some((job, _)) = parsed else {
            return Err(Error::invalid(format!(
                "{} {} is not this adapter's: its name is not one dispatch makes (dj-<job>-s<N>)",
                object.kind.name(),
                object.name
            )));
        };
        if object.namespace != settings.namespace {
            return Err(Error::not_found(format!(
                "{} {}/{} is outside the configured namespace {}",
                object.kind.name(),
                object.namespace,
                object.name,
                settings.namespace
            )));
        }
        Ok(Target { job })
    }

    /// The reference of an object this Backend made.
    pub(crate) fn reference(&self, kind: ObjectKind, name: &str, uid: &str) -> ObjectRef {
        ObjectRef {
            backend: self.settings.name.clone(),
            kind,
            namespace: self.settings.namespace.clone(),
            name: name.to_owned(),
            uid: uid.to_owned(),
        }
    }
}

/// The observation of `object` among `observations`: `NotFound` when it is gone or its
/// name is now held by another UID.
pub(crate) fn pick(observations: Vec<ObjectObs>, object: &ObjectRef) -> Result<ObjectObs> {
    let same_name = |o: &ObjectObs| o.object.kind == object.kind && o.object.name == object.name;
    let mut others = false;
    for obs in observations {
        if same_name(&obs) && obs.object.uid == object.uid {
            return Ok(obs);
        }
        others |= same_name(&obs);
    }
    Err(missing(object, others))
}

/// Checks that `snapshot` holds the object `object` names, of its UID: `NotFound` when
/// it is gone or its name is now held by another UID. A pod counts while it exists and
/// once deleted while a Watch kept its last state.
pub(crate) fn held(snapshot: &Snapshot, object: &ObjectRef) -> Result<()> {
    let metas: Vec<&Meta> = match object.kind {
        ObjectKind::TrainJob => snapshot.train_jobs.iter().map(|o| &o.meta).collect(),
        ObjectKind::JobSet => snapshot.job_sets.iter().map(|o| &o.meta).collect(),
        ObjectKind::TrainingRuntime => snapshot.runtimes.iter().map(|o| &o.meta).collect(),
        ObjectKind::Pod => {
            snapshot.pods.iter().chain(&snapshot.captured_pods).map(|o| &o.meta).collect()
        }
    };
    let mut named = metas.into_iter().filter(|m| m.name() == object.name).peekable();
    let others = named.peek().is_some();
    if named.any(|m| m.uid() == object.uid) { Ok(()) } else { Err(missing(object, others)) }
}

/// The refusal of a reference whose UID is not found: `others` when its name is held by
/// another UID.
fn missing(object: &ObjectRef, others: bool) -> Error {
    let what = format!("{} {}/{}", object.kind.name(), object.namespace, object.name);
    if others {
        Error::not_found(format!("{what} is now held by another UID than {}", object.uid))
    } else {
        Error::not_found(format!("{what} of UID {} is gone", object.uid))
    }
}
