//! The render limits: what the Trainer's API can hold (`docs/render.md#the-spec`: more
//! than 124 command items, or more than 122 env entries (121 with WorkDir), is
//! *invalid*, because the Trainer allows 128 of each).
//!
//! Also the Trainer's `int32` fields: `numNodes` and `numProcPerNode` above 2^31-1
//! cannot be written, and are `Invalid` too.

use dispatch_core::{Error, JobSpec};

use super::env::DISPATCH_VARIABLES;

/// The most items the Trainer allows in `spec.trainer.command` and `spec.trainer.env`.
pub(super) const TRAINER_MAX_ITEMS: usize = 128;
/// The items the prologue puts before the job's command: `/bin/sh`, `-c`, the script
/// and `dispatch-prologue`.
pub(super) const PROLOGUE_ITEMS: usize = 4;

/// One limit: the field, how many items the job gives, how many dispatch adds.
type Limit = (&'static str, fn(&JobSpec) -> usize, fn(&JobSpec) -> usize, &'static str);

/// The rows of the table, with why dispatch adds what it adds.
const LIMITS: [Limit; 2] = [
    ("command", |s| s.command.len(), |_| PROLOGUE_ITEMS, "the prologue takes"),
    (
        "env",
        |s| s.env.len(),
        |s| DISPATCH_VARIABLES + usize::from(s.work_dir.is_some()),
        "dispatch's variables take",
    ),
];

/// A field of the spec and how to read it.
type Field = (&'static str, fn(&JobSpec) -> i64);

/// The `int32` fields of `spec.trainer`.
const INT32_FIELDS: [Field; 2] = [("nodes", |s| s.nodes), ("procsPerNode", |s| s.procs_per_node)];

/// Every limit the spec passes, reported at once as one `Invalid` error.
pub(super) fn check(spec: &JobSpec) -> Result<(), Error> {
    let mut problems = Vec::new();
    for (field, given, added, why) in LIMITS {
        let (given, added) = (given(spec), added(spec));
        if given + added > TRAINER_MAX_ITEMS {
            problems.push(format!(
                "{field} has {given} items: the Trainer allows {TRAINER_MAX_ITEMS} and {why} {added}, so at most {}",
                TRAINER_MAX_ITEMS - added
            ));
        }
    }
    for (field, read) in INT32_FIELDS {
        let value = read(spec);
        if value > i64::from(i32::MAX) {
            problems.push(format!("{field} is {value}: the Trainer allows at most {}", i32::MAX));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "job spec exceeds the Trainer's limits: {}",
            problems.join("; ")
        )))
    }
}
