//! The stores of custom resources: a set that changes while it is served, as CRDs come and go.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use ferrocrane_core::exposition::Format;

use super::MetricsStore;

/// The live set of custom-resource stores, shared with the scrapes. Stores come and
/// go as CRDs appear and disappear, so the layer takes a [`Self::snapshot`] per scrape.
#[derive(Clone, Default)]
pub struct CustomResourceStores {
    inner: Arc<RwLock<BTreeMap<String, Arc<MetricsStore>>>>,
}

impl std::fmt::Debug for CustomResourceStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomResourceStores")
            .field("keys", &self.keys())
            .finish()
    }
}

impl CustomResourceStores {
    /// The current stores, ordered by configuration entry then GVK.
    pub fn snapshot(&self) -> Vec<Arc<MetricsStore>> {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// `"<config index>/<group>/<version>/<kind>"` of every running store.
    pub fn keys(&self) -> Vec<String> {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// Every store's families, as `MetricsStore::write_all` writes them.
    pub fn write_all(&self, out: &mut Vec<u8>, format: Format) {
        for store in self.snapshot() {
            store.write_all(out, format);
        }
    }

    pub(crate) fn insert(&self, key: String, store: Arc<MetricsStore>) {
        self.inner
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, store);
    }

    pub(crate) fn remove(&self, key: &str) -> Option<Arc<MetricsStore>> {
        self.inner
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
    }
}
