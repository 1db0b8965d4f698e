//! Object storage with a global resource version and a bounded change history for watches,
//! the way etcd backs a real API server (history older than the window is "compacted":
//! watches from there get 410 Gone).

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One write, as watches replay it.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    pub storage: &'static str,
    pub namespace: String,
    pub kind: ChangeKind,
    /// The object after the change (for a deletion: as it was, with the deletion's RV).
    /// Shared with the store: a write copies no object.
    pub object: Arc<Value>,
    /// The object before the change, for selector transitions.
    pub previous: Option<Arc<Value>>,
}

/// Key of an object inside one resource type: (namespace, name); cluster-scoped objects
/// have an empty namespace.
pub type Key = (String, String);

#[derive(Debug)]
pub struct Store {
    pub rv: u64,
    objects: HashMap<&'static str, BTreeMap<Key, Arc<Value>>>,
    history: VecDeque<Change>,
    history_limit: usize,
    /// Changes at or below this RV are no longer in the history.
    pub compacted_rv: u64,
    /// Authorization decisions by user and request, dropped whenever a role or binding
    /// changes (see `rbac::allows`): every request is authorized, and walking every
    /// binding and its rules each time was a good share of a simulated run.
    pub rbac_decisions: parking_lot::Mutex<HashMap<String, bool>>,
}

/// The resources authorization reads.
const RBAC_STORAGES: [&str; 4] = [
    "roles",
    "rolebindings",
    "clusterroles",
    "clusterrolebindings",
];

impl Store {
    pub fn new(history_limit: usize) -> Store {
        Store {
            rv: 1,
            objects: HashMap::new(),
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            compacted_rv: 1,
            rbac_decisions: parking_lot::Mutex::default(),
        }
    }

    pub fn get(&self, storage: &str, key: &Key) -> Option<&Value> {
        self.objects
            .get(storage)
            .and_then(|m| m.get(key))
            .map(|v| &**v)
    }

    /// The stored object itself, shared: an update reads the old object while it builds the
    /// new one, and a deep copy of it cost about 1 % of a simulated schedule.
    pub fn get_shared(&self, storage: &str, key: &Key) -> Option<Arc<Value>> {
        self.objects.get(storage).and_then(|m| m.get(key)).cloned()
    }

    /// Whether any stored object, of any type, satisfies `f`.
    pub fn any(&self, f: impl Fn(&Value) -> bool) -> bool {
        self.objects.values().flat_map(|m| m.values()).any(|v| f(v))
    }

    /// Objects of one type, in key order, optionally in one namespace.
    pub fn list<'a>(
        &'a self,
        storage: &str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Key, &'a Value)> {
        self.objects
            .get(storage)
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(move |((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(k, v)| (k, &**v))
    }

    /// Stores `object` (its resourceVersion is set here) and records the change.
    pub fn put(
        &mut self,
        storage: &'static str,
        key: Key,
        mut object: Value,
        kind: ChangeKind,
    ) -> Arc<Value> {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let object = Arc::new(object);
        let previous = self
            .objects
            .entry(storage)
            .or_default()
            .insert(key.clone(), object.clone());
        self.record(storage, key.0, kind, object.clone(), previous);
        object
    }

    /// Removes an object; returns it with the deletion's resourceVersion.
    pub fn remove(&mut self, storage: &'static str, key: &Key) -> Option<Arc<Value>> {
        let previous = self.objects.get_mut(storage)?.remove(key)?;
        self.rv += 1;
        let mut object = (*previous).clone();
        object["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let object = Arc::new(object);
        self.record(
            storage,
            key.0.clone(),
            ChangeKind::Deleted,
            object.clone(),
            Some(previous),
        );
        Some(object)
    }

    fn record(
        &mut self,
        storage: &'static str,
        namespace: String,
        kind: ChangeKind,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) {
        if RBAC_STORAGES.contains(&storage) {
            self.rbac_decisions.get_mut().clear();
        }
        self.history.push_back(Change {
            rv: self.rv,
            storage,
            namespace,
            kind,
            object,
            previous,
        });
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
    }

    /// Removes an object whose last state is `last` (e.g. its final finalizer removed): one
    /// DELETED change carrying that state.
    pub fn remove_final(
        &mut self,
        storage: &'static str,
        key: &Key,
        mut last: Value,
    ) -> Option<Arc<Value>> {
        let previous = self.objects.get_mut(storage)?.remove(key)?;
        self.rv += 1;
        last["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let last = Arc::new(last);
        self.record(
            storage,
            key.0.clone(),
            ChangeKind::Deleted,
            last.clone(),
            Some(previous),
        );
        Some(last)
    }

    /// How many changes the history holds.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// Changes after `rv`, or `None` if some of them were compacted away.
    pub fn changes_after(&self, rv: u64) -> Option<impl Iterator<Item = &Change>> {
        if rv < self.compacted_rv {
            return None;
        }
        let start = self.history.partition_point(|c| c.rv <= rv);
        Some(self.history.range(start..))
    }

    /// Forgets the whole history, as an etcd compaction would: watches from any earlier
    /// resourceVersion get 410 Gone.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted_rv = self.rv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(n: &str) -> Key {
        ("default".into(), n.into())
    }

    #[test]
    fn resource_versions_increase_and_history_replays() {
        let mut s = Store::new(100);
        let a = s.put(
            "configmaps",
            key("a"),
            json!({"metadata": {"name": "a"}}),
            ChangeKind::Added,
        );
        let b = s.put(
            "configmaps",
            key("b"),
            json!({"metadata": {"name": "b"}}),
            ChangeKind::Added,
        );
        let rv_a: u64 = a["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("rv");
        let rv_b: u64 = b["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("rv");
        assert!(rv_b > rv_a);
        let after: Vec<u64> = s.changes_after(rv_a).expect("kept").map(|c| c.rv).collect();
        assert_eq!(after, vec![rv_b]);
        let gone = s.remove("configmaps", &key("a")).expect("removed");
        assert_eq!(gone["metadata"]["name"], "a");
        assert!(s.get("configmaps", &key("a")).is_none());
    }

    #[test]
    fn history_window_and_compaction_make_old_versions_gone() {
        let mut s = Store::new(2);
        for n in ["a", "b", "c"] {
            s.put(
                "configmaps",
                key(n),
                json!({"metadata": {"name": n}}),
                ChangeKind::Added,
            );
        }
        assert!(
            s.changes_after(1).is_none(),
            "first change fell out of the window"
        );
        assert!(s.changes_after(s.rv - 1).is_some());
        s.compact();
        assert!(s.changes_after(s.rv - 1).is_none());
        assert!(s.changes_after(s.rv).is_some());
    }
}
