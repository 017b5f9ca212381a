//! What the narration says changed in the cluster after each step: the TrainJobs,
//! runtime copies, JobSets and pods of the demo's namespace that appeared (`+`),
//! changed (`~`, pods only: phase, node, terminating) or went (`-`). It reads the
//! simulated cluster directly: this is the cluster's truth, not the adapter's report.

use std::collections::BTreeMap;

use dispatch_kf_sim::Sim;
use serde_json::Value;

/// The kinds whose objects the narration follows, by plural and kind, in the order
/// it lists them.
const FOLLOWED: [(&str, &str); 4] = [
    ("trainjobs", "TrainJob"),
    ("trainingruntimes", "TrainingRuntime"),
    ("jobsets", "JobSet"),
    ("pods", "Pod"),
];

/// The namespace the demo's jobs run in.
pub(crate) const NS: &str = "default";

/// The followed objects as last described: (the kind's place in [`FOLLOWED`],
/// `Kind name`) to what is said of its state.
#[derive(Default)]
pub(crate) struct Followed(BTreeMap<(usize, String), String>);

impl Followed {
    /// Every followed object of the namespace now, with its state (for pods: phase,
    /// node, terminating; nothing for the others).
    fn read(sim: &Sim) -> BTreeMap<(usize, String), String> {
        let mut now = BTreeMap::new();
        for (order, (plural, kind)) in FOLLOWED.into_iter().enumerate() {
            for o in sim.list(plural, NS) {
                let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("").to_owned();
                let state = if plural == "pods" {
                    let mut s = format!("{} on {}", text("/status/phase"), text("/spec/nodeName"));
                    if o.pointer("/metadata/deletionTimestamp").is_some() {
                        s.push_str(", terminating");
                    }
                    s
                } else {
                    String::new()
                };
                now.insert((order, format!("{kind} {}", text("/metadata/name"))), state);
            }
        }
        now
    }

    /// Reads the cluster again; returns a line per object that appeared, changed or
    /// went since the last read.
    pub(crate) fn update(&mut self, sim: &Sim) -> Vec<String> {
        let now = Followed::read(sim);
        let mut lines = Vec::new();
        for ((_, key), state) in &now {
            let with = |s: &str| if s.is_empty() { String::new() } else { format!(" ({s})") };
            match self.0.iter().find(|((_, k), _)| k == key).map(|(_, s)| s) {
                None => lines.push(format!("cluster: + {key}{}", with(state))),
                Some(old) if old != state => lines.push(format!("cluster: ~ {key}: {state}")),
                Some(_) => {}
            }
        }
        for (_, key) in self.0.keys().filter(|k| !now.contains_key(*k)) {
            lines.push(format!("cluster: - {key}"));
        }
        self.0 = now;
        lines
    }
}
