//! The execution a pod belongs to and an object's current one: R = A + J, the higher A
//! on a tie (`docs/classification.md#the-execution-classifyexecutionrs`;
//! `docs/execution-identity.md#the-two-counters`). A pod lacking either counter counts
//! towards no execution.

use crate::lenient::Str;
use dispatch_core::Execution;

use crate::keys;
use crate::names::parse_canonical_decimal;
use crate::view::Pod;

/// A counter as dispatch and JobSet write it: `0`, or a decimal without sign or
/// leading zero.
pub(crate) fn parse_counter(text: &str) -> Option<u64> {
    if text == "0" { Some(0) } else { parse_canonical_decimal(text) }
}

/// The execution a pod belongs to: A from its `d/admission` annotation, J from its
/// `jobset.sigs.k8s.io/restart-attempt` label; `None` when either is missing or not a
/// counter.
pub(crate) fn of_pod<S: Str>(pod: &Pod<S>) -> Option<Execution> {
    let a = parse_counter(pod.meta.annotation(keys::ANN_ADMISSION)?)?;
    let j = parse_counter(pod.meta.label(keys::JOBSET_RESTART_ATTEMPT)?)?;
    Some(Execution::new(a, j))
}

/// The order of executions: R first, then A.
pub(crate) fn order_key(e: &Execution) -> (u64, u64) {
    (e.index, e.admission)
}

/// The current execution among `executions`: the highest R, the higher A on a tie.
pub(crate) fn current(executions: impl IntoIterator<Item = Execution>) -> Option<Execution> {
    executions.into_iter().max_by_key(order_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_execution_is_highest_r_then_higher_a() {
        let picked = current([Execution::new(1, 1), Execution::new(2, 0), Execution::new(1, 0)]);
        assert_eq!(picked, Some(Execution::new(2, 0)));
        assert_eq!(current([]), None);
    }

    #[test]
    fn counters_are_zero_or_canonical_decimals() {
        assert_eq!(parse_counter("0"), Some(0));
        assert_eq!(parse_counter("12"), Some(12));
        for bad in ["", "00", "01", "-1", "+1", "x"] {
            assert_eq!(parse_counter(bad), None, "{bad}");
        }
    }
}
