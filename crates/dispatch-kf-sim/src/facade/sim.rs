//! The public handle on a running simulated cluster: setup, direct reads, faults, the
//! request log, and the virtual clock.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::controllers;
use crate::http::server::{self, Shared};
use crate::http::tls::Tls;
use crate::plain::auth::{self, Identity};
use crate::plain::faults::{Fault, Slot};
use crate::plain::resources::{self, RESOURCES};
use crate::plain::schema::Releases;
use crate::registry::{self, DeleteOptions, Propagation};
use crate::store::{DEFAULT_WINDOW, Key};
use crate::store::{RequestRecord, State};

/// Failures of the sim's own API (not of simulated requests).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The server could not bind its port.
    #[error("the simulated cluster could not listen on 127.0.0.1: {0}")]
    Bind(#[source] io::Error),
    /// No identity of that name.
    #[error("no identity named {0:?}: add it with Sim::add_identity or SimOptions::identities")]
    UnknownUser(String),
    /// The certificates for HTTPS could not be made.
    #[error(transparent)]
    Tls(#[from] crate::http::tls::TlsError),
    /// An object whose apiVersion and kind the sim does not serve.
    #[error("the simulated cluster does not serve {0}: see dispatch_kf_sim::RESOURCES")]
    UnknownKind(String),
    /// A direct write the apiserver would refuse.
    #[error("the simulated apiserver refused the object: {}", .0.message)]
    Refused(crate::plain::apierror::ApiError),
}

/// How a simulated cluster starts.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// The virtual clock's starting time.
    pub start: Timestamp,
    /// Seed for generated name suffixes.
    pub seed: u64,
    /// Group-versions left out ("not served"), e.g. `kueue.x-k8s.io/v1beta2`.
    pub unserved: Vec<String>,
    /// How long the garbage collector leaves orphans before deleting them (virtual time).
    pub gc_lag: Duration,
    /// Settle the controllers after every request that changed something.
    pub auto_settle: bool,
    /// How many events are kept for watches; older resourceVersions are expired.
    pub event_window: usize,
    /// Users besides `admin` (who may do anything).
    pub identities: Vec<Identity>,
    /// The identity a request without credentials acts as (`None`: 401, the default).
    /// kubectl sends no bearer token over plain http, so `Some("admin")` is how a
    /// `sim serve` lets kubectl in.
    pub anonymous: Option<String>,
    /// Serve HTTPS with a CA made at start, which the kubeconfigs carry (the default);
    /// `false` serves plain HTTP, for a test that reads the bytes on the wire.
    pub tls: bool,
    /// What the controllers' releases can do, where the releases users run differ.
    pub releases: Releases,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            start: Timestamp::from_second(1_767_225_600).unwrap_or(Timestamp::UNIX_EPOCH),
            seed: 0x5eed,
            unserved: Vec::new(),
            gc_lag: Duration::ZERO,
            auto_settle: true,
            event_window: DEFAULT_WINDOW,
            identities: Vec::new(),
            anonymous: None,
            tls: true,
            releases: Releases::default(),
        }
    }
}

/// A running simulated cluster. Dropping it stops the server.
pub struct Sim {
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
    /// The CA's certificate (PEM), when serving HTTPS.
    ca_pem: Option<String>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.accept.abort();
        self.shared.close_watches.send_modify(|g| *g += 1);
        let shared = self.shared.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { shared.drop_connections().await });
        }
    }
}

impl Sim {
    /// Runs `f` on the state under the lock, then settles when auto-settle is on.
    pub(crate) fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut st = self.shared.lock();
        let out = f(&mut st);
        if st.auto_settle {
            controllers::settle(&mut st);
        }
        out
    }

    /// Starts a cluster with namespaces `default` and `kube-system` and the `admin` user.
    pub async fn start(opts: SimOptions) -> Result<Self, SimError> {
        let mut state = State::new(opts.start, opts.seed);
        state.unserved = opts.unserved.iter().cloned().collect();
        state.gc_lag = opts.gc_lag;
        state.auto_settle = opts.auto_settle;
        state.anonymous = opts.anonymous;
        state.releases = opts.releases;
        state.store.set_window(opts.event_window);
        state.identities.push(Identity::admin("admin"));
        state.identities.extend(opts.identities);
        for ns in ["default", "kube-system"] {
            state.insert(
                resources::id("namespaces"),
                json!({"metadata": {"name": ns}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
                "sim",
            );
        }
        let tls = if opts.tls { Some(Tls::new()?) } else { None };
        let ca_pem = tls.as_ref().map(|t| t.ca_pem.clone());
        let acceptor = tls.map(|t| t.acceptor);
        let (shared, accept) = server::start(state, acceptor).await.map_err(SimError::Bind)?;
        Ok(Self { shared, accept, ca_pem })
    }

    /// The server URL: `https://127.0.0.1:<port>`, or `http://` without TLS.
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.shared.addr)
    }

    /// The CA that signed the server's certificate (PEM), when serving HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// A kubeconfig for `user`: the server, with the CA to verify it by when serving
    /// HTTPS; the user's bearer token; namespace `default`.
    pub fn kubeconfig_yaml(&self, user: &str) -> Result<String, SimError> {
        let st = self.shared.lock();
        let id = st
            .identities
            .iter()
            .find(|i| i.user == user)
            .ok_or_else(|| SimError::UnknownUser(user.to_string()))?;
        Ok(auth::kubeconfig_yaml(&self.url(), self.ca_pem(), id))
    }

    /// Adds (or replaces) an identity.
    pub fn add_identity(&self, id: Identity) {
        let mut st = self.shared.lock();
        st.identities.retain(|i| i.user != id.user);
        st.identities.push(id);
    }

    /// Creates or replaces an object directly, as setup (no admission, no fault, no log);
    /// the sim fills uid, creationTimestamp and resourceVersion. Returns the stored object.
    pub fn apply(&self, obj: Value) -> Result<Value, SimError> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let res = resources::by_kind(api_version, kind)
            .ok_or_else(|| SimError::UnknownKind(format!("{api_version} {kind}")))?;
        let mut st = self.shared.lock();
        let out = st.insert(res, obj, "sim");
        if st.auto_settle {
            controllers::settle(&mut st);
        }
        Ok((*out).clone())
    }

    /// One object, by plural resource, namespace (empty for cluster scope) and name.
    pub fn get(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
        let res = RESOURCES.iter().position(|r| r.plural == plural)?;
        self.shared.lock().store.get(&Key::new(res, ns, name)).cloned()
    }

    /// Every object of a resource in a namespace (empty: all namespaces), by name.
    pub fn list(&self, plural: &str, ns: &str) -> Vec<Value> {
        let Some(res) = RESOURCES.iter().position(|r| r.plural == plural) else {
            return Vec::new();
        };
        self.shared.lock().store.list(res, ns).into_iter().map(|(_, v)| v.clone()).collect()
    }

    /// [`Sim::list`] of the resource `plural` of the group `group` (empty for core),
    /// where two groups serve a plural of the same name (`events`, core's and
    /// events.k8s.io's, which the sim keeps apart).
    pub fn list_in(&self, group: &str, plural: &str, ns: &str) -> Vec<Value> {
        let Some(res) = RESOURCES.iter().position(|r| r.group == group && r.plural == plural)
        else {
            return Vec::new();
        };
        self.shared.lock().store.list(res, ns).into_iter().map(|(_, v)| v.clone()).collect()
    }

    /// Deletes an object as a controller would (no RBAC, no fault, no log).
    pub fn delete(&self, plural: &str, ns: &str, name: &str, propagation: Propagation) -> bool {
        let Some(res) = RESOURCES.iter().position(|r| r.plural == plural) else { return false };
        let mut st = self.shared.lock();
        let opts = DeleteOptions { propagation: Some(propagation), ..Default::default() };
        let ok = registry::delete(&mut st, &Key::new(res, ns, name), &opts).is_ok();
        if st.auto_settle {
            controllers::settle(&mut st);
        }
        ok
    }

    /// Adds a fault rule (checked in the order added).
    pub fn add_fault(&self, rule: Fault) {
        self.shared.lock().faults.push(Slot { rule, seen: 0, fired: 0 });
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        self.shared.lock().faults.clear();
    }

    /// Every request that reached the server, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.lock().log.clone()
    }

    /// Forgets the request log.
    pub fn clear_requests(&self) {
        self.shared.lock().log.clear();
    }

    /// Refuses (or accepts again) connections: the listener closes and every open
    /// connection, idle keep-alive ones included, is dropped, so the next request must
    /// dial and gets ECONNREFUSED. Returns once the listener is in the asked state.
    pub async fn set_refusing(&self, refusing: bool) {
        let mut listening = self.shared.listening.subscribe();
        self.shared.refuse.send_replace(refusing);
        if refusing {
            self.close_watches();
            self.shared.drop_connections().await;
        }
        let _ = listening.wait_for(|l| *l != refusing).await;
        // Let the client's connection tasks see the closed sockets before the next request.
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    /// Ends every open watch stream (as an apiserver restart or timeout would).
    pub fn close_watches(&self) {
        self.shared.close_watches.send_modify(|g| *g += 1);
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch that asked for them.
    pub fn send_bookmarks(&self) {
        let rv = self.shared.lock().store.rv();
        self.shared.bookmarks.send_replace(rv);
    }

    /// Forgets every kept event: a watch from any earlier resourceVersion gets 410.
    pub fn compact(&self) {
        self.shared.lock().store.compact();
    }

    /// The current resourceVersion of the store.
    pub fn resource_version(&self) -> u64 {
        self.shared.lock().store.rv()
    }

    /// Runs every controller until nothing changes.
    pub fn settle(&self) {
        let mut st = self.shared.lock();
        st.wakes.everything();
        controllers::settle(&mut st);
    }

    /// Moves the virtual clock forward, then settles: the controllers look again at what
    /// they asked to see at a time now reached (a deadline, a toleration, a backoff).
    pub fn advance(&self, by: Duration) {
        advance(&mut self.shared.lock(), by);
    }

    /// How many objects the controllers have reconciled one at a time since the sim
    /// started, as controller-runtime's `controller_runtime_reconcile_total` counts them
    /// (the scheduler's and the garbage collector's work lists are not counted).
    pub fn reconciles(&self) -> u64 {
        self.shared.lock().wakes.reconciled
    }

    /// The virtual time.
    pub fn now(&self) -> Timestamp {
        self.shared.lock().now
    }

    /// The virtual clock as a function that outlives this handle's borrow, for a
    /// component under test that reads the time itself (the gate controller).
    pub fn clock(&self) -> impl Fn() -> Timestamp + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || shared.lock().now
    }

    /// Turns settling after each mutating request on or off.
    pub fn set_auto_settle(&self, on: bool) {
        self.shared.lock().auto_settle = on;
    }

    /// When on, pods ignore SIGTERM: a Terminating pod on a healthy node stays until its
    /// grace period (`deletionGracePeriodSeconds`) has passed on the virtual clock.
    pub fn set_slow_termination(&self, on: bool) {
        let mut st = self.shared.lock();
        st.slow_termination = on;
        st.wakes.everything();
    }

    /// Installs a mutating admission webhook: every object of `plural` created from now
    /// on passes through `mutate` after admission, as a real cluster's webhooks (a
    /// policy engine adding a label, say) change what a client wrote.
    pub fn add_mutating_webhook(
        &self,
        plural: &str,
        mutate: impl Fn(&mut Value) + Send + Sync + 'static,
    ) {
        self.shared.lock().webhooks.push((plural.to_string(), std::sync::Arc::new(mutate)));
    }

    /// Kueue's `manageJobsWithoutQueueName`: when on, every TrainJob gets a Workload,
    /// labelled with a queue or not (one without a queue stays inadmissible).
    pub fn set_kueue_manages_jobs_without_queue_name(&self, on: bool) {
        let mut st = self.shared.lock();
        st.manage_jobs_without_queue_name = on;
        st.wakes.everything();
    }

    /// Takes kube-controller-manager down or brings it back: while it is down its
    /// controllers (the Job controller, node lifecycle and pod GC, the garbage
    /// collector) do nothing, so a deleted pod keeps the Job controller's tracking
    /// finalizer; back, they look at everything again, as a restarted controller
    /// manager lists everything.
    pub fn set_controller_manager_down(&self, down: bool) {
        let mut st = self.shared.lock();
        st.controller_manager_down = down;
        st.wakes.everything();
    }

    /// Sets the garbage collector's lag.
    pub fn set_gc_lag(&self, lag: Duration) {
        let mut st = self.shared.lock();
        st.gc_lag = lag;
        st.wakes.everything();
    }

    /// Sets the text `pods/<name>/log` returns.
    pub fn set_log(&self, ns: &str, pod: &str, text: &str) {
        self.shared.lock().pod_logs.insert((ns.to_string(), pod.to_string()), text.to_string());
    }

    /// Appends to a pod's log; `follow` streams receive the chunk.
    pub fn append_log(&self, ns: &str, pod: &str, text: &str) {
        crate::http::logs::append(&mut self.shared.lock(), ns, pod, text);
    }

    /// Runs the virtual clock with the wall clock, a second at a time, until the task
    /// is aborted or the sim dropped: each second moves the clock and settles, as
    /// [`Sim::advance`] does, and every running pod of a TrainJob writes a line to its
    /// log, so `logs -f` has something to follow. What `dispatch-kf sim serve` runs.
    pub fn follow_wall_clock(&self) -> tokio::task::JoinHandle<()> {
        let shared = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            let mut second = tokio::time::interval(Duration::from_secs(1));
            for step in 1u64.. {
                second.tick().await;
                let Some(shared) = shared.upgrade() else { return };
                let mut st = shared.lock();
                advance(&mut st, Duration::from_secs(1));
                crate::http::logs::write_training_step(&mut st, step);
            }
        })
    }
}

/// Moves the virtual clock forward, then settles.
fn advance(st: &mut State, by: Duration) {
    let by = SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX);
    st.now = st.now.checked_add(by).unwrap_or(st.now);
    controllers::settle(st);
}
