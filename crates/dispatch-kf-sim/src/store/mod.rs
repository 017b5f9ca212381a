//! The object store: every object by resource, namespace and name; one resourceVersion
//! counter for the whole cluster (as etcd's revision); a window of recent events for
//! watches, and a broadcast of new ones; secondary indexes (`index.rs`) and the journal
//! of changes the controllers have not looked at yet.

mod index;
mod queues;
mod state;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

pub(crate) use self::index::Indexes;
pub(crate) use self::queues::WorkQueues;
pub use self::state::RequestRecord;
pub(crate) use self::state::{Chunk, State, fmt_time};
use crate::plain::resources::ResId;
use crate::plain::selector::Selector;

/// Where an object lives. Keys are ordered as the apiserver's storage orders them: by
/// resource, then by `<namespace>/<name>` byte by byte (a cluster-scoped object's is
/// `/<name>`), so a list comes in the order a real apiserver gives it: namespace
/// `team-a`'s objects before `team`'s, as `-` comes before `/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) res: ResId,
    pub(crate) ns: String,
    pub(crate) name: String,
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.res.cmp(&other.res).then_with(|| self.path().cmp(other.path()))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Key {
    pub(crate) fn new(res: ResId, ns: &str, name: &str) -> Self {
        Self { res, ns: ns.to_string(), name: name.to_string() }
    }

    /// `<namespace>/<name>`, as bytes: what the storage orders keys by.
    fn path(&self) -> impl Iterator<Item = u8> + '_ {
        self.ns.as_bytes().iter().chain(b"/").chain(self.name.as_bytes()).copied()
    }
}

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, as watches see it.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) key: Key,
    pub(crate) typ: EventType,
    pub(crate) rv: u64,
    pub(crate) object: Arc<Value>,
    /// The object before the change (for selector transitions).
    pub(crate) old: Option<Arc<Value>>,
}

/// How many changes the journal holds for the controllers before it gives up on
/// naming them (then the controllers look at everything: [`Changes::overflowed`]).
const JOURNAL_LIMIT: usize = 100_000;

/// The changes since the controllers last looked.
#[derive(Default)]
pub(crate) struct Changes {
    pub(crate) events: Vec<Arc<Event>>,
    /// More changes happened than the journal keeps: some are not in `events`.
    pub(crate) overflowed: bool,
}

/// How many events the store keeps for watches by default.
pub(crate) const DEFAULT_WINDOW: usize = 10_000;

pub(crate) struct Store {
    /// Shared with the events that carry them, so a write copies no object.
    objects: BTreeMap<Key, Arc<Value>>,
    rv: u64,
    events: VecDeque<Arc<Event>>,
    window: usize,
    /// Watches from a resourceVersion below this are expired.
    oldest: u64,
    tx: broadcast::Sender<Arc<Event>>,
    index: Indexes,
    journal: Changes,
}

impl Store {
    pub(crate) fn new() -> Self {
        let (tx, _) = broadcast::channel(65_536);
        Self {
            objects: BTreeMap::new(),
            rv: 1,
            events: VecDeque::new(),
            window: DEFAULT_WINDOW,
            oldest: 1,
            tx,
            index: Indexes::new(),
            journal: Changes::default(),
        }
    }

    pub(crate) fn rv(&self) -> u64 {
        self.rv
    }

    pub(crate) fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key).map(|v| &**v)
    }

    /// Objects of one resource, in one namespace (or all when `ns` is empty), by name.
    pub(crate) fn list(&self, res: ResId, ns: &str) -> Vec<(&Key, &Value)> {
        self.range(res, ns).collect()
    }

    /// [`Store::list`] as an iterator: the keys are ordered by resource, then by
    /// `<namespace>/<name>`, so one resource (or one namespace of it) is one range of
    /// the map.
    pub(crate) fn range(
        &self,
        res: ResId,
        ns: &str,
    ) -> impl Iterator<Item = (&Key, &Value)> + use<'_> {
        let ns = ns.to_string();
        let from = Key { res, ns: ns.clone(), name: String::new() };
        self.objects
            .range((Bound::Included(from), Bound::Unbounded))
            .take_while(move |(k, _)| k.res == res && (ns.is_empty() || k.ns == ns))
            .map(|(k, v)| (k, &**v))
    }

    /// The objects of [`Store::list`] whose labels match `selector`, by name. When the
    /// selector has equality or `in` terms, the label index gives the candidates.
    pub(crate) fn select<'a>(
        &'a self,
        res: ResId,
        ns: &'a str,
        selector: &Selector,
    ) -> Vec<(&'a Key, &'a Value)> {
        let mut candidates: Option<BTreeSet<&Key>> = None;
        for (key, values) in selector.index_terms() {
            let found: BTreeSet<&Key> = values
                .iter()
                .filter_map(|v| self.index.labelled(res, key, v))
                .flatten()
                .filter(|k| ns.is_empty() || k.ns == ns)
                .collect();
            candidates = Some(match candidates {
                None => found,
                Some(c) => c.intersection(&found).copied().collect(),
            });
        }
        match candidates {
            None => self.range(res, ns).filter(|(_, v)| selector.matches(v)).collect(),
            Some(keys) => keys
                .into_iter()
                .filter_map(|k| self.objects.get_key_value(k))
                .map(|(k, v)| (k, &**v))
                .filter(|(_, v)| selector.matches(v))
                .collect(),
        }
    }

    /// The secondary indexes.
    pub(crate) fn index(&self) -> &Indexes {
        &self.index
    }

    /// Takes the changes made since the last call.
    pub(crate) fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.journal)
    }

    /// Stores an object under a new resourceVersion and emits its event; returns the
    /// stored object.
    pub(crate) fn put(&mut self, key: Key, mut obj: Value) -> Arc<Value> {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let obj = Arc::new(obj);
        let old = self.objects.insert(key.clone(), obj.clone());
        match &old {
            Some(old) => self.index.replace(&key, old, &obj),
            None => self.index.insert(&key, &obj),
        }
        let typ = if old.is_some() { EventType::Modified } else { EventType::Added };
        self.emit(Event { key, typ, rv: self.rv, object: obj.clone(), old });
        obj
    }

    /// Removes an object for good and emits DELETED.
    pub(crate) fn remove(&mut self, key: &Key) -> Option<Value> {
        let old = self.objects.remove(key)?;
        self.index.remove(key, &old);
        self.rv += 1;
        let mut obj = (*old).clone();
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let object = Arc::new(obj.clone());
        self.emit(Event {
            key: key.clone(),
            typ: EventType::Deleted,
            rv: self.rv,
            object,
            old: Some(old),
        });
        Some(obj)
    }

    fn emit(&mut self, ev: Event) {
        let ev = Arc::new(ev);
        if self.journal.events.len() < JOURNAL_LIMIT {
            self.journal.events.push(ev.clone());
        } else {
            self.journal.overflowed = true;
        }
        self.events.push_back(ev.clone());
        while self.events.len() > self.window {
            if let Some(e) = self.events.pop_front() {
                self.oldest = e.rv;
            }
        }
        // No receiver is fine: nobody watches.
        let _ = self.tx.send(ev);
    }

    /// Kept events after `rv`, or `Err(oldest)` when `rv` is older than the window.
    pub(crate) fn since(&self, rv: u64) -> Result<Vec<Arc<Event>>, u64> {
        if rv < self.oldest {
            return Err(self.oldest);
        }
        Ok(self.events.iter().filter(|e| e.rv > rv).cloned().collect())
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Forgets every kept event: a watch from any earlier resourceVersion is expired.
    pub(crate) fn compact(&mut self) {
        self.events.clear();
        self.oldest = self.rv;
    }

    pub(crate) fn set_window(&mut self, window: usize) {
        self.window = window.max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plain::resources::id;

    fn pod(ns: &str, name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": ns, "uid": format!("{ns}-{name}"), "labels": labels}})
    }

    #[test]
    fn a_selection_through_the_label_index_is_the_scan_it_replaces() {
        let mut store = Store::new();
        let pods = id("pods");
        for (i, ns) in ["a", "b"].iter().enumerate() {
            for n in 0..20 {
                let labels = json!({"app": format!("app-{}", n % 3), "tier": if n % 2 == 0 { "web" } else { "db" }, "ix": (n + i).to_string()});
                let name = format!("p-{n:02}");
                store.put(Key::new(pods, ns, &name), pod(ns, &name, labels));
            }
        }
        // Relabel one, delete another: the index follows.
        store.put(Key::new(pods, "a", "p-00"), pod("a", "p-00", json!({"app": "app-2"})));
        store.remove(&Key::new(pods, "b", "p-03"));
        for s in [
            "",
            "app=app-1",
            "app==app-2,tier=web",
            "app in (app-0,app-2),tier!=db",
            "app in (app-1),ix",
            "tier notin (web),!ix",
            "app=nothing",
        ] {
            let selector = Selector::parse(s).unwrap();
            for ns in ["", "a", "b"] {
                let scan: Vec<&Key> = store
                    .range(pods, ns)
                    .filter(|(_, v)| selector.matches(v))
                    .map(|(k, _)| k)
                    .collect();
                let selected: Vec<&Key> =
                    store.select(pods, ns, &selector).into_iter().map(|(k, _)| k).collect();
                assert_eq!(selected, scan, "selector {s:?} in namespace {ns:?}");
            }
        }
    }

    #[test]
    fn dependents_and_dangling_owners_follow_writes_and_deletes() {
        let mut store = Store::new();
        let (jobs, pods) = (id("jobs"), id("pods"));
        let owner = json!({"metadata": {"name": "j", "namespace": "a", "uid": "u-j"}});
        let child = |name: &str| {
            json!({"metadata": {"name": name, "namespace": "a", "uid": format!("u-{name}"),
            "ownerReferences": [{"uid": "u-j", "controller": true}]}})
        };
        store.put(Key::new(jobs, "a", "j"), owner);
        store.put(Key::new(pods, "a", "p1"), child("p1"));
        store.put(Key::new(pods, "a", "p2"), child("p2"));
        let deps: Vec<String> = store.index().dependents("u-j").map(|k| k.name.clone()).collect();
        assert_eq!(deps, ["p1", "p2"]);
        assert!(store.index().dangling_dependents().is_empty());
        store.remove(&Key::new(jobs, "a", "j"));
        assert!(!store.index().live("u-j"));
        let orphans: Vec<String> =
            store.index().dangling_dependents().into_iter().map(|k| k.name).collect();
        assert_eq!(orphans, ["p1", "p2"]);
        store.remove(&Key::new(pods, "a", "p1"));
        store.remove(&Key::new(pods, "a", "p2"));
        assert!(store.index().dangling_dependents().is_empty());
        assert_eq!(store.index().dependents("u-j").count(), 0);
    }
}
