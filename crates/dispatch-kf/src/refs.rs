//! Object references: the checks every call that takes one makes first
//! (`docs/errors.md#the-adapters-own-refusals`).

use dispatch_core::{Error, JobId, ObjectKind, ObjectObs, ObjectRef, Result};
use dispatch_kf_client::Resource;
use dispatch_kf_client::resources::{JOB_SET, POD, TRAIN_JOB, TRAINING_RUNTIME};
use dispatch_kf_model::names;

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
    let what = format!("{} {}/{}", object.kind.name(), object.namespace, object.name);
    Err(if others {
        Error::not_found(format!("{what} is now held by another UID than {}", object.uid))
    } else {
        Error::not_found(format!("{what} of UID {} is gone", object.uid))
    })
}
