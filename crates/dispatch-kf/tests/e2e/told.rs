//! The cause controller beside the suite (`docs/events.md`): on the sim, a replica
//! started in-process for the scenario; on a real cluster, the one `cargo xtask
//! cluster events` runs. A scenario asks for it before its job ends, then checks that
//! the end was told as one Event regarding the TrainJob, with the reason of its cause.

use std::time::Duration;

use dispatch_core::ObjectRef;
use dispatch_kf_events::telemetry::Telemetry;
use dispatch_kf_model::keys;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use super::suite::{BackendOnTarget, NAMESPACE};
use super::target::{Component, Target};

/// The cause controller's Lease (namespace, name), as its deployment names it.
pub(crate) const EVENTS_LEASE: (&str, &str) = ("dispatch-system", "dispatch-events");

/// The cause controller a scenario's Events come from.
pub(crate) enum CauseController {
    /// In-process on the sim: restarted by starting another.
    Sim { running: Option<dispatch_kf_events::Running>, telemetry: Telemetry },
    /// The process of the real control plane.
    Real,
}

fn leases() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
    )
}

fn events() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("events.k8s.io", "v1", "Event"),
        "events",
    )
}

impl BackendOnTarget {
    /// The cause controller, running and having read everything: on the sim a replica
    /// started now; on a real cluster the one whose Lease is held. `None` on a real
    /// cluster where none runs: the scenario then checks no Event (and says so).
    pub(crate) async fn cause_controller(&self) -> Option<CauseController> {
        match &self.target {
            Target::Sim(..) => Some(self.start_sim_events().await),
            Target::Real(_) => {
                let (namespace, name) = EVENTS_LEASE;
                let api = Api::<DynamicObject>::namespaced_with(
                    self.kube().clone(),
                    namespace,
                    &leases(),
                );
                let lease = api.get_opt(name).await.expect("read the cause controller's Lease");
                let held = lease.is_some_and(|l| {
                    l.data["spec"]["holderIdentity"].as_str().is_some_and(|h| !h.is_empty())
                });
                if !held {
                    println!(
                        "no cause controller runs here (`cargo xtask cluster events`): its Events are not checked"
                    );
                }
                held.then_some(CauseController::Real)
            }
        }
    }

    async fn start_sim_events(&self) -> CauseController {
        let Target::Sim(sim, _) = &self.target else { unreachable!("the sim's") };
        let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": EVENTS_LEASE.0}});
        sim.apply(namespace).expect("the Lease's namespace");
        let config = self.target.config().await;
        let cluster =
            dispatch_kf_client::Cluster::from_kube_config(config.clone(), Duration::from_secs(30))
                .expect("a cluster");
        let client = kube::Client::try_from(config).expect("a client");
        let mut replica = dispatch_kf_replica::Options::<Telemetry>::new(
            EVENTS_LEASE.0,
            EVENTS_LEASE.1,
            "e2e-events",
        );
        replica.clock = std::sync::Arc::new(sim.clock());
        // The suite moves virtual time on by minutes a look: a Lease that long keeps
        // the one replica leading throughout.
        replica.lease_duration = Duration::from_secs(3600);
        replica.renew_deadline = Duration::from_secs(2400);
        replica.retry_period = Duration::from_millis(20);
        let telemetry = replica.telemetry.clone();
        let options = dispatch_kf_events::Options::new("e2e-events");
        let running = dispatch_kf_events::spawn(cluster, client, options, replica);
        self.target
            .until("the cause controller has read everything and leads", async || {
                use dispatch_kf_replica::Telemetry as _;
                let ready =
                    telemetry.synced() && telemetry.role() == dispatch_kf_replica::Role::Leading;
                if ready {
                    Ok(())
                } else {
                    Err(format!("{:?}, synced {}", telemetry.role(), telemetry.synced()))
                }
            })
            .await;
        CauseController::Sim { running: Some(running), telemetry }
    }

    async fn debug_events(&self) -> Vec<String> {
        let api = Api::<DynamicObject>::namespaced_with(self.kube().clone(), NAMESPACE, &events());
        let listed = api.list(&ListParams::default()).await.expect("list Events");
        listed
            .items
            .into_iter()
            .map(|e| format!("{} {}", e.metadata.name.unwrap_or_default(), e.data["reason"]))
            .collect()
    }

    /// The Events the cause controller created regarding `object`.
    pub(crate) async fn told(&self, object: &ObjectRef) -> Vec<Value> {
        let api = Api::<DynamicObject>::namespaced_with(self.kube().clone(), NAMESPACE, &events());
        let listed = api.list(&ListParams::default()).await.expect("list Events");
        listed
            .items
            .into_iter()
            .map(|e| serde_json::to_value(e).expect("JSON"))
            .filter(|e| e["regarding"]["uid"] == object.uid.as_str())
            .filter(|e| e["reportingController"] == keys::EVENTS_CONTROLLER_NAME)
            .collect()
    }

    /// Waits until the end or eviction of `object` is told, then checks it is told
    /// once, with `reason` and `action` (`Ended`, `Evicted`).
    pub(crate) async fn told_once(&self, object: &ObjectRef, reason: &str, action: &str) -> Value {
        let what = format!("the Event of {} ({reason})", object.name);
        let events = self
            .target
            .until(&what, async || {
                let told = self.told(object).await;
                if told.is_empty() {
                    Err(format!("none; {:?}", self.debug_events().await))
                } else {
                    Ok(told)
                }
            })
            .await;
        let [event] = events.as_slice() else { panic!("told more than once: {events:#?}") };
        assert_eq!(
            (event["reason"].as_str(), event["action"].as_str()),
            (Some(reason), Some(action)),
            "{event:#}"
        );
        let warning = if reason == "Completed" { "Normal" } else { "Warning" };
        assert_eq!(event["type"].as_str(), Some(warning), "{event:#}");
        event.clone()
    }
}

impl CauseController {
    /// Kills the controller and starts it again (on the sim, a new replica in-process,
    /// as a Deployment's new pod).
    pub(crate) async fn restart(&mut self, w: &BackendOnTarget) {
        match self {
            CauseController::Sim { running, .. } => {
                running.take().expect("it runs").abort().await;
                *self = w.start_sim_events().await;
            }
            CauseController::Real => w.target.restart(Component::Events).await,
        }
    }

    /// What it serves on `/metrics` now: on the sim, its telemetry's text; on the real
    /// control plane, a GET of the address its process last logged (a restart logs a
    /// new one). `None` on a cluster `cargo xtask cluster up` did not start, whose
    /// controller's address the suite cannot know.
    pub(crate) async fn metrics(&self, target: &Target) -> Option<String> {
        use dispatch_kf_replica::Telemetry as _;
        match (self, target) {
            (CauseController::Sim { telemetry, .. }, _) => Some(telemetry.metrics_text()),
            (CauseController::Real, Target::Real(kubeconfig)) => {
                let (status, text) =
                    dispatch_kf_testkit::http_get(served_at(kubeconfig)?, "/metrics").await;
                assert_eq!(status, 200, "{text}");
                Some(text)
            }
            (CauseController::Real, Target::Sim(..)) => unreachable!("a real controller"),
        }
    }

    /// The executions ended it has counted in the suite's namespace, over every other
    /// label of `dispatch_trainjob_executions_ended_total`; `None` as for [`Self::metrics`].
    pub(crate) async fn ended_here(&self, target: &Target) -> Option<f64> {
        let namespace = format!("namespace=\"{NAMESPACE}\"");
        let text = self.metrics(target).await?;
        let name = "dispatch_trainjob_executions_ended_total";
        Some(dispatch_kf_testkit::series_sum(&text, name, &namespace))
    }

    /// Waits until it has counted `count` ends in the suite's namespace (the counter
    /// moves right after the Event is created), then checks it stays there a moment.
    /// Where its metrics cannot be read, says so and checks nothing.
    pub(crate) async fn until_counted(&self, target: &Target, count: Option<f64>) {
        let (Some(count), Some(_)) = (count, self.ended_here(target).await) else {
            println!(
                "the cause controller's /metrics is not known here: its counter is not checked"
            );
            return;
        };
        target
            .until(&format!("{count} ends counted"), async || {
                let counted = self.ended_here(target).await;
                if counted == Some(count) { Ok(()) } else { Err(format!("{counted:?} counted")) }
            })
            .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(self.ended_here(target).await, Some(count), "counted again");
    }
}

/// Where the real control plane's cause controller serves its probes and metrics: the
/// address the last start in its log named (`<run folder>/logs/dispatch-kf-events.log`,
/// beside the admin kubeconfig `cargo xtask cluster up` writes).
pub(crate) fn served_at(kubeconfig: &std::path::Path) -> Option<std::net::SocketAddr> {
    let log = kubeconfig.parent()?.join("logs").join("dispatch-kf-events.log");
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().rev().find(|l| l.contains("serving /healthz, /readyz and /metrics"))?;
    // `address=127.0.0.1:PORT` as the text logs print it (with the terminal's colour
    // codes, `ESC [ ... m`, taken out first), or `"address":"127.0.0.1:PORT"` in JSON.
    let mut plain = String::new();
    let mut in_code = false;
    for c in line.chars() {
        match (in_code, c) {
            (false, '\u{1b}') => in_code = true,
            (true, 'm') => in_code = false,
            (false, c) => plain.push(c),
            (true, _) => {}
        }
    }
    let (_, rest) = plain.rsplit_once("address")?;
    let rest = rest.trim_start_matches(['=', '"', ':']);
    let end =
        rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':')).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[test]
fn the_controllers_address_is_read_from_its_text_or_json_log() {
    let dir = std::env::temp_dir().join(format!("dispatch-e2e-served-at-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let log = dir.join("logs").join("dispatch-kf-events.log");
    let text = "\u{1b}[2m2026-12-06T04:08:52Z\u{1b}[0m INFO serving /healthz, /readyz and /metrics \u{1b}[3maddress\u{1b}[0m\u{1b}[2m=\u{1b}[0m127.0.0.1:45415\n";
    let json = r#"{"fields":{"message":"serving /healthz, /readyz and /metrics","address":"127.0.0.1:41000"}}"#;
    std::fs::write(&log, format!("{text}{json}\n")).unwrap();
    let kubeconfig = dir.join("admin.kubeconfig");
    assert_eq!(served_at(&kubeconfig), Some("127.0.0.1:41000".parse().unwrap()), "the last start");
    std::fs::write(&log, text).unwrap();
    assert_eq!(served_at(&kubeconfig), Some("127.0.0.1:45415".parse().unwrap()));
    std::fs::remove_dir_all(dir).unwrap();
}
