//! [`Moment`]: one end or interruption of a TrainJob's execution, read off its objects,
//! and the Event name that makes it once.

use jiff::Timestamp;

use crate::classify::findings::time;
use crate::classify::index::Index;
use crate::lenient::Str;
use crate::object::Condition;
use crate::snapshot::Snapshot;
use crate::view::{TrainJob, Workload, condition, true_condition};

/// The longest name the apiserver takes for an Event (a DNS subdomain).
const NAME_LIMIT: usize = 253;

/// What happened to the execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trigger {
    /// The TrainJob finished: `Complete=True` or `Failed=True`.
    Ended,
    /// Kueue evicted the TrainJob's Workload: `Evicted=True`.
    Evicted,
}

impl Trigger {
    /// The word the Event name carries.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Ended => "ended",
            Trigger::Evicted => "evicted",
        }
    }
}

/// One end or interruption of a TrainJob's execution.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Moment {
    /// The TrainJob's namespace.
    pub namespace: String,
    /// The TrainJob's name.
    pub name: String,
    /// The TrainJob's UID.
    pub uid: String,
    /// What happened.
    pub trigger: Trigger,
    /// When the objects say it happened, to the second; `None` when the condition
    /// carries no readable time.
    pub at: Option<Timestamp>,
}

impl Moment {
    /// The name of the Event that tells this moment: the same for every process that
    /// reads the same objects, so a second create of it is refused as `AlreadyExists`.
    /// `<TrainJob name>.<UID's last 8>.<trigger>.<Unix seconds>`, the TrainJob's name
    /// shortened when the whole would pass 253 characters; always a DNS subdomain when
    /// the TrainJob's name is one.
    pub fn event_name(&self) -> String {
        // The UID's last 8 letters and digits: random in the apiserver's UUIDs, and
        // the part that differs in the sim's counted ones.
        let letters: Vec<char> =
            self.uid.chars().filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit()).collect();
        let uid: String = letters[letters.len().saturating_sub(8)..].iter().collect();
        let uid = if uid.is_empty() { "0".to_owned() } else { uid };
        let seconds = self.at.map_or(0, |at| at.as_second().max(0));
        let suffix = format!("{uid}.{}.{seconds}", self.trigger.as_str());
        let room = NAME_LIMIT - suffix.len() - 1;
        let mut name = &self.name[..floor_char_boundary(&self.name, room)];
        // A subdomain's labels end with a letter or digit.
        name = name.trim_end_matches(['-', '.']);
        if name.is_empty() {
            return suffix;
        }
        format!("{name}.{suffix}")
    }
}

/// The largest index at most `at` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

/// Every moment the TrainJobs of `snapshot` show now, at most one per TrainJob and
/// trigger (a condition holds one time), sorted.
pub fn moments<S: Str>(snapshot: &Snapshot<S>) -> Vec<Moment> {
    let index = Index::new(snapshot);
    let mut out: Vec<Moment> = snapshot
        .train_jobs
        .iter()
        .flat_map(|tj| {
            let ended = ["Complete", "Failed"]
                .into_iter()
                .find_map(|kind| true_condition(&tj.conditions, kind))
                .map(|c| moment(tj, Trigger::Ended, c.last_transition_time.get()));
            let workload = index.workload(tj.meta.namespace(), tj.meta.uid());
            let evicted = workload
                .and_then(ended_an_admission)
                .map(|c| moment(tj, Trigger::Evicted, c.last_transition_time.get()));
            ended.into_iter().chain(evicted)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The `Evicted=True` condition of a Workload whose eviction ended an admission: one
/// still `Admitted` (Kueue unsets it just after), or whose `Admitted` went `False` at
/// or after the eviction. An eviction of a Workload that only held quota (an admission
/// check's Retry, as the gate's while it waits for a Release) stopped no pod.
fn ended_an_admission<S: Str>(w: &Workload<S>) -> Option<&Condition<S>> {
    let evicted = true_condition(&w.conditions, "Evicted")?;
    let admitted = condition(&w.conditions, "Admitted")?;
    if admitted.is_true() {
        return Some(evicted);
    }
    let lost = time(admitted.last_transition_time.get())?;
    let at = time(evicted.last_transition_time.get())?;
    (lost >= at).then_some(evicted)
}

fn moment<S: Str>(tj: &TrainJob<S>, trigger: Trigger, at: Option<&str>) -> Moment {
    Moment {
        namespace: tj.meta.namespace().to_owned(),
        name: tj.meta.name().to_owned(),
        uid: tj.meta.uid().to_owned(),
        trigger,
        at: time(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Option<Timestamp> {
        Some(text.parse().unwrap())
    }

    fn ended(name: &str, uid: &str) -> Moment {
        Moment {
            namespace: "team".into(),
            name: name.into(),
            uid: uid.into(),
            trigger: Trigger::Ended,
            at: at("2026-12-03T17:37:54Z"),
        }
    }

    #[test]
    fn an_event_name_is_the_train_job_its_uid_the_trigger_and_the_second() {
        let m = ended("train-1", "90a31ecf-b4aa-4c1b-b6f8-3a8296eb6ee4");
        assert_eq!(m.event_name(), "train-1.96eb6ee4.ended.1796319474");
        let evicted = Moment { trigger: Trigger::Evicted, at: None, ..m };
        assert_eq!(evicted.event_name(), "train-1.96eb6ee4.evicted.0");
    }

    fn workload(conditions: serde_json::Value) -> Workload {
        let object = serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "team"},
            "status": {"conditions": conditions},
        });
        match crate::internal::answer::read_object(object.to_string().as_bytes()).unwrap() {
            crate::view::View::Workload(w) => w,
            other => panic!("{other:?}"),
        }
    }

    fn condition(kind: &str, status: &str, at: &str) -> serde_json::Value {
        serde_json::json!({"type": kind, "status": status, "lastTransitionTime": at})
    }

    #[test]
    fn an_eviction_is_a_moment_only_when_it_ended_an_admission() {
        let evicted = condition("Evicted", "True", "2026-12-03T17:36:05Z");
        let preempted = workload(serde_json::json!([
            evicted.clone(),
            condition("Admitted", "False", "2026-12-03T17:36:06Z")
        ]));
        assert!(ended_an_admission(&preempted).is_some(), "admitted until the eviction");
        let still = workload(serde_json::json!([
            evicted.clone(),
            condition("Admitted", "True", "2026-12-03T17:30:00Z")
        ]));
        assert!(ended_an_admission(&still).is_some(), "admitted as it is evicted");
        // The gate's Retry evicts a Workload that only held quota since the last time
        // it was admitted: no pod stopped.
        let retried = workload(serde_json::json!([
            condition("Evicted", "True", "2026-12-03T17:40:00Z"),
            condition("Admitted", "False", "2026-12-03T17:36:06Z")
        ]));
        assert!(ended_an_admission(&retried).is_none());
        let never = workload(serde_json::json!([evicted]));
        assert!(ended_an_admission(&never).is_none(), "never admitted");
    }

    #[test]
    fn a_long_name_is_shortened_to_a_subdomain_of_253_characters() {
        let long = format!("{}-{}", "a".repeat(200), "b".repeat(60));
        let name = ended(&long, "90a31ecf").event_name();
        assert_eq!(name.len(), 253, "{name}");
        assert!(name.ends_with("b.90a31ecf.ended.1796319474"), "{name}");
        // Cut just after a dash: the dash goes, the label ends with a letter.
        let dashed = format!("{}-{}", "a".repeat(226), "b".repeat(30));
        let name = ended(&dashed, "90a31ecf").event_name();
        assert_eq!(name, format!("{}.90a31ecf.ended.1796319474", "a".repeat(226)));
    }
}
