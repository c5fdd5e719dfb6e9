//! What scrapes read: the stores of the running engine, swapped whole when a reload has
//! built new ones.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use super::{CustomResourceStores, MetricsStore};

/// What a scrape reads: one consistent set of stores.
pub struct Serving {
    pub stores: Vec<Arc<MetricsStore>>,
    /// Custom-resource stores; their set changes as CRDs come and go.
    pub custom: Option<CustomResourceStores>,
    pub gzip: bool,
}

impl Serving {
    /// The resource names (built-in and custom) of every store, which are also the
    /// `resource` label of their telemetry.
    pub fn resources(&self) -> BTreeSet<&'static str> {
        scrape_stores(self).iter().map(|s| s.resource()).collect()
    }

    /// What this set of stores exports and `next` does not: the telemetry to forget when
    /// `next` replaces it.
    pub fn resources_not_in(&self, next: &Serving) -> Vec<&'static str> {
        self.resources()
            .difference(&next.resources())
            .copied()
            .collect()
    }
}

/// The stores scrapes read, swapped whole on reload.
pub type SharedServing = Arc<RwLock<Arc<Serving>>>;

/// Every store a scrape writes, built-in first, then custom resources.
pub fn scrape_stores(serving: &Serving) -> Vec<Arc<MetricsStore>> {
    let mut stores = serving.stores.clone();
    if let Some(custom) = &serving.custom {
        stores.extend(custom.snapshot());
    }
    stores
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{ResourceFamilies, configmap};

    fn store(resource: &'static str) -> Arc<MetricsStore> {
        let families = ResourceFamilies::<()> {
            resource,
            identity_keys: &[],
            identity: |_| Vec::new(),
            families: Vec::new(),
        };
        Arc::new(MetricsStore::new(&families, &[]))
    }

    fn custom(plural: &'static str) -> CustomResourceStores {
        let stores = CustomResourceStores::default();
        stores.insert(format!("0/{plural}"), store(plural));
        stores
    }

    #[test]
    fn a_reload_forgets_the_telemetry_of_builtin_and_custom_resources_it_drops() {
        let configmaps = || Arc::new(MetricsStore::new(&configmap::families(), &[0]));
        let old = Serving {
            stores: vec![configmaps()],
            custom: Some(custom("foos")),
            gzip: false,
        };
        let same = Serving {
            stores: vec![configmaps()],
            custom: Some(custom("foos")),
            gzip: false,
        };
        assert!(old.resources_not_in(&same).is_empty());
        let none = Serving {
            stores: vec![],
            custom: None,
            gzip: false,
        };
        assert_eq!(old.resources_not_in(&none), ["configmaps", "foos"]);
        assert!(none.resources_not_in(&old).is_empty());
    }
}
