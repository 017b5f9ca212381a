//! The extensions a Kubeflow job may carry (`docs/render.md#extensions`).
//!
//! `dispatch/Image` and `kubeflow/RuntimeRef` are required (missing or malformed is
//! `Invalid`), `dispatch/SharedCheckpoint` is accepted and changes nothing, and any other
//! extension is `Unsupported`, never ignored.

use dispatch_core::{Error, ImageExt, JobSpec, ext};

use crate::keys;
use crate::runtime::RuntimeRef;

/// What render does with one extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Treatment {
    /// `dispatch/Image`: becomes `spec.trainer.image`.
    Image,
    /// `kubeflow/RuntimeRef`: the runtime that is copied.
    RuntimeRef,
    /// Accepted; changes nothing in the TrainJob.
    Accepted,
    /// Refused with `Unsupported`.
    Unsupported,
}

/// The table "Extensions", one row per extension and one for anything else.
fn treatment(name: &str) -> Treatment {
    match name {
        ext::IMAGE => Treatment::Image,
        keys::EXT_RUNTIME_REF => Treatment::RuntimeRef,
        ext::SHARED_CHECKPOINT => Treatment::Accepted,
        _ => Treatment::Unsupported,
    }
}

/// The required extensions, decoded.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Decoded {
    /// The container image.
    pub image: String,
    /// The runtime to copy.
    pub runtime: RuntimeRef,
}

/// Decodes the spec's extensions. Problems with the required ones are reported first,
/// all at once, as `Invalid`; then every extension this adapter does not support, as
/// `Unsupported`.
pub(super) fn decode(spec: &JobSpec) -> Result<Decoded, Error> {
    let mut invalid = Vec::new();
    let image = match spec.image() {
        None => {
            invalid.push(format!(
                "extension {} is missing: give the image as {{\"ref\": \"...\"}}",
                ext::IMAGE
            ));
            None
        }
        Some(Err(e)) => {
            invalid.push(e.message().to_owned());
            None
        }
        Some(Ok(ImageExt { reference, .. })) if reference.is_empty() => {
            invalid.push(format!(
                "extension {} has an empty ref: give the image reference",
                ext::IMAGE
            ));
            None
        }
        Some(Ok(image)) => Some(image),
    };
    let runtime = runtime_ref(spec).map_err(|e| invalid.push(e.message().to_owned())).ok();
    if !invalid.is_empty() {
        return Err(Error::invalid(invalid.join("; ")));
    }
    let mut unsupported: Vec<String> = spec
        .extensions
        .keys()
        .filter(|name| treatment(name) == Treatment::Unsupported)
        .map(|name| format!("extension {name} is not supported on Kubeflow"))
        .collect();
    let (Some(image), Some(runtime)) = (image, runtime) else {
        return Err(Error::invalid("required extensions are missing"));
    };
    if let Some(policy) = &image.pull_policy {
        unsupported.push(format!(
            "extension {} pullPolicy {policy:?} is not supported on Kubeflow: the Trainer's spec.trainer has no pull policy, so leave it out",
            ext::IMAGE
        ));
    }
    if !unsupported.is_empty() {
        return Err(Error::unsupported(unsupported.join("; ")));
    }
    Ok(Decoded { image: image.reference, runtime })
}

/// The spec's `kubeflow/RuntimeRef` extension: missing, of another kind or with a name
/// that is not a Kubernetes object name is `Invalid`. Capabilities with a spec reads the
/// runtime through this alone.
pub fn runtime_ref(spec: &JobSpec) -> Result<RuntimeRef, Error> {
    let Some(value) = spec.extensions.get(keys::EXT_RUNTIME_REF) else {
        return Err(Error::invalid(format!(
            "extension {} is missing: give {{\"kind\": \"ClusterTrainingRuntime\", \"name\": \"...\"}}",
            keys::EXT_RUNTIME_REF
        )));
    };
    RuntimeRef::from_value(&format!("extension {}", keys::EXT_RUNTIME_REF), "", value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_extension_table_is_covered() {
        assert_eq!(treatment("dispatch/Image"), Treatment::Image);
        assert_eq!(treatment("kubeflow/RuntimeRef"), Treatment::RuntimeRef);
        assert_eq!(treatment("dispatch/SharedCheckpoint"), Treatment::Accepted);
        assert_eq!(treatment("slurm/Partition"), Treatment::Unsupported);
        assert_eq!(treatment("dispatch/image"), Treatment::Unsupported);
    }
}
