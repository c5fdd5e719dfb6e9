//! Per-resource store of pre-rendered metric bytes.
//!
//! kube-state-metrics' design, kept because it is what makes scrapes cheap: each object's
//! lines are rendered once when the object changes, and a scrape only copies bytes. The
//! lock is held for a map insert on the watch side and for a copy on the scrape side,
//! never while rendering.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use ferrocrane_core::exposition::Format;

use crate::families::{FamilySpec, ResourceFamilies};

/// The HELP/TYPE lines of one family, pre-rendered for both formats.
#[derive(Debug, Clone)]
struct Header {
    text: Box<[u8]>,
    openmetrics: Box<[u8]>,
}

/// One object's rendered lines: one byte string per enabled family, in family order.
pub type RenderedObject = Box<[Box<[u8]>]>;

#[derive(Debug)]
pub struct MetricsStore {
    resource: &'static str,
    headers: Vec<Header>,
    objects: RwLock<HashMap<String, RenderedObject>>,
}

impl MetricsStore {
    /// A store for the `enabled` families (indexes into `families.families`).
    pub fn new<T>(families: &ResourceFamilies<T>, enabled: &[usize]) -> Self {
        let headers = enabled
            .iter()
            .map(|&i| render_header(&families.families[i]))
            .collect();
        Self {
            resource: families.resource,
            headers,
            objects: RwLock::new(HashMap::new()),
        }
    }

    pub fn resource(&self) -> &'static str {
        self.resource
    }

    pub fn family_count(&self) -> usize {
        self.headers.len()
    }

    /// Adds or replaces an object's lines. `lines` must hold one entry per enabled family.
    pub fn upsert(&self, uid: &str, lines: Vec<Vec<u8>>) {
        debug_assert_eq!(lines.len(), self.headers.len());
        let rendered: RenderedObject = lines.into_iter().map(Vec::into_boxed_slice).collect();
        let mut objects = self.objects.write().unwrap_or_else(|e| e.into_inner());
        match objects.get_mut(uid) {
            Some(slot) => *slot = rendered,
            None => {
                objects.insert(uid.to_string(), rendered);
            }
        }
    }

    pub fn remove(&self, uid: &str) {
        self.objects
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uid);
    }

    /// After a relist: drops every object the API server no longer has.
    pub fn retain(&self, live: &HashSet<String>) {
        self.objects
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|uid, _| live.contains(uid));
    }

    pub fn len(&self) -> usize {
        self.objects.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends every family: its header once (only when the store holds objects, even if
    /// none of them has a sample for it — kube-state-metrics does the same), then each
    /// object's lines for it.
    pub fn write_all(&self, out: &mut Vec<u8>, format: Format) {
        let objects = self.objects.read().unwrap_or_else(|e| e.into_inner());
        if objects.is_empty() {
            return;
        }
        for (i, header) in self.headers.iter().enumerate() {
            out.extend_from_slice(match format {
                Format::Text004 => &header.text,
                Format::OpenMetrics => &header.openmetrics,
            });
            for lines in objects.values() {
                if let Some(bytes) = lines.get(i) {
                    out.extend_from_slice(bytes);
                }
            }
        }
    }

    /// A cheap estimate of the bytes a scrape of this store writes, to size buffers.
    pub fn size_hint(&self) -> usize {
        let objects = self.objects.read().unwrap_or_else(|e| e.into_inner());
        let per_object = objects
            .values()
            .next()
            .map(|o| o.iter().map(|b| b.len()).sum::<usize>())
            .unwrap_or(0);
        per_object * objects.len() + self.headers.len() * 128
    }
}

fn render_header<T>(family: &FamilySpec<T>) -> Header {
    let mut text = Vec::new();
    family.write_header(&mut text, Format::Text004);
    let mut openmetrics = Vec::new();
    family.write_header(&mut openmetrics, Format::OpenMetrics);
    Header {
        text: text.into_boxed_slice(),
        openmetrics: openmetrics.into_boxed_slice(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, configmap};
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(name: &str, uid: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "namespace": "ns", "uid": uid, "resourceVersion": "7" }
        }))
        .expect("configmap")
    }

    fn store_with(objs: &[ConfigMap]) -> (MetricsStore, Vec<usize>) {
        let families = configmap::families();
        let enabled: Vec<usize> = (0..families.families.len()).collect();
        let store = MetricsStore::new(&families, &enabled);
        for o in objs {
            let uid = o.metadata.uid.clone().unwrap_or_default();
            store.upsert(
                &uid,
                families.render(o, &FamilyContext::default(), &enabled),
            );
        }
        (store, enabled)
    }

    #[test]
    fn empty_store_writes_nothing() {
        let (store, _) = store_with(&[]);
        let mut out = Vec::new();
        store.write_all(&mut out, Format::Text004);
        assert!(out.is_empty());
    }

    #[test]
    fn headers_once_per_family_then_each_object() {
        let (store, _) = store_with(&[cm("a", "u1"), cm("b", "u2")]);
        let mut out = Vec::new();
        store.write_all(&mut out, Format::Text004);
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(text.matches("# HELP kube_configmap_info ").count(), 1);
        assert_eq!(
            text.matches("# HELP kube_configmap_labels ").count(),
            1,
            "header without samples still written"
        );
        assert!(text.contains("kube_configmap_info{namespace=\"ns\",configmap=\"a\"} 1\n"));
        assert!(text.contains("kube_configmap_info{namespace=\"ns\",configmap=\"b\"} 1\n"));
    }

    #[test]
    fn update_replaces_and_delete_removes() {
        let (store, enabled) = store_with(&[cm("a", "u1")]);
        let families = configmap::families();
        let mut renamed = cm("a2", "u1");
        renamed.metadata.resource_version = Some("8".into());
        store.upsert(
            "u1",
            families.render(&renamed, &FamilyContext::default(), &enabled),
        );
        let mut out = Vec::new();
        store.write_all(&mut out, Format::Text004);
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("configmap=\"a2\"") && !text.contains("configmap=\"a\""));
        store.remove("u1");
        assert!(store.is_empty());
    }

    #[test]
    fn retain_drops_objects_gone_after_a_relist() {
        let (store, _) = store_with(&[cm("a", "u1"), cm("b", "u2"), cm("c", "u3")]);
        store.retain(&["u2".to_string()].into_iter().collect());
        assert_eq!(store.len(), 1);
    }
}
