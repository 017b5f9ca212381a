//! What the run saw, gathered as it goes (`Log`), and the report made of it at the end:
//! faults by kind, calls by outcome, the cause table, memory, and every violation of
//! the checks (docs/dev/chaos.md says what each check is).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dispatch_core::CauseKind;
use dispatch_kf_testkit::memory_kib;

use crate::Args;

/// An execution the adapter said ended: its pods must not run again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ended {
    pub(crate) job: String,
    pub(crate) submission: String,
    pub(crate) admission: u64,
    pub(crate) restart_attempt: u64,
    /// When the supervisor was told.
    pub(crate) at: jiff::Timestamp,
}

#[derive(Default)]
struct State {
    calls: BTreeMap<(String, String), u64>,
    faults: BTreeMap<String, u64>,
    violations: Vec<String>,
    injected: BTreeMap<(String, u32), Vec<&'static str>>,
    causes: BTreeMap<(String, CauseKind), u64>,
    unexplained: Vec<String>,
    owned_doubt: Vec<String>,
    ended: Vec<Ended>,
    notes: Vec<String>,
    /// Pods made for a Job already deleted (observer.rs).
    stale_pods: Vec<String>,
    job_sets_deleted: std::collections::BTreeSet<String>,
    traces: BTreeMap<String, std::collections::VecDeque<String>>,
    /// Since when a gate has held a fresh Lease without a break, as the observer saw
    /// it; in plain mode, since the run began (there is no gate to wait for).
    gate_led_since: Option<Instant>,
}

/// How long a gate must have led before a command that begins then may no longer
/// answer *read-only*: the observer samples every half second, and the command reads
/// the Lease once at its start.
const LEADING: Duration = Duration::from_secs(5);

/// How many of a job's last calls its trace keeps.
const TRACE: usize = 24;

/// Everything the run's tasks report, behind one lock.
#[derive(Default)]
pub(crate) struct Log {
    state: Mutex<State>,
    started: std::sync::OnceLock<Instant>,
}

impl Log {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Seconds since the first line logged.
    fn clock(&self) -> f64 {
        self.started.get_or_init(Instant::now).elapsed().as_secs_f64()
    }

    /// A line on standard error, timed.
    pub(crate) fn line(&self, text: &str) {
        eprintln!("[{:7.1}s] {text}", self.clock());
    }

    /// A call of `call` answered `outcome` (`ok` or a sentinel's name) after `took`,
    /// within a context of `limit`.
    pub(crate) fn call(&self, call: &str, outcome: &str, took: Duration, limit: Duration) {
        self.with(|s| *s.calls.entry((call.to_owned(), outcome.to_owned())).or_default() += 1);
        // A call may run past its deadline by the time its last request needs to fail.
        if took > limit + Duration::from_secs(10) {
            self.violation(format!("{call} took {took:.1?}, its deadline {limit:?}"));
        }
        if outcome == "unauthorized" {
            self.violation(format!("{call} answered unauthorized: the identity is the admin"));
        }
    }

    pub(crate) fn fault(&self, kind: &str, what: &str) {
        self.line(&format!("fault {kind}: {what}"));
        self.with(|s| *s.faults.entry(kind.to_owned()).or_default() += 1);
    }

    pub(crate) fn violation(&self, text: String) {
        self.line(&format!("VIOLATION: {text}"));
        self.with(|s| s.violations.push(text));
    }

    pub(crate) fn note(&self, text: String) {
        self.line(&format!("note: {text}"));
        self.with(|s| s.notes.push(text));
    }

    /// A fault meant to end submission `submission` of `job` with `cause`; a
    /// submission may meet several before it ends.
    pub(crate) fn injected(&self, job: &str, submission: u32, cause: &'static str) {
        self.with(|s| s.injected.entry((job.to_owned(), submission)).or_default().push(cause));
    }

    /// The first Ended the supervisor saw of a submission, with the cause it named.
    pub(crate) fn ended(&self, ended: Ended, submission: u32, cause: CauseKind, detail: &str) {
        self.with(|s| {
            let injected =
                s.injected.get(&(ended.job.clone(), submission)).cloned().unwrap_or_default();
            let key = if injected.is_empty() { "none".to_owned() } else { injected.join("+") };
            *s.causes.entry((key.clone(), cause)).or_default() += 1;
            if !explained_by(&injected, cause) {
                let line = format!(
                    "{} submission {submission}: injected {key}, reported {cause}: {detail}",
                    ended.job
                );
                // An answer that says its evidence may miss pods owns up to its doubt,
                // as `unknown` does: counted apart, with the words.
                if detail.contains(EVIDENCE_GAP) {
                    s.owned_doubt.push(line);
                } else {
                    s.unexplained.push(line);
                }
            }
            s.ended.push(ended);
        });
    }

    /// What a supervisor did to `job`, kept (the last [`TRACE`] lines) to be printed
    /// with a violation of the job.
    pub(crate) fn trace(&self, job: &str, text: &str) {
        let line = format!("[{:7.1}s] {text}", self.clock());
        self.with(|s| {
            let trace = s.traces.entry(job.to_owned()).or_default();
            if trace.len() == TRACE {
                trace.pop_front();
            }
            trace.push_back(line);
        });
    }

    /// `job`'s trace, a line each, indented.
    pub(crate) fn trace_of(&self, job: &str) -> String {
        self.with(|s| {
            let lines = s.traces.get(job).into_iter().flatten();
            lines.map(|l| format!("\n      {l}")).collect()
        })
    }

    /// Whether a gate leads now: since when (`None`: no gate holds a fresh Lease).
    pub(crate) fn gate_leads(&self, since: Option<Instant>) {
        self.with(|s| s.gate_led_since = since);
    }

    /// `call`, begun at `began`, answered *read-only*: a violation once a gate had led
    /// for [`LEADING`] when it began. A verdict of a passing fault must not outlive it
    /// (`docs/cli.md`, the preflight cache).
    pub(crate) fn read_only(&self, call: &str, began: Instant, message: &str) {
        let since = self.with(|s| s.gate_led_since);
        if let Some(since) = since
            && began >= since + LEADING
        {
            self.violation(format!(
                "{call} answered read-only though a gate had led for {:.1?} when it began: {message}",
                began - since
            ));
        }
    }

    /// A pod made for a Job already deleted, by a controller whose cache was behind.
    pub(crate) fn stale_pod(&self, text: String) {
        self.line(&format!("made for a deleted Job: {text}"));
        self.with(|s| s.stale_pods.push(text));
    }

    /// How many pods made for a deleted Job were seen so far.
    #[cfg(test)]
    pub(crate) fn stale_pods(&self) -> usize {
        self.with(|s| s.stale_pods.len())
    }

    /// A JobSet of `job` was deleted by hand.
    pub(crate) fn job_set_deleted(&self, job: &str) {
        self.with(|s| s.job_sets_deleted.insert(job.to_owned()));
    }

    /// Whether a JobSet of `job` was deleted by hand.
    pub(crate) fn job_set_was_deleted(&self, job: &str) -> bool {
        self.with(|s| s.job_sets_deleted.contains(job))
    }

    /// Every execution said ended so far.
    pub(crate) fn ended_so_far(&self) -> Vec<Ended> {
        self.with(|s| s.ended.clone())
    }

    /// This process's resident memory.
    pub(crate) fn memory_mib(&self) -> f64 {
        memory_kib("VmRSS") / 1024.0
    }
}

/// What an observation's detail says when the pods watch lost its place and deleted
/// pods may be missing from the evidence (`classify/situation.rs`, `evidence_gap`).
const EVIDENCE_GAP: &str = "may be missing from the evidence";

/// Whether the cause reported is one the faults injected on the submission make: the
/// earliest finding among the pods is the cause (the reference pages' rule), and a
/// submission can meet a node loss, then a rank's end before the lost node's pods are
/// evicted, so any of them may be the one. A deleted pod (143) or JobSet, and no fault
/// at all, excuse any cause: what they end in depends on the moment.
fn explained_by(injected: &[&str], reported: CauseKind) -> bool {
    injected.iter().any(|fault| match *fault {
        "out-of-memory" => reported == CauseKind::OutOfMemory,
        "exit-3" => reported == CauseKind::NonZeroExit,
        "node-lost" => reported == CauseKind::NodeLost,
        "preempted" => reported == CauseKind::Preempted,
        _ => true,
    }) || injected.is_empty()
}

/// The run's report.
pub(crate) struct Report {
    pub(crate) violations: Vec<String>,
    text: String,
}

impl Report {
    /// The report of the run `log` saw: `warm` is the memory when the load ended,
    /// `left` what the final listing found of the jobs.
    pub(crate) fn of(
        log: &Log,
        args: &Args,
        took: Duration,
        warm: f64,
        left: Vec<String>,
    ) -> Report {
        let end = log.memory_mib();
        let mut violations = log.with(|s| s.violations.clone());
        violations.extend(left.iter().map(|o| format!("left after StopJob of every job: {o}")));
        let flat = end <= warm * 1.5 + 32.0;
        if !flat {
            violations.push(format!("memory grew from {warm:.0} to {end:.0} MiB after the load"));
        }
        let mode = if args.kueue { "kueue" } else { "plain" };
        let text = log.with(|s| {
            let mut t = format!(
                "chaos: mode {mode}, seed {}, {} jobs, {:.0?}\n",
                args.seed, args.jobs, took
            );
            let faults: u64 = s.faults.values().sum();
            t += &format!("faults: {faults}\n");
            for (kind, n) in &s.faults {
                t += &format!("  {kind}: {n}\n");
            }
            let calls: u64 = s.calls.values().sum();
            t += &format!("calls: {calls}\n");
            for ((call, outcome), n) in &s.calls {
                t += &format!("  {call} {outcome}: {n}\n");
            }
            t += "causes (injected -> reported: count):\n";
            for ((injected, reported), n) in &s.causes {
                t += &format!("  {injected} -> {reported}: {n}\n");
            }
            for line in &s.unexplained {
                t += &format!("  not the injected cause: {line}\n");
            }
            for line in &s.owned_doubt {
                t +=
                    &format!("  not the injected cause, with a gap in the evidence said: {line}\n");
            }
            t += &format!("pods made for a Job already deleted: {}\n", s.stale_pods.len());
            for line in &s.stale_pods {
                t += &format!("  {line}\n");
            }
            for note in &s.notes {
                t += &format!("note: {note}\n");
            }
            t += &format!("memory: {warm:.0} MiB when the load ended, {end:.0} MiB at the end\n");
            t
        });
        let mut text = text;
        let unexplained = log.with(|s| s.unexplained.clone());
        for line in unexplained {
            violations.push(format!("an Ended not naming its fault: {line}"));
        }
        text += &format!("violations: {}\n", violations.len());
        for v in &violations {
            text += &format!("  {v}\n");
        }
        Report { violations, text }
    }

    /// The violations `log` holds so far.
    #[cfg(test)]
    pub(crate) fn count_violations(log: &Log) -> usize {
        log.with(|s| s.violations.len())
    }

    pub(crate) fn render(&self) -> String {
        self.text.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_answer_is_a_violation_only_once_a_gate_has_led_a_while() {
        let log = Log::default();
        let now = Instant::now();
        log.read_only("cli open", now, "no gate leads");
        log.gate_leads(Some(now));
        log.read_only("cli open", now + Duration::from_secs(1), "the gate just came back");
        assert_eq!(Report::count_violations(&log), 0);
        log.read_only("cli open", now + LEADING, "sticky");
        assert_eq!(Report::count_violations(&log), 1);
        log.gate_leads(None);
        log.read_only("cli open", now + LEADING * 2, "the gate went again");
        assert_eq!(Report::count_violations(&log), 1);
    }

    #[test]
    fn a_cause_is_explained_by_any_fault_the_submission_met() {
        assert!(explained_by(&["node-lost", "out-of-memory"], CauseKind::OutOfMemory));
        assert!(explained_by(&["node-lost", "out-of-memory"], CauseKind::NodeLost));
        assert!(!explained_by(&["node-lost", "out-of-memory"], CauseKind::NonZeroExit));
        assert!(!explained_by(&["exit-3"], CauseKind::Unknown));
        assert!(explained_by(&["exit-3", "pod-deleted"], CauseKind::Unknown));
        assert!(explained_by(&[], CauseKind::Unknown));
        assert!(explained_by(&["preempted"], CauseKind::Preempted));
        assert!(!explained_by(&["preempted"], CauseKind::NonZeroExit));
    }
}
