//! Which list/watches one resource needs: the namespaces of `--namespaces` (or the whole
//! cluster) and the field selector each one lists with. Built-in and custom resources are
//! planned by the same function, as upstream's store builder does for both.

use crate::field_selector::merge_field_selectors;

/// Whether a resource's objects live in namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// One list/watch: in one namespace (`None`: cluster-wide), with a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchTarget {
    pub namespace: Option<String>,
    pub field_selector: Option<String>,
}

/// The namespace settings every watcher of an engine shares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespacePlan {
    /// `--namespaces`; empty watches all namespaces.
    pub namespaces: Vec<String>,
    /// `--namespaces-denylist` as a field selector (`metadata.namespace!=a,...`).
    pub denylist_selector: Option<String>,
}

impl NamespacePlan {
    /// The list/watches of one resource. A namespaced resource gets one per namespace of
    /// `--namespaces` (one cluster-wide without it), each listing with the denylist
    /// selector: upstream applies it to every namespaced list, so a namespace that is both
    /// listed and denied yields nothing. A cluster-scoped resource gets one cluster-wide
    /// watch without it (its objects have no namespace for the selector to exclude).
    /// `resource_selector` (the pods' `spec.nodeName` selector) is ANDed to every one.
    pub fn targets(&self, scope: Scope, resource_selector: Option<&str>) -> Vec<WatchTarget> {
        let selector = |namespace_selector: Option<&str>| {
            let merged = merge_field_selectors(&[
                namespace_selector.unwrap_or(""),
                resource_selector.unwrap_or(""),
            ]);
            (!merged.is_empty()).then_some(merged)
        };
        match scope {
            Scope::Cluster => vec![WatchTarget {
                namespace: None,
                field_selector: selector(None),
            }],
            Scope::Namespaced if self.namespaces.is_empty() => vec![WatchTarget {
                namespace: None,
                field_selector: selector(self.denylist_selector.as_deref()),
            }],
            Scope::Namespaced => self
                .namespaces
                .iter()
                .map(|ns| WatchTarget {
                    namespace: Some(ns.clone()),
                    field_selector: selector(self.denylist_selector.as_deref()),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field_selector::namespace_denylist_field_selector;
    use proptest::prelude::*;

    fn target(namespace: Option<&str>, selector: Option<&str>) -> WatchTarget {
        WatchTarget {
            namespace: namespace.map(str::to_owned),
            field_selector: selector.map(str::to_owned),
        }
    }

    fn plan(namespaces: &[&str], denylist: &[&str]) -> NamespacePlan {
        let denylist: Vec<String> = denylist.iter().map(|s| s.to_string()).collect();
        NamespacePlan {
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            denylist_selector: (!denylist.is_empty())
                .then(|| namespace_denylist_field_selector(&denylist)),
        }
    }

    #[test]
    fn all_namespaces_list_cluster_wide_with_the_denylist() {
        let p = plan(&[], &["kube-system"]);
        assert_eq!(
            p.targets(Scope::Namespaced, None),
            [target(None, Some("metadata.namespace!=kube-system"))]
        );
        assert_eq!(
            p.targets(Scope::Namespaced, Some("spec.nodeName=n1")),
            [target(
                None,
                Some("metadata.namespace!=kube-system,spec.nodeName=n1")
            )]
        );
        assert_eq!(
            plan(&[], &[]).targets(Scope::Namespaced, None),
            [target(None, None)]
        );
    }

    #[test]
    fn listed_namespaces_keep_the_denylist_as_upstream() {
        assert_eq!(
            plan(&["a", "b"], &["a"]).targets(Scope::Namespaced, None),
            [
                target(Some("a"), Some("metadata.namespace!=a")),
                target(Some("b"), Some("metadata.namespace!=a")),
            ]
        );
        assert_eq!(
            plan(&["a"], &[]).targets(Scope::Namespaced, Some("spec.nodeName=")),
            [target(Some("a"), Some("spec.nodeName="))]
        );
    }

    #[test]
    fn cluster_scoped_resources_watch_once_without_the_denylist() {
        let p = plan(&["a", "b"], &["c"]);
        assert_eq!(p.targets(Scope::Cluster, None), [target(None, None)]);
        assert_eq!(
            p.targets(Scope::Cluster, Some("x=1")),
            [target(None, Some("x=1"))]
        );
    }

    proptest! {
        /// What the two former copies (built-in and custom resources) agreed on, and what
        /// the merged plan adds: every namespaced list carries the denylist.
        #[test]
        fn plans_cover_each_namespace_once_and_always_deny(
            namespaces in proptest::collection::vec("[a-z]{1,5}", 0..4),
            denylist in proptest::collection::vec("[a-z,=]{1,5}", 0..3),
            resource_selector in proptest::option::of("[a-z]{1,3}=[a-z]{0,3}"),
        ) {
            let denylist_selector = (!denylist.is_empty())
                .then(|| namespace_denylist_field_selector(&denylist));
            let p = NamespacePlan { namespaces: namespaces.clone(), denylist_selector: denylist_selector.clone() };
            let namespaced = p.targets(Scope::Namespaced, resource_selector.as_deref());
            if namespaces.is_empty() {
                prop_assert_eq!(namespaced.len(), 1);
                prop_assert_eq!(namespaced[0].namespace.as_ref(), None);
            } else {
                let got: Vec<_> = namespaced.iter().filter_map(|t| t.namespace.clone()).collect();
                prop_assert_eq!(got, namespaces);
            }
            for t in &namespaced {
                let fs = t.field_selector.clone().unwrap_or_default();
                if let Some(d) = &denylist_selector {
                    prop_assert!(fs.starts_with(d.as_str()));
                }
                if let Some(r) = &resource_selector {
                    prop_assert!(fs.ends_with(r.as_str()));
                }
                prop_assert_eq!(t.field_selector.is_none(), denylist_selector.is_none() && resource_selector.is_none());
            }
            let cluster = p.targets(Scope::Cluster, resource_selector.as_deref());
            prop_assert_eq!(cluster, vec![WatchTarget { namespace: None, field_selector: resource_selector }]);
        }
    }
}
