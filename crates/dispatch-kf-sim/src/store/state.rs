//! The simulated cluster's state behind one lock: the store, the virtual clock,
//! identities, fault rules, the request log, and controller bookkeeping.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;

use super::{Key, Store, WorkQueues};
use crate::plain::auth::Identity;
use crate::plain::faults::Slot;
use crate::plain::schema::Releases;

/// One request as the server saw it, for tests to read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// Authenticated user, if any.
    pub user: Option<String>,
    /// Kubernetes verb (get, list, watch, create, update, patch, delete,
    /// deletecollection), or `discovery`.
    pub verb: String,
    /// `plural` or `plural/subresource`, empty for discovery.
    pub resource: String,
    /// Object name, if any.
    pub name: String,
    /// HTTP status answered; `None` when the connection was reset instead.
    pub status: Option<u16>,
    /// Whether the request changed the store.
    pub effect: bool,
    /// The fault that fired, if any (its `Debug` form).
    pub fault: Option<String>,
}

/// One appended chunk of a pod's log.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    pub(crate) ns: String,
    pub(crate) pod: String,
    pub(crate) text: String,
}

/// Characters the apiserver uses for generated name suffixes.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A mutating admission webhook: what it changes in an object of its resource at create.
pub(crate) type Webhook = (String, std::sync::Arc<dyn Fn(&mut serde_json::Value) + Send + Sync>);

pub(crate) struct State {
    pub(crate) store: Store,
    pub(crate) webhooks: Vec<Webhook>,
    pub(crate) now: Timestamp,
    pub(crate) identities: Vec<Identity>,
    pub(crate) faults: Vec<Slot>,
    pub(crate) log: Vec<RequestRecord>,
    /// The `Warning` headers of the request being handled.
    pub(crate) warnings: Vec<String>,
    pub(crate) unserved: BTreeSet<String>,
    pub(crate) pod_logs: BTreeMap<(String, String), String>,
    pub(crate) counter: u64,
    pub(crate) rng: u64,
    pub(crate) gc_lag: Duration,
    pub(crate) gc_seen: BTreeMap<Key, Timestamp>,
    pub(crate) auto_settle: bool,
    pub(crate) anonymous: Option<String>,
    pub(crate) slow_termination: bool,
    /// kube-controller-manager is down: its controllers (the Job controller, node
    /// lifecycle and pod GC, the garbage collector) do nothing until it is back.
    pub(crate) controller_manager_down: bool,
    pub(crate) manage_jobs_without_queue_name: bool,
    pub(crate) releases: Releases,
    pub(crate) log_tx: tokio::sync::broadcast::Sender<Chunk>,
    /// The objects each controller must look at again.
    pub(crate) wakes: WorkQueues,
}

impl State {
    pub(crate) fn new(start: Timestamp, seed: u64) -> Self {
        Self {
            store: Store::new(),
            webhooks: Vec::new(),
            now: start,
            identities: Vec::new(),
            faults: Vec::new(),
            log: Vec::new(),
            warnings: Vec::new(),
            unserved: BTreeSet::new(),
            pod_logs: BTreeMap::new(),
            counter: 0,
            rng: seed | 1,
            gc_lag: Duration::ZERO,
            gc_seen: BTreeMap::new(),
            auto_settle: true,
            anonymous: None,
            slow_termination: false,
            controller_manager_down: false,
            manage_jobs_without_queue_name: false,
            releases: Default::default(),
            log_tx: tokio::sync::broadcast::channel(1024).0,
            wakes: Default::default(),
        }
    }

    /// The virtual time as the apiserver writes it (RFC 3339, seconds).
    pub(crate) fn now_str(&self) -> String {
        fmt_time(self.now)
    }

    /// A fresh, deterministic UID.
    pub(crate) fn next_uid(&mut self) -> String {
        self.counter += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.counter)
    }

    /// A deterministic random suffix of `n` characters from the apiserver's alphabet.
    pub(crate) fn suffix(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| {
                // xorshift64
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                SUFFIX_ALPHABET[(self.rng % SUFFIX_ALPHABET.len() as u64) as usize] as char
            })
            .collect()
    }
}

/// Formats a timestamp as Kubernetes does (`2026-01-01T00:00:00Z`).
pub(crate) fn fmt_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
