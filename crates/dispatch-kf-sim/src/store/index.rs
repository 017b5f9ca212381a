//! The store's secondary indexes, kept in step with every write and delete, so that a
//! read or a controller finds the objects it concerns without scanning the store.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::Key;
use crate::plain::object::keys::gpus;
use crate::plain::object::meta::{deleting, labels, owner_uids, str_at, uid};
use crate::plain::resources::{self, ResId};

/// Secondary indexes over the store's objects.
pub(crate) struct Indexes {
    pods: ResId,
    /// Objects by (resource, label key, label value): a label selector's equality and
    /// `in` terms take their candidates here instead of scanning the resource.
    labels: HashMap<(ResId, String, String), BTreeSet<Key>>,
    /// Dependents by owner UID (every owner reference, controller or not): controllers
    /// find their children here, the garbage collector an owner's dependents.
    dependents: HashMap<String, BTreeSet<Key>>,
    /// Objects by UID (`""` for an object without one): whether an owner reference
    /// still names a live object, and which object a change to a child concerns.
    uids: HashMap<String, BTreeSet<Key>>,
    /// Owner UIDs that some object references and no object has: their dependents are
    /// the garbage collector's orphan candidates.
    dangling: BTreeSet<String>,
    /// Objects whose deletion has started (a `deletionTimestamp`): the garbage
    /// collector's work list.
    deleting: BTreeSet<Key>,
    /// Pods in phase Pending, bound to no node and not being deleted: the scheduler's
    /// work list.
    unscheduled: BTreeSet<Key>,
    /// GPUs requested by the bound pods that have not finished, per node: what the
    /// scheduler counts as used.
    gpus_used: HashMap<String, i64>,
}

impl Indexes {
    pub(crate) fn new() -> Self {
        Self {
            pods: resources::id("pods"),
            labels: HashMap::new(),
            dependents: HashMap::new(),
            uids: HashMap::new(),
            dangling: BTreeSet::new(),
            deleting: BTreeSet::new(),
            unscheduled: BTreeSet::new(),
            gpus_used: HashMap::new(),
        }
    }

    /// Indexes a stored object.
    pub(crate) fn insert(&mut self, key: &Key, obj: &Value) {
        self.insert_identity(key, obj);
        self.insert_state(key, obj);
    }

    /// Forgets an object as it was stored.
    pub(crate) fn remove(&mut self, key: &Key, obj: &Value) {
        self.remove_identity(key, obj);
        self.remove_state(key, obj);
    }

    /// Re-indexes an object that `new` replaces; labels, UID and owners are re-indexed
    /// only when they changed (a status write changes none of them).
    pub(crate) fn replace(&mut self, key: &Key, old: &Value, new: &Value) {
        fn identity(v: &Value) -> (Option<&Value>, Option<&Value>, Option<&Value>) {
            let m = &v["metadata"];
            (m.get("labels"), m.get("uid"), m.get("ownerReferences"))
        }
        if identity(old) != identity(new) {
            self.remove_identity(key, old);
            self.insert_identity(key, new);
        }
        self.remove_state(key, old);
        self.insert_state(key, new);
    }

    /// Labels, UID and owner references.
    fn insert_identity(&mut self, key: &Key, obj: &Value) {
        for (k, v) in labels(obj) {
            self.labels
                .entry((key.res, k.to_string(), v.to_string()))
                .or_default()
                .insert(key.clone());
        }
        let uid = uid(obj);
        self.uids.entry(uid.to_string()).or_default().insert(key.clone());
        self.dangling.remove(uid);
        for owner in owner_uids(obj) {
            self.dependents.entry(owner.to_string()).or_default().insert(key.clone());
            if !self.uids.contains_key(owner) {
                self.dangling.insert(owner.to_string());
            }
        }
    }

    fn remove_identity(&mut self, key: &Key, obj: &Value) {
        for (k, v) in labels(obj) {
            let entry = (key.res, k.to_string(), v.to_string());
            if let Some(set) = self.labels.get_mut(&entry) {
                set.remove(key);
                if set.is_empty() {
                    self.labels.remove(&entry);
                }
            }
        }
        let uid = uid(obj);
        if let Some(set) = self.uids.get_mut(uid) {
            set.remove(key);
            if set.is_empty() {
                self.uids.remove(uid);
                if self.dependents.contains_key(uid) {
                    self.dangling.insert(uid.to_string());
                }
            }
        }
        for owner in owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(owner) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(owner);
                    self.dangling.remove(owner);
                }
            }
        }
    }

    /// Deletion, and a pod's scheduling and GPUs.
    fn insert_state(&mut self, key: &Key, obj: &Value) {
        if deleting(obj) {
            self.deleting.insert(key.clone());
        }
        if key.res == self.pods {
            let node = str_at(obj, "/spec/nodeName");
            let phase = str_at(obj, "/status/phase");
            if node.is_empty() && !deleting(obj) && phase == "Pending" {
                self.unscheduled.insert(key.clone());
            }
            if !node.is_empty() && phase != "Succeeded" && phase != "Failed" {
                *self.gpus_used.entry(node.to_string()).or_default() += gpus(obj);
            }
        }
    }

    fn remove_state(&mut self, key: &Key, obj: &Value) {
        if deleting(obj) {
            self.deleting.remove(key);
        }
        if key.res == self.pods {
            self.unscheduled.remove(key);
            let node = str_at(obj, "/spec/nodeName");
            let phase = str_at(obj, "/status/phase");
            if !node.is_empty() && phase != "Succeeded" && phase != "Failed" {
                let gpus = gpus(obj);
                if let Some(used) = self.gpus_used.get_mut(node) {
                    *used -= gpus;
                    if *used == 0 {
                        self.gpus_used.remove(node);
                    }
                }
            }
        }
    }

    /// The objects of `res` labelled `key=value`.
    pub(crate) fn labelled(&self, res: ResId, key: &str, value: &str) -> Option<&BTreeSet<Key>> {
        self.labels.get(&(res, key.to_string(), value.to_string()))
    }

    /// The objects with an owner reference to `uid`, in key order.
    pub(crate) fn dependents(&self, uid: &str) -> impl Iterator<Item = &Key> {
        self.dependents.get(uid).into_iter().flatten()
    }

    /// The objects whose UID is `uid`.
    pub(crate) fn by_uid(&self, uid: &str) -> impl Iterator<Item = &Key> {
        self.uids.get(uid).into_iter().flatten()
    }

    /// Whether some object has the UID `uid`.
    pub(crate) fn live(&self, uid: &str) -> bool {
        self.uids.contains_key(uid)
    }

    /// Objects that some owner reference names with a UID no object has (candidates
    /// for orphans: the caller checks their other owners).
    pub(crate) fn dangling_dependents(&self) -> BTreeSet<Key> {
        self.dangling.iter().flat_map(|u| self.dependents(u)).cloned().collect()
    }

    /// Objects whose deletion has started, in key order.
    pub(crate) fn deleting(&self) -> &BTreeSet<Key> {
        &self.deleting
    }

    /// Pending pods bound to no node and not being deleted, in key order.
    pub(crate) fn unscheduled(&self) -> &BTreeSet<Key> {
        &self.unscheduled
    }

    /// GPUs held on `node` by bound pods that have not finished.
    pub(crate) fn gpus_used(&self, node: &str) -> i64 {
        self.gpus_used.get(node).copied().unwrap_or(0)
    }
}
