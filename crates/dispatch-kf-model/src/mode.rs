//! [`Mode`]: whether Kueue admits the adapter's TrainJobs.

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
