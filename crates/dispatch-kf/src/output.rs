//! Output and Ceased (`docs/capabilities.md#output-watch-cessation`;
//! `docs/backend.md#output-and-ceased`): rank 0's log of a submission's current
//! execution, and whether every Node of an object's current or last execution has
//! ceased. Both read the execution the model's classification uses (`ranks`).

use std::collections::BTreeMap;

use dispatch_core::{
    CallContext, Capability, Cessation, Error, JobId, Kind, LogStream, ObjectKind, ObjectRef,
    OutputStream, Result,
};
use dispatch_kf_model::internal::ranks;
use dispatch_kf_model::names::{self, MAX_SUBMISSION};
use dispatch_kf_model::view::View;
use futures::StreamExt;

use crate::Inner;

impl Inner {
    pub(crate) async fn output(
        &self,
        cx: &CallContext,
        job: &JobId,
        submission: u32,
        stream: OutputStream,
        follow: bool,
    ) -> Result<LogStream> {
        self.check_open()?;
        if stream == OutputStream::Stderr {
            return Err(Error::unsupported(
                "a pod's log interleaves standard error with standard output: read Stdout",
            ));
        }
        let read = &self.preflight.capabilities[&Capability::OutputRead];
        if !read.is_yes() {
            return Err(Error::unsupported(format!("Output is not available: {}", read.reason)));
        }
        if !(1..=MAX_SUBMISSION).contains(&submission) {
            return Err(Error::invalid(format!(
                "submission {submission} is not 1 to {MAX_SUBMISSION}"
            )));
        }
        let name = names::make(job, submission);
        let snapshot = self.snapshot(cx, job).await?;
        let Some(pod) = ranks::rank_zero(&snapshot, &name) else {
            return Err(Error::not_found(format!(
                "submission {submission} of job {job} has no rank 0 pod in its current execution"
            )));
        };
        let log = self
            .cluster
            .pod_log(
                cx,
                &self.settings.namespace,
                pod.meta.name(),
                dispatch_kf_model::keys::NODE_CONTAINER,
                follow,
            )
            .await?;
        Ok(log.boxed())
    }

    pub(crate) async fn ceased(&self, cx: &CallContext, object: &ObjectRef) -> Result<Cessation> {
        self.check_open()?;
        let target = self.target(object)?;
        let unsupported = || {
            Error::unsupported(
                "Ceased needs permission to get Nodes, which the adapter does not have",
            )
        };
        if !self.preflight.nodes.readable() {
            return Err(unsupported());
        }
        let snapshot = self.snapshot(cx, &target.job).await?;
        crate::refs::held(&snapshot, object)?;
        let pods: Vec<_> = match object.kind {
            ObjectKind::TrainJob | ObjectKind::JobSet => {
                ranks::current_execution(&snapshot, &object.name)
            }
            ObjectKind::Pod => snapshot
                .pods
                .iter()
                .chain(&snapshot.captured_pods)
                .filter(|p| p.meta.uid() == object.uid)
                .collect(),
            ObjectKind::TrainingRuntime => Vec::new(),
        };
        let node_names = ranks::nodes_of(&pods);
        let names = node_names.iter().map(String::as_str).collect();
        let read = match self.cluster.nodes_named(cx, names, self.preflight.nodes).await {
            Ok(read) => read,
            Err(e) if e.is(Kind::Unauthorized) => return Err(unsupported().with_source(e)),
            Err(e) => return Err(e),
        };
        let by_name: BTreeMap<&str, _> = read
            .iter()
            .filter_map(|v| match v {
                View::Node(n) => Some((n.meta.name(), n)),
                _ => None,
            })
            .collect();
        let states: Vec<_> = node_names
            .iter()
            .map(|name| ranks::node_state(name, by_name.get(name.as_str()).copied()))
            .collect();
        Ok(Cessation { ceased: ranks::has_ceased(!pods.is_empty(), &states), nodes: states })
    }
}
