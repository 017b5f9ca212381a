//! [`Mode`]: whether Kueue admits the adapter's TrainJobs, and the mode of a TrainJob
//! read without the adapter's settings ([`Mode::of_train_job`]).

use crate::keys;
use crate::lenient::Str;
use crate::view::TrainJob;

/// How the adapter's TrainJobs are admitted.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// No Kueue: the start gate and holds are `spec.suspend` on the TrainJob.
    #[default]
    Plain,
    /// Kueue admits the TrainJobs: the start gate is Kueue's admission gate, holds are
    /// on the Workload, and dispatch's AdmissionCheck gates readmission.
    Kueue,
}

impl Mode {
    /// The mode a TrainJob that the adapter's settings say nothing of is read in
    /// (`dispatch-kf explain`): Kueue when it carries Kueue's queue-name label and the
    /// cluster serves Kueue's API, since Kueue then manages it; plain otherwise, since
    /// a label no Kueue reads admits nothing.
    pub fn of_train_job<S: Str>(tj: &TrainJob<S>, kueue_served: bool) -> Mode {
        if kueue_served && tj.meta.label(keys::KUEUE_QUEUE_NAME).is_some() {
            Mode::Kueue
        } else {
            Mode::Plain
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::View;

    fn train_job(labels: serde_json::Value) -> TrainJob {
        let object = serde_json::json!({
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "default", "uid": "u", "labels": labels}
        });
        match serde_json::from_value::<View>(object).unwrap() {
            View::TrainJob(tj) => tj,
            other => panic!("not a TrainJob: {other:?}"),
        }
    }

    #[test]
    fn a_train_job_is_read_in_kueue_mode_only_when_queued_on_a_cluster_serving_kueue() {
        let queued = train_job(serde_json::json!({keys::KUEUE_QUEUE_NAME: "team-a"}));
        let unqueued = train_job(serde_json::json!({"app": "x"}));
        assert_eq!(Mode::of_train_job(&queued, true), Mode::Kueue);
        assert_eq!(Mode::of_train_job(&queued, false), Mode::Plain, "no Kueue reads the label");
        assert_eq!(Mode::of_train_job(&unqueued, true), Mode::Plain);
        assert_eq!(Mode::of_train_job(&unqueued, false), Mode::Plain);
    }
}
