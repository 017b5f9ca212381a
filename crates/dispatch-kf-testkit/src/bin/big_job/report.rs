//! The figures of a bench, a column per run, and the bars they are held to.

use std::fmt::Write as _;
use std::time::Duration;

use dispatch_kf_testkit::commands::{Call, median};

/// Bar: start and open until every rank runs, over `kubectl apply` until the same.
const MAX_START_RATIO: f64 = 1.2;
/// Bar: a Find's median time over `kubectl get` of the same objects.
const MAX_FIND_RATIO: f64 = 2.0;

/// The small job's Finds.
pub(crate) struct Small {
    pub(crate) pods: usize,
    pub(crate) finds: Vec<Call>,
}

/// A rank out of memory, and who showed it when.
pub(crate) struct Oom {
    /// `dispatch-kf watch`'s resident memory, following the running job, and its peak.
    pub(crate) resident_kib: f64,
    pub(crate) peak_kib: f64,
    /// From the write of the pod's status to `kubectl get pods -w` printing it failed.
    pub(crate) kubectl_failed: Duration,
    /// From the same write to the watch's first line whose cause is out of memory.
    pub(crate) watch_cause: Duration,
    /// From the same write to the watch's line saying the job ended, out of memory.
    pub(crate) watch_ended: Duration,
}

/// One run's figures.
pub(crate) struct Run {
    pub(crate) kubectl_start: Duration,
    pub(crate) kubectl_stop: Duration,
    /// The adapter's job, and the watched one.
    pub(crate) starts: [Duration; 2],
    pub(crate) finds: Vec<Call>,
    pub(crate) inspects: Vec<Call>,
    pub(crate) ceased: Vec<Call>,
    pub(crate) gets: Vec<Call>,
    pub(crate) node_gets: Vec<Call>,
    pub(crate) stop: Duration,
    pub(crate) stop_ended: Duration,
    pub(crate) oom: Oom,
}

/// The median time, requests and bytes of `calls`.
fn medians(calls: &[Call]) -> (f64, f64, f64) {
    (
        median(calls.iter().map(|c| c.seconds)),
        median(calls.iter().map(|c| c.requests as f64)),
        median(calls.iter().map(|c| c.bytes as f64)),
    )
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn millis(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

fn cost(calls: &[Call]) -> String {
    let (seconds, requests, bytes) = medians(calls);
    let peak = median(calls.iter().map(|c| c.peak_kib as f64)) / 1024.0;
    format!("{:.0} ms, {requests:.0} req, {:.0} KB, {peak:.0} MiB", seconds * 1e3, bytes / 1e3)
}

impl Run {
    fn start_ratios(&self) -> [f64; 2] {
        self.starts.map(|s| s.as_secs_f64() / self.kubectl_start.as_secs_f64())
    }

    fn find_ratio(&self) -> f64 {
        medians(&self.finds).0 / medians(&self.gets).0
    }
}

/// How one row's figure is read from a run.
type Figure = dyn Fn(&Run) -> String;

/// Everything measured.
pub(crate) struct Report {
    pub(crate) pods: usize,
    pub(crate) gpus_per_pod: u32,
    pub(crate) small: Small,
    pub(crate) runs: Vec<Run>,
    /// `/proc/loadavg` at the end.
    pub(crate) load: String,
}

impl Report {
    pub(crate) fn text(&self) -> String {
        let mut out = format!(
            "One job of {} pods ({} GPU each), {} runs in a row; load average at the end: {}\n",
            self.pods,
            self.gpus_per_pod,
            self.runs.len(),
            self.load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
        );
        let rows: [(&str, &Figure); 16] = [
            ("kubectl apply, until every rank runs", &|r| secs(r.kubectl_start)),
            ("start + open, until every rank runs", &|r| {
                format!("{} / {}", secs(r.starts[0]), secs(r.starts[1]))
            }),
            ("  over kubectl", &|r| {
                let [a, b] = r.start_ratios();
                format!("{a:.2}x / {b:.2}x")
            }),
            ("find (median of 11)", &|r| cost(&r.finds)),
            ("kubectl get trainjobs,jobsets,pods -l", &|r| cost(&r.gets)),
            ("  find over kubectl get", &|r| format!("{:.2}x", r.find_ratio())),
            ("kubectl get nodes -l (the job's)", &|r| cost(&r.node_gets)),
            ("inspect (median of 11)", &|r| cost(&r.inspects)),
            ("ceased (median of 5)", &|r| cost(&r.ceased)),
            ("kubectl delete, until its pods are gone", &|r| secs(r.kubectl_stop)),
            ("stop-job, until nothing is left", &|r| secs(r.stop)),
            ("stop-job of the ended job", &|r| secs(r.stop_ended)),
            ("watch: resident / peak memory", &|r| {
                format!("{:.1} / {:.1} MiB", r.oom.resident_kib / 1024.0, r.oom.peak_kib / 1024.0)
            }),
            ("OOM -> kubectl get pods -w: Failed", &|r| millis(r.oom.kubectl_failed)),
            ("OOM -> watch: cause out-of-memory", &|r| millis(r.oom.watch_cause)),
            ("OOM -> watch: ended, out-of-memory", &|r| secs(r.oom.watch_ended)),
        ];
        for (name, value) in rows {
            write!(out, "{name:<42}").ok();
            for run in &self.runs {
                write!(out, " | {:>34}", value(run)).ok();
            }
            out.push('\n');
        }
        writeln!(out, "find of a job of {} pods: {}", self.small.pods, cost(&self.small.finds))
            .ok();
        out
    }

    /// The bars missed, one line each.
    pub(crate) fn misses(&self) -> Vec<String> {
        let mut out = Vec::new();
        let small_requests = medians(&self.small.finds).1;
        for (i, run) in self.runs.iter().enumerate() {
            let n = i + 1;
            for ratio in run.start_ratios().into_iter().filter(|r| *r > MAX_START_RATIO) {
                out.push(format!("run {n}: start + open took {ratio:.2}x kubectl apply's time > {MAX_START_RATIO}x"));
            }
            if run.find_ratio() > MAX_FIND_RATIO {
                out.push(format!(
                    "run {n}: find took {:.2}x kubectl get's time > {MAX_FIND_RATIO}x",
                    run.find_ratio()
                ));
            }
            let requests = medians(&run.finds).1;
            if requests != small_requests {
                out.push(format!(
                    "run {n}: find of {} pods made {requests} requests, of {} pods {small_requests}",
                    self.pods, self.small.pods
                ));
            }
        }
        out
    }
}
