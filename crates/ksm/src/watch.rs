//! Feeding a store from the API server: one watcher per resource (per namespace when
//! `--namespaces` is set). Objects are rendered as they arrive and then dropped; only
//! their bytes are kept, so managedFields and everything families do not read cost
//! nothing after the event.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::families::{FamilyContext, ResourceFamilies};
use crate::store::MetricsStore;
use crate::telemetry::Telemetry;

/// Decides whether this instance exports an object: sharding by UID.
pub trait ObjectOwnership: Send + Sync {
    fn owns(&self, uid: &str) -> bool;
}

/// What one watcher needs besides the API handle.
pub struct WatchContext<K> {
    pub families: Arc<ResourceFamilies<K>>,
    pub enabled: Arc<Vec<usize>>,
    pub ctx: Arc<FamilyContext>,
    pub store: Arc<MetricsStore>,
    pub ownership: Arc<dyn ObjectOwnership>,
    pub telemetry: Telemetry,
    /// Called once, when the first complete list has been applied.
    pub on_synced: Box<dyn FnOnce() + Send>,
}

/// Runs until the process stops; errors are logged, counted and retried with backoff.
pub async fn run_watcher<K>(api: Api<K>, config: watcher::Config, wc: WatchContext<K>)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let WatchContext {
        families,
        enabled,
        ctx,
        store,
        ownership,
        telemetry,
        on_synced,
    } = wc;
    let resource = families.resource;
    let mut on_synced = Some(on_synced);
    let mut listed: HashSet<String> = HashSet::new();
    let apply = |obj: &K, listed: Option<&mut HashSet<String>>| {
        let Some(uid) = obj.meta().uid.as_deref() else {
            return;
        };
        if !ownership.owns(uid) {
            return;
        }
        store.upsert(uid, families.render(obj, &ctx, &enabled));
        if let Some(listed) = listed {
            listed.insert(uid.to_string());
        }
    };
    let mut events = watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => listed.clear(),
            Ok(Event::InitApply(obj)) => apply(&obj, Some(&mut listed)),
            Ok(Event::InitDone) => {
                // Whatever was not in this list was deleted while we were not watching.
                store.retain(&listed);
                listed = HashSet::new();
                telemetry.list_succeeded(resource);
                if let Some(f) = on_synced.take() {
                    f();
                }
            }
            Ok(Event::Apply(obj)) => {
                telemetry.watch_succeeded(resource);
                apply(&obj, None)
            }
            Ok(Event::Delete(obj)) => {
                telemetry.watch_succeeded(resource);
                if let Some(uid) = obj.meta().uid.as_deref() {
                    store.remove(uid);
                }
                tracing::trace!(resource, name = %obj.name_any(), "deleted");
            }
            Err(e) => {
                telemetry.watch_failed(resource, &e);
                tracing::warn!(resource, error = %e, "watch failed; retrying with backoff");
            }
        }
        telemetry.set_objects(resource, store.len());
    }
}

fn watcher<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl futures::Stream<Item = watcher::Result<Event<K>>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    kube::runtime::watcher(api, config)
}
