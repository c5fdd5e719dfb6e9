//! The objects of one resource as a `*` request needs them: namespace, name and labels, nothing
//! else (pure; the watch that feeds it is in the parent module).
//!
//! Memory per object is one name and one map entry: label sets are interned, because the pods
//! of one ReplicaSet (or Job, or StatefulSet revision) carry identical labels, so a cluster of
//! 100,000 pods holds a few thousand distinct sets, not 100,000.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::object_selector::ObjectSelector;

/// Labels sorted by key, shared by every object that carries exactly them.
type LabelSet = Arc<[(Box<str>, Box<str>)]>;

/// Objects by namespace (`""` for cluster-scoped ones), then by name: the order the API
/// server lists them in (etcd key order), so answers come out as a LIST's would.
#[derive(Debug, Default)]
pub struct ObjectIndex {
    objects: BTreeMap<Arc<str>, BTreeMap<Box<str>, LabelSet>>,
    label_sets: HashSet<LabelSet>,
    len: usize,
}

impl ObjectIndex {
    /// Records an object as it now is (created or changed).
    pub fn apply(&mut self, namespace: &str, name: &str, labels: &BTreeMap<String, String>) {
        let labels = self.intern(labels);
        let names = match self.objects.get_mut(namespace) {
            Some(names) => names,
            None => self.objects.entry(Arc::from(namespace)).or_default(),
        };
        let old = match names.get_mut(name) {
            Some(slot) => Some(std::mem::replace(slot, labels)),
            None => {
                names.insert(name.into(), labels);
                self.len += 1;
                None
            }
        };
        if let Some(old) = old {
            self.release(old);
        }
    }

    /// Forgets a deleted object.
    pub fn delete(&mut self, namespace: &str, name: &str) {
        let Some(names) = self.objects.get_mut(namespace) else {
            return;
        };
        let Some(old) = names.remove(name) else {
            return;
        };
        self.len -= 1;
        if names.is_empty() {
            self.objects.remove(namespace);
        }
        self.release(old);
    }

    /// Names of the objects in `namespace` (every namespace when `None`) that `selector`
    /// selects, in listing order.
    pub fn select(&self, namespace: Option<&str>, selector: &ObjectSelector) -> Vec<String> {
        let selected = |names: &BTreeMap<Box<str>, LabelSet>| -> Vec<String> {
            names
                .iter()
                .filter(|(_, labels)| selector.matches_by(|key| lookup(labels, key)))
                .map(|(name, _)| name.to_string())
                .collect()
        };
        match namespace {
            Some(ns) => self.objects.get(ns).map(selected).unwrap_or_default(),
            None => self.objects.values().flat_map(selected).collect(),
        }
    }

    /// Objects held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Distinct label sets held.
    pub fn label_sets(&self) -> usize {
        self.label_sets.len()
    }

    fn intern(&mut self, labels: &BTreeMap<String, String>) -> LabelSet {
        // BTreeMap iterates in key order, so equal maps give equal slices.
        let set: Vec<(Box<str>, Box<str>)> = labels
            .iter()
            .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
            .collect();
        if let Some(shared) = self.label_sets.get(set.as_slice()) {
            return Arc::clone(shared);
        }
        let shared: LabelSet = set.into();
        self.label_sets.insert(Arc::clone(&shared));
        shared
    }

    /// Drops an interned set nobody else holds.
    fn release(&mut self, labels: LabelSet) {
        // Held by the interner and by `labels`: no object uses it any more.
        if Arc::strong_count(&labels) == 2 {
            self.label_sets.remove(&labels);
        }
    }
}

fn lookup<'a>(labels: &'a LabelSet, key: &str) -> Option<&'a str> {
    labels
        .binary_search_by(|(k, _)| k.as_ref().cmp(key))
        .ok()
        .map(|i| labels[i].1.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object_selector::{label_selector, labels};

    fn select(index: &ObjectIndex, ns: Option<&str>, sel: &str) -> Vec<String> {
        index.select(ns, &label_selector(sel).unwrap())
    }

    #[test]
    fn selects_like_a_list_in_name_order() {
        let mut index = ObjectIndex::default();
        let web = labels(&[("app", "web"), ("rank", "3")]);
        index.apply("b", "web-2", &web);
        index.apply("b", "web-1", &web);
        index.apply("b", "db-0", &labels(&[("app", "db")]));
        index.apply("a", "web-9", &web);
        index.apply("b", "bare", &labels(&[]));
        assert_eq!(select(&index, Some("b"), "app=web"), ["web-1", "web-2"]);
        assert_eq!(select(&index, Some("b"), "app!=web"), ["bare", "db-0"]);
        assert_eq!(select(&index, Some("b"), "rank>2"), ["web-1", "web-2"]);
        assert_eq!(
            select(&index, None, ""),
            ["web-9", "bare", "db-0", "web-1", "web-2"]
        );
        assert!(select(&index, Some("c"), "").is_empty());
        assert_eq!(index.len(), 5);
    }

    #[test]
    fn changes_and_deletes_replace_what_was_known() {
        let mut index = ObjectIndex::default();
        index.apply("ns", "p", &labels(&[("app", "web")]));
        index.apply("ns", "p", &labels(&[("app", "db")]));
        assert_eq!(select(&index, Some("ns"), "app=db"), ["p"]);
        assert!(select(&index, Some("ns"), "app=web").is_empty());
        assert_eq!(index.len(), 1);
        index.delete("ns", "p");
        index.delete("ns", "p");
        index.delete("other", "p");
        assert!(index.is_empty());
        assert!(select(&index, None, "").is_empty());
        assert_eq!(index.label_sets(), 0, "no set outlives its objects");
    }

    #[test]
    fn identical_label_sets_are_stored_once() {
        let mut index = ObjectIndex::default();
        let template = labels(&[("app", "web"), ("pod-template-hash", "5d4f")]);
        for i in 0..1000 {
            index.apply("ns", &format!("web-{i}"), &template);
        }
        index.apply("ns", "other", &labels(&[("app", "db")]));
        assert_eq!((index.len(), index.label_sets()), (1001, 2));
        index.delete("ns", "other");
        assert_eq!(index.label_sets(), 1);
    }
}
