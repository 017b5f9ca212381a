//! The bench's eye on the Workloads of a namespace: what each is now and, once armed,
//! when the bench first saw each step of its readmission (made active, quota reserved,
//! dispatch's check Ready, admitted).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use dispatch_kf_model::internal::readmission;
use dispatch_kf_testkit::follow::{Change, Followed, name_of};
use kube::api::{Api, DynamicObject};
use serde_json::Value;
use tokio::time::Instant;

/// The readmission gate's AdmissionCheck (`crates/dispatch-kf-sim/data/kueue-setup.json`).
const CHECK: &str = "dispatch-readmission";

/// Where one Workload stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Now {
    pub(crate) active: bool,
    pub(crate) reserved: bool,
    pub(crate) ready: bool,
    pub(crate) admitted: bool,
}

impl Now {
    fn of(workload: &Value) -> Now {
        let condition = |kind: &str| {
            let conditions = workload.pointer("/status/conditions").and_then(Value::as_array);
            conditions.into_iter().flatten().any(|c| c["type"] == kind && c["status"] == "True")
        };
        Now {
            active: workload.pointer("/spec/active") != Some(&Value::Bool(false)),
            reserved: condition("QuotaReserved"),
            ready: readmission::check_state(workload, CHECK) == Some("Ready"),
            admitted: condition("Admitted"),
        }
    }

    /// Neither active nor holding quota, nor checked, nor admitted: stopped.
    pub(crate) fn stopped(self) -> bool {
        self == Now::default()
    }
}

/// When the bench first saw each step of one Workload after it was armed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Steps {
    pub(crate) active: Option<Instant>,
    pub(crate) reserved: Option<Instant>,
    pub(crate) ready: Option<Instant>,
    pub(crate) admitted: Option<Instant>,
}

impl Steps {
    fn stamp(&mut self, now: Now, at: Instant) {
        let firsts = [
            (now.active, &mut self.active),
            (now.reserved, &mut self.reserved),
            (now.ready, &mut self.ready),
            (now.admitted, &mut self.admitted),
        ];
        for (reached, first) in firsts {
            if reached {
                first.get_or_insert(at);
            }
        }
    }

    /// The time from step `from` to step `to`, when both were seen.
    pub(crate) fn between(
        &self,
        from: fn(&Steps) -> Option<Instant>,
        to: fn(&Steps) -> Option<Instant>,
    ) -> Option<Duration> {
        Some(to(self)?.saturating_duration_since(from(self)?))
    }
}

/// The Workloads of a namespace, by name.
#[derive(Default)]
pub(crate) struct Readmissions {
    now: BTreeMap<String, Now>,
    /// Stamped from the moment the bench arms it.
    steps: Option<BTreeMap<String, Steps>>,
}

impl Readmissions {
    /// Follows the Workloads of `namespace`.
    pub(crate) fn follow(kube: &kube::Client, namespace: &str) -> Followed<Readmissions> {
        let workload = dispatch_kf_client::resources::WORKLOAD.api_resource();
        let api = Api::namespaced_with(kube.clone(), namespace, &workload);
        Followed::start(api, "", Readmissions::default(), Readmissions::fold)
    }

    fn fold(&mut self, change: Change<'_, DynamicObject>, at: Instant) {
        match change {
            Change::Listed(workloads) => {
                self.now.clear();
                for w in workloads {
                    self.put(w, at);
                }
            }
            Change::Put(w) => self.put(w, at),
            Change::Deleted(w) => {
                self.now.remove(&name_of(w));
            }
        }
    }

    fn put(&mut self, workload: &DynamicObject, at: Instant) {
        let (name, now) = (name_of(workload), Now::of(&workload.data));
        if let Some(steps) = &mut self.steps {
            steps.entry(name.clone()).or_default().stamp(now, at);
        }
        self.now.insert(name, now);
    }

    /// Forgets what was stamped and stamps every step seen from now on.
    pub(crate) fn arm(&mut self) {
        self.steps = Some(BTreeMap::new());
    }

    /// The Workloads' names.
    pub(crate) fn names(&self) -> Vec<String> {
        self.now.keys().cloned().collect()
    }

    /// How many Workloads there are.
    pub(crate) fn len(&self) -> usize {
        self.now.len()
    }

    /// How many Workloads `holds` holds of.
    pub(crate) fn count(&self, holds: impl Fn(Now) -> bool) -> usize {
        self.now.values().filter(|now| holds(**now)).count()
    }

    /// The steps stamped since the bench armed it.
    pub(crate) fn steps(&self) -> Vec<Steps> {
        self.steps.iter().flat_map(|steps| steps.values().copied()).collect()
    }
}

impl fmt::Debug for Readmissions {
    /// The counts of each step: five hundred names say nothing in a timeout's message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} Workloads: {} active, {} reserved, {} checked Ready, {} admitted",
            self.len(),
            self.count(|n| n.active),
            self.count(|n| n.reserved),
            self.count(|n| n.ready),
            self.count(|n| n.admitted)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_workload_reads_as_its_steps() {
        let admitted = json!({
            "spec": {"active": true},
            "status": {
                "conditions": [{"type": "QuotaReserved", "status": "True"},
                               {"type": "Admitted", "status": "True"},
                               {"type": "Evicted", "status": "False"}],
                "admissionChecks": [{"name": CHECK, "state": "Ready"}]
            }
        });
        let all = Now { active: true, reserved: true, ready: true, admitted: true };
        assert_eq!(Now::of(&admitted), all);
        let held = json!({"spec": {"active": false},
            "status": {"admissionChecks": [{"name": CHECK, "state": "Pending"}]}});
        assert!(Now::of(&held).stopped());
        assert_eq!(Now::of(&json!({})), Now { active: true, ..Now::default() });
    }

    #[test]
    fn each_step_is_stamped_when_first_seen_after_arming() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut steps = Steps::default();
        steps.stamp(Now { active: true, ..Now::default() }, at(1));
        steps.stamp(Now { active: true, reserved: true, ..Now::default() }, at(5));
        let all = Now { active: true, reserved: true, ready: true, admitted: true };
        steps.stamp(all, at(9));
        steps.stamp(all, at(20));
        assert_eq!(steps.between(|s| s.active, |s| s.admitted), Some(Duration::from_millis(8)));
        assert_eq!(steps.between(|s| s.reserved, |s| s.ready), Some(Duration::from_millis(4)));
        assert_eq!(Steps::default().between(|s| s.active, |s| s.ready), None);
    }
}
