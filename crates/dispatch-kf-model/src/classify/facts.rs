//! [`Facts`]: what the rules read of one TrainJob, gathered once from the index: its
//! JobSet, its Workload, its pods, its execution and the hold on its held object.

use crate::lenient::Str;

use dispatch_core::{Execution, JobId};

use super::ClassifyOptions;
use super::execution;
use super::index::{Index, Map, PodRef};
use super::instance::Instance;
use super::node_loss::NodeLoss;
use crate::internal::ended::EndRecord;
use crate::keys;
use crate::mode::Mode;
use crate::names;
use crate::view::{JobSet, TrainJob, Workload, true_condition};

/// What the rules read of one TrainJob.
pub(crate) struct Facts<'a, S> {
    /// The settings of this classification.
    pub(crate) options: &'a ClassifyOptions,
    /// The TrainJob.
    pub(crate) tj: &'a TrainJob<S>,
    /// The job and submission its name encodes, when it is a name dispatch makes.
    pub(crate) named: Option<(JobId, u32)>,
    /// The same as the `d/job-id` and `d/submission` labels would spell them.
    pub(crate) named_text: Option<(String, String)>,
    /// The JobSet of its name.
    pub(crate) job_set: Option<&'a JobSet<S>>,
    /// Kueue mode: the Workload labelled with its UID.
    pub(crate) workload: Option<&'a Workload<S>>,
    /// Its pods, live and captured, sorted by name.
    pub(crate) pods: Vec<PodRef<'a, S>>,
    /// Its current execution.
    pub(crate) execution: Option<Execution>,
    /// dispatch's end record, when the TrainJob carries a valid one (`ended.rs`).
    pub(crate) end_record: Option<EndRecord>,
    /// The raw `d/hold-instance` of the held object, when present.
    pub(crate) hold_text: Option<&'a str>,
    /// The hold instance in force, when the annotation is a canonical decimal.
    pub(crate) hold_instance: Option<u64>,
    /// Nodes by name, each with what makes it lost for its pods, if anything.
    pub(crate) nodes: &'a Map<&'a str, Option<NodeLoss<'a, S>>>,
    /// When the capture of deleted pods last lost its place, if it did.
    pub(crate) evidence_gap: Option<jiff::Timestamp>,
}

impl<'a, S: Str> Facts<'a, S> {
    /// Gathers the facts of `tj`.
    pub(crate) fn gather(
        index: &'a Index<'a, S>,
        options: &'a ClassifyOptions,
        tj: &'a TrainJob<S>,
    ) -> Self {
        let (ns, name) = (tj.meta.namespace(), tj.meta.name());
        let named = names::parse(name);
        let named_text = named.as_ref().map(|(j, n)| (j.to_string(), n.to_string()));
        let job = match &named_text {
            Some((id, n)) => Some((id.as_str(), n.as_str())),
            None => tj.meta.label(keys::LABEL_JOB_ID).zip(tj.meta.label(keys::LABEL_SUBMISSION)),
        };
        // Only this instance's pods: another TrainJob of the name may have left some.
        let instance = Instance::of(index.job_set(ns, name), Some(tj.meta.uid()));
        let mut pods = index.pods_of(ns, name, job);
        pods.retain(|p| instance.has(p.pod));
        // With no pod left to say (the JobSet of a failed TrainJob gone), the execution
        // dispatch recorded when it ended (`ended.rs`).
        let end_record = tj.meta.annotation(keys::ANN_ENDED).and_then(EndRecord::parse);
        let execution = execution::current(pods.iter().filter_map(|p| p.exec))
            .or_else(|| end_record.as_ref().and_then(|r| r.execution));
        let workload = match options.mode {
            Mode::Kueue => index.workload(ns, tj.meta.uid()),
            Mode::Plain => None,
        };
        let held_meta = match options.mode {
            Mode::Kueue => workload.map(|w| &w.meta),
            Mode::Plain => Some(&tj.meta),
        };
        let hold_text = held_meta.and_then(|m| m.annotation(keys::ANN_HOLD_INSTANCE));
        let hold_instance = hold_text.and_then(names::parse_canonical_decimal);
        Facts {
            options,
            tj,
            named,
            named_text,
            job_set: index.job_set(ns, name),
            workload,
            pods,
            execution,
            end_record,
            hold_text,
            hold_instance,
            nodes: &index.nodes,
            evidence_gap: index.evidence_gap,
        }
    }

    /// The submission: from the name, else from the `d/submission` label, else 0.
    pub(crate) fn submission(&self) -> u32 {
        self.named.as_ref().map(|(_, n)| *n).unwrap_or_else(|| {
            self.tj
                .meta
                .label(keys::LABEL_SUBMISSION)
                .and_then(names::parse_submission_label)
                .unwrap_or(0)
        })
    }

    /// The pods of the current execution; every pod when none counts towards one.
    pub(crate) fn current_pods(&self) -> impl Iterator<Item = &PodRef<'a, S>> {
        self.pods.iter().filter(|p| self.execution.is_none() || p.exec == self.execution)
    }

    /// The live pods of the current execution.
    pub(crate) fn current_live_pods(&self) -> impl Iterator<Item = &PodRef<'a, S>> {
        self.current_pods().filter(|p| !p.captured)
    }

    /// Whether `spec.suspend` is true or the TrainJob has `Suspended=True`.
    pub(crate) fn suspended(&self) -> bool {
        self.tj.suspend.is_true() || true_condition(&self.tj.conditions, "Suspended").is_some()
    }

    /// Plain mode: always. Kueue mode: the Workload has `Admitted=True`.
    pub(crate) fn admitted(&self) -> bool {
        match self.options.mode {
            Mode::Plain => true,
            Mode::Kueue => {
                self.workload.is_some_and(|w| true_condition(&w.conditions, "Admitted").is_some())
            }
        }
    }
}
