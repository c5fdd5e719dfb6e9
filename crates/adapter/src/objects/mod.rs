//! Which objects a custom-metrics `*` request covers, from a metadata-only watch per resource
//! instead of a LIST per request.
//!
//! prometheus-adapter LISTs the selected objects on every `pods/*` request, so an HPA's
//! requests queue behind the client-side `--kube-api-qps` limit and load the API server. Here
//! the first `*` request for a resource starts a watch of that resource's metadata (every
//! namespace); once its initial list is complete, requests are answered from memory (names and
//! labels only, see [`index`]). The API server stays the source of truth: until the watch has
//! synced, after any watch error until it has re-synced, and for a selector this side cannot
//! parse, the request LISTs as upstream does.

pub mod index;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::task::JoinHandle;

use crate::object_selector::label_selector;
use index::ObjectIndex;

/// One watched resource.
#[derive(Default)]
struct Cache {
    index: RwLock<ObjectIndex>,
    /// The index holds a complete list plus every event since (false until the first initial
    /// list completes and after a watch error until the next one does).
    synced: AtomicBool,
}

struct Watched {
    cache: Arc<Cache>,
    task: JoinHandle<()>,
}

/// The caches of every resource asked for so far (`--object-cache`).
pub struct ObjectCaches {
    client: kube::Client,
    enabled: bool,
    watched: Mutex<HashMap<String, Watched>>,
}

impl Drop for ObjectCaches {
    fn drop(&mut self) {
        let watched = self.watched.get_mut().unwrap_or_else(|e| e.into_inner());
        for w in watched.values() {
            w.task.abort();
        }
    }
}

impl ObjectCaches {
    /// Caches that watch with `client` (when `enabled`; otherwise every lookup is left to a
    /// LIST).
    pub fn new(client: kube::Client, enabled: bool) -> Self {
        ObjectCaches {
            client,
            enabled,
            watched: Mutex::new(HashMap::new()),
        }
    }

    /// Names of the objects of `resource` in `namespace` (all when `None`) that the
    /// `labelSelector` selects, in listing order; `None` when the caller must LIST instead.
    /// Starts the resource's watch on first use (must run inside a tokio runtime).
    pub fn names(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Option<Vec<String>> {
        if !self.enabled {
            return None;
        }
        let cache = self.cache_for(resource);
        if !cache.synced.load(Ordering::Acquire) {
            return None;
        }
        // The API server's own parse error is the answer for a selector we refuse.
        let selector = label_selector(selector.unwrap_or_default()).ok()?;
        let index = cache.index.read().unwrap_or_else(|e| e.into_inner());
        Some(index.select(namespace, &selector))
    }

    fn cache_for(&self, resource: &ApiResource) -> Arc<Cache> {
        let key = format!(
            "{}/{}/{}",
            resource.group, resource.version, resource.plural
        );
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        let w = watched.entry(key).or_insert_with(|| {
            let cache = Arc::new(Cache::default());
            let api =
                Api::<PartialObjectMeta<DynamicObject>>::all_with(self.client.clone(), resource);
            let task = tokio::spawn(watch(api, Arc::clone(&cache), resource.plural.clone()));
            Watched { cache, task }
        });
        Arc::clone(&w.cache)
    }
}

fn record(index: &mut ObjectIndex, object: &PartialObjectMeta<DynamicObject>) {
    let meta = &object.metadata;
    index.apply(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        meta.labels.as_ref().unwrap_or(&Default::default()),
    );
}

async fn watch(api: Api<PartialObjectMeta<DynamicObject>>, cache: Arc<Cache>, resource: String) {
    let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let mut events = std::pin::pin!(events);
    // An initial list is collected apart and swapped in whole, so a re-list never serves a
    // half-listed resource.
    let mut relisting: Option<ObjectIndex> = None;
    let write = || cache.index.write().unwrap_or_else(|e| e.into_inner());
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => relisting = Some(ObjectIndex::default()),
            Ok(Event::InitApply(o)) => {
                if let Some(index) = relisting.as_mut() {
                    record(index, &o);
                }
            }
            Ok(Event::InitDone) => {
                if let Some(index) = relisting.take() {
                    tracing::info!(
                        resource,
                        objects = index.len(),
                        label_sets = index.label_sets(),
                        "object cache synced: `*` requests no longer list from the API server"
                    );
                    *write() = index;
                }
                cache.synced.store(true, Ordering::Release);
            }
            Ok(Event::Apply(o)) => record(&mut write(), &o),
            Ok(Event::Delete(o)) => {
                let meta = &o.metadata;
                write().delete(
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default(),
                );
            }
            Err(e) => {
                // Events may have been missed: LIST until the watcher has listed again.
                cache.synced.store(false, Ordering::Release);
                tracing::warn!(resource, error = %e, "object watch failed; listing per request until it recovers");
            }
        }
    }
}
