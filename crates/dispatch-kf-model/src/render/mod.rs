//! Render: one [`StartRequest`] becomes two objects, the runtime copy and the TrainJob,
//! or a refusal (`docs/render.md`; `docs/names-labels-annotations.md`).
//!
//! The checks run in the order of `docs/render.md#order-of-the-checks`, and the first
//! stage that finds a problem refuses with every problem of that stage:
//!
//! 1. the request's fields ([`request`]): `Invalid`;
//! 2. `JobSpec::validate`: `Invalid`;
//! 3. the extensions ([`extensions`]): `Invalid` for a missing or malformed required
//!    one, then `Unsupported` for any other;
//! 4. the runtime rules ([`crate::runtime::rules`]): `Unsupported`;
//! 5. the Trainer's limits ([`limits`]): `Invalid`.
//!
//! Nothing here reads a clock or draws a random number: the attempt token's suffix is a
//! parameter, so the same inputs always render the same bytes.

mod env;
mod extensions;
mod limits;
mod objects;
mod request;
mod token;

pub use extensions::runtime_ref;
pub use request::read_request;
pub use token::TokenSuffix;

use dispatch_core::{Error, StartRequest};
use serde_json::{Value, json};

use crate::names;
use crate::runtime::SourceRuntime;
use crate::runtime::rules::{self, JobShape};
use crate::settings::Settings;
use objects::Parts;
use token::AttemptToken;

/// What the render is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A job's Start.
    Job,
    /// The preflight probe: its runtime patch adds the node selector
    /// `dispatch.phpboyscout.uk/probe: never`, which no node matches, and its TrainJob
    /// and copy carry the probe's label and `expires` (`crate::internal::probe`).
    Probe {
        /// When the probe has ended, its clean-up included (`probe::Budget::expires`).
        expires: jiff::Timestamp,
    },
}

/// The two objects Start creates, in the order it creates them.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    /// The TrainingRuntime copy of the source runtime.
    pub runtime_copy: Value,
    /// The TrainJob that runs on the copy.
    pub train_job: Value,
}

impl Rendered {
    /// A `v1` `List` of the copy and the TrainJob, as `dispatch-kf render` prints it.
    pub fn to_list(&self) -> Value {
        json!({"apiVersion": "v1", "kind": "List", "items": [self.runtime_copy, self.train_job]})
    }
}

/// Renders `request` on `source` (the runtime its `kubeflow/RuntimeRef` names, `None`
/// when it does not exist), with the attempt token made from the request's attempt and
/// `suffix`. See the module doc for the order of the refusals.
pub fn render(
    settings: &Settings,
    request: &StartRequest,
    source: Option<&SourceRuntime>,
    suffix: &TokenSuffix,
    purpose: Purpose,
) -> Result<Rendered, Error> {
    let problems = request::problems(request);
    if !problems.is_empty() {
        return Err(Error::invalid(format!("invalid request: {}", problems.join("; "))));
    }
    let spec = &request.spec;
    spec.validate()?;
    let decoded = extensions::decode(spec)?;
    let submission = u32::try_from(request.submission).map_err(|_| {
        Error::invalid(format!("submission is {}: want 1 to 999999", request.submission))
    })?;
    let name = names::make(&request.job, submission);
    let shape = JobShape { name: &name, nodes: spec.nodes, procs_per_node: spec.procs_per_node };
    let step = rules::check(&settings.runtimes, &decoded.runtime, source, &shape)?;
    limits::check(spec)?;
    let token = AttemptToken::new(request.attempt, suffix)?;
    let parts = Parts {
        settings,
        request,
        name: &name,
        image: &decoded.image,
        step: &step,
        token: &token,
        purpose,
    };
    Ok(Rendered {
        runtime_copy: objects::runtime_copy(&parts),
        train_job: objects::train_job(&parts),
    })
}
