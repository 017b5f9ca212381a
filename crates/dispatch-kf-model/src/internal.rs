//! What only this workspace's own crates use: the client, the Backend, the gate and the
//! cause controller. These modules are public because those crates are others to this
//! one, not because an outside user should call them: they may change with any release.
//! An outside user classifies and renders from the crate's root.

pub mod answer; // the apiserver's answers read into views
pub mod capabilities; // the answers to the supervisor's capability questions
pub mod ended; // the record that keeps a failed TrainJob ended
pub mod evidence; // deleted pods' last state, kept for later classifications
pub mod gates; // the hold family's edits of a TrainJob or a Workload
pub mod json; // fields of raw JSON objects, read where views are not
pub mod kueue; // Kueue mode's checks: the gate's proof, a Workload ready
pub mod probe; // the preflight probe's request, its budget, and when its leftovers go
pub mod ranks; // a job's pods by rank, and its nodes
pub mod readback; // a written TrainJob against the one the apiserver holds
pub mod readmission; // the readmission gate's rule
pub mod removal; // what StopJob does to a job's objects beyond deleting them
pub mod served; // what the cluster's served schemas say of its Trainer
