//! The figures of the gate bench, a row per readmission of every Workload, and the bars
//! they are held to.

use std::fmt::{self, Write as _};
use std::time::Duration;

use dispatch_kf_testkit::commands::percentile;
use tokio::time::Instant;

use crate::readmissions::Steps;

/// Bar: a Workload's readmission through the gate, from made active to admitted, over
/// Kueue's alone (median and 99th percentile alike).
const MAX_RATIO: f64 = 1.5;

/// How the Workloads are stopped and let go again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// Kueue alone: `spec.active` set false, then true, on a ClusterQueue with no check.
    Kueue,
    /// The adapter's Hold, then Release, through dispatch's check.
    Gate,
    /// As [`Way::Gate`], with the leading gate replica stopped on the way.
    Handover,
}

impl fmt::Display for Way {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Way::Kueue => "Kueue alone",
            Way::Gate => "the gate",
            Way::Handover => "the gate, leader changed",
        })
    }
}

/// A leader change during a readmission.
pub(crate) struct Handover {
    /// The replica stopped, and the one that led once every Workload was admitted.
    pub(crate) from: String,
    pub(crate) to: String,
    /// When the stop was sent, from the first activation.
    pub(crate) at: Duration,
}

/// One readmission of every Workload of a namespace.
pub(crate) struct Cycle {
    pub(crate) way: Way,
    /// When the first call went out.
    pub(crate) began: Instant,
    /// When the last call answered.
    pub(crate) calls_done: Instant,
    pub(crate) steps: Vec<Steps>,
    pub(crate) handover: Option<Handover>,
}

/// A span between two steps: its median and 99th percentile over the Workloads, and how
/// many Workloads showed both steps.
#[derive(Clone, Copy)]
struct Spread {
    median: f64,
    p99: f64,
    seen: usize,
}

impl Spread {
    fn of(steps: &[Steps], span: Span) -> Spread {
        let (from, to) = span;
        let seconds: Vec<f64> =
            steps.iter().filter_map(|s| s.between(from, to)).map(|d| d.as_secs_f64()).collect();
        Spread {
            median: percentile(seconds.iter().copied(), 0.5),
            p99: percentile(seconds.iter().copied(), 0.99),
            seen: seconds.len(),
        }
    }

    fn cell(self) -> String {
        if self.seen == 0 {
            return "–".into();
        }
        format!("{:.2} / {:.2} s", self.median, self.p99)
    }
}

type Span = (fn(&Steps) -> Option<Instant>, fn(&Steps) -> Option<Instant>);

const ACTIVE_TO_RESERVED: Span = (|s| s.active, |s| s.reserved);
const RESERVED_TO_READY: Span = (|s| s.reserved, |s| s.ready);
const READY_TO_ADMITTED: Span = (|s| s.ready, |s| s.admitted);
const ACTIVE_TO_ADMITTED: Span = (|s| s.active, |s| s.admitted);

impl Cycle {
    fn readmission(&self) -> Spread {
        Spread::of(&self.steps, ACTIVE_TO_ADMITTED)
    }

    /// From the first call to the last Workload admitted.
    fn burst(&self) -> Duration {
        let last = self.steps.iter().filter_map(|s| s.admitted).max();
        last.map_or(Duration::ZERO, |last| last.saturating_duration_since(self.began))
    }

    fn row(&self, run: usize, anchor: &Cycle) -> String {
        let ratio = |f: fn(Spread) -> f64| f(self.readmission()) / f(anchor.readmission());
        let mut row = format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.2}x / {:.2}x | {:.1} s | {:.1} s |",
            run + 1,
            self.way,
            self.steps.len(),
            Spread::of(&self.steps, ACTIVE_TO_RESERVED).cell(),
            Spread::of(&self.steps, RESERVED_TO_READY).cell(),
            Spread::of(&self.steps, READY_TO_ADMITTED).cell(),
            self.readmission().cell(),
            ratio(|s| s.median),
            ratio(|s| s.p99),
            self.calls_done.saturating_duration_since(self.began).as_secs_f64(),
            self.burst().as_secs_f64(),
        );
        if let Some(h) = &self.handover {
            let _ = write!(
                row,
                " {} stopped at {:.1} s; {} led after",
                h.from,
                h.at.as_secs_f64(),
                h.to
            );
        }
        row
    }

    /// The bars this cycle misses against Kueue's `anchor` of the same run.
    fn misses(&self, run: usize, anchor: &Cycle, workloads: usize) -> Vec<String> {
        let mut misses = Vec::new();
        let (ours, theirs) = (self.readmission(), anchor.readmission());
        if ours.seen < workloads {
            misses.push(format!(
                "run {}, {}: {} of {workloads} Workloads seen from active to admitted",
                run + 1,
                self.way,
                ours.seen
            ));
        }
        for (what, ours, theirs) in
            [("median", ours.median, theirs.median), ("99th percentile", ours.p99, theirs.p99)]
        {
            // NaN, when a side saw no Workload through, is a miss too.
            let within = ours <= MAX_RATIO * theirs;
            if !within {
                misses.push(format!(
                    "run {}, {}: readmission {what} {ours:.2} s over Kueue's {theirs:.2} s is above {MAX_RATIO}x",
                    run + 1,
                    self.way
                ));
            }
        }
        if let Some(h) = &self.handover
            && h.from == h.to
        {
            misses.push(format!("run {}: {} still led after it was stopped", run + 1, h.from));
        }
        misses
    }
}

/// One run: Kueue alone, the gate, and the gate across a leader change.
pub(crate) struct Run {
    pub(crate) cycles: [Cycle; 3],
}

impl Run {
    /// The table's rows of run `n`, each against Kueue's alone.
    pub(crate) fn rows(&self, n: usize) -> String {
        let anchor = &self.cycles[0];
        self.cycles.iter().map(|cycle| format!("{}\n", cycle.row(n, anchor))).collect()
    }
}

/// Every run's figures.
pub(crate) struct Report {
    pub(crate) workloads: usize,
    pub(crate) runs: Vec<Run>,
    pub(crate) load: String,
}

impl Report {
    pub(crate) fn text(&self) -> String {
        let mut out = format!(
            "{} Workloads readmitted at once; seconds as median / 99th percentile; the ratio is active → admitted over Kueue alone's in the same run\n\n",
            self.workloads
        );
        out.push_str("| run | way | Workloads | active → quota reserved | reserved → check Ready | check Ready → admitted | active → admitted | ratio | calls | first call → last admitted |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        for (n, run) in self.runs.iter().enumerate() {
            out.push_str(&run.rows(n));
        }
        let _ = writeln!(out, "\nload average at the end: {}", self.load.trim());
        out
    }

    pub(crate) fn misses(&self) -> Vec<String> {
        let mut misses = Vec::new();
        for (n, run) in self.runs.iter().enumerate() {
            let anchor = &run.cycles[0];
            for cycle in &run.cycles[1..] {
                misses.extend(cycle.misses(n, anchor, self.workloads));
            }
        }
        misses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cycle of `n` Workloads, each admitted `admitted_ms` after it was made active,
    /// its quota reserved 10 ms after that.
    fn cycle(way: Way, n: usize, admitted_ms: u64) -> Cycle {
        let began = Instant::now();
        let at = |ms: u64| Some(began + Duration::from_millis(ms));
        let steps = (0..n as u64)
            .map(|i| Steps {
                active: at(i),
                reserved: at(i + 10),
                ready: (way != Way::Kueue).then_some(began + Duration::from_millis(i + 20)),
                admitted: at(i + admitted_ms),
            })
            .collect();
        Cycle { way, began, calls_done: began, steps, handover: None }
    }

    #[test]
    fn a_readmission_within_the_ratio_of_kueues_passes() {
        let report = Report {
            workloads: 100,
            runs: vec![Run {
                cycles: [
                    cycle(Way::Kueue, 100, 1000),
                    cycle(Way::Gate, 100, 1500),
                    cycle(Way::Handover, 100, 1400),
                ],
            }],
            load: "1.0".into(),
        };
        assert_eq!(report.misses(), Vec::<String>::new());
        let text = report.text();
        assert!(text.contains("| 1 | the gate | 100 | 0.01 / 0.01 s | 0.01 / 0.01 s | 1.48 / 1.48 s | 1.50 / 1.50 s | 1.50x / 1.50x |"), "{text}");
        assert!(text.contains("| 1 | Kueue alone | 100 | 0.01 / 0.01 s | – |"), "{text}");
    }

    #[test]
    fn a_slow_readmission_a_missing_workload_or_a_leader_that_stayed_are_misses() {
        let mut handover = cycle(Way::Handover, 99, 1000);
        let stayed = Handover {
            from: "dispatch-kf-gate".into(),
            to: "dispatch-kf-gate".into(),
            at: Duration::ZERO,
        };
        handover.handover = Some(stayed);
        let report = Report {
            workloads: 100,
            runs: vec![Run {
                cycles: [cycle(Way::Kueue, 100, 1000), cycle(Way::Gate, 100, 1600), handover],
            }],
            load: String::new(),
        };
        let misses = report.misses();
        assert_eq!(misses.len(), 4, "{misses:#?}");
        assert!(misses[0].contains("the gate: readmission median 1.60 s"), "{misses:#?}");
        assert!(misses[2].contains("99 of 100 Workloads"), "{misses:#?}");
        assert!(misses[3].contains("still led"), "{misses:#?}");
    }
}
