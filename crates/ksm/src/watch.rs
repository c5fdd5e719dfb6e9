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

/// `--use-apiserver-cache` and `--object-limit`, applied to every list of every watcher
/// (built-in and custom resources alike, as upstream's instrumented ListerWatcher does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListSettings {
    /// List with `resourceVersion=0`: served from the API server's watch cache.
    pub use_apiserver_cache: bool,
    /// At most this many objects from each (re)list; objects created later still arrive
    /// through the watch, as upstream (its limit truncates the list, not the watch).
    pub object_limit: Option<u64>,
}

/// Largest page requested when a limit is set: a small limit needs one small request.
const MAX_PAGE: u64 = 500;

impl ListSettings {
    /// The watcher configuration for one list/watch with an optional field selector.
    pub fn watcher_config(&self, fields: Option<&str>) -> watcher::Config {
        let mut config = watcher::Config::default();
        if let Some(f) = fields.filter(|f| !f.is_empty()) {
            config = config.fields(f);
        }
        if self.use_apiserver_cache {
            config = config.any_semantic();
        }
        if let Some(limit) = self.object_limit {
            // Bounded by MAX_PAGE, so the conversion cannot fail.
            config = config.page_size(u32::try_from(limit.clamp(1, MAX_PAGE)).unwrap_or(500));
        }
        config
    }

    /// A fresh budget for one list.
    pub fn budget(&self) -> ListBudget {
        ListBudget {
            limit: self.object_limit,
            admitted: 0,
        }
    }
}

/// Counts the objects of one (re)list against `--object-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListBudget {
    limit: Option<u64>,
    admitted: u64,
}

impl ListBudget {
    /// Starts counting a new list.
    pub fn restart(&mut self) {
        self.admitted = 0;
    }

    /// Whether one more listed object may be stored.
    pub fn admit(&mut self) -> bool {
        if self.limit.is_some_and(|l| self.admitted >= l) {
            return false;
        }
        self.admitted += 1;
        true
    }
}

/// What one watcher needs besides the API handle.
pub struct WatchContext<K> {
    pub families: Arc<ResourceFamilies<K>>,
    pub enabled: Arc<Vec<usize>>,
    pub ctx: Arc<FamilyContext>,
    pub store: Arc<MetricsStore>,
    pub ownership: Arc<dyn ObjectOwnership>,
    pub telemetry: Telemetry,
    pub list: ListSettings,
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
        list,
        on_synced,
    } = wc;
    let mut budget = list.budget();
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
            Ok(Event::Init) => {
                listed.clear();
                budget.restart();
            }
            Ok(Event::InitApply(obj)) => {
                if budget.admit() {
                    apply(&obj, Some(&mut listed));
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_settings_shape_the_watcher_config() {
        let plain = ListSettings::default().watcher_config(None);
        assert_eq!(plain.field_selector, None);
        assert_eq!(
            plain.initial_list_strategy,
            watcher::InitialListStrategy::ListWatch
        );
        let cached = ListSettings {
            use_apiserver_cache: true,
            object_limit: Some(3),
        }
        .watcher_config(Some("spec.nodeName="));
        assert_eq!(cached.field_selector.as_deref(), Some("spec.nodeName="));
        assert_eq!(cached.list_semantic, watcher::ListSemantic::Any);
        assert_eq!(cached.page_size, Some(3));
        let big = ListSettings {
            use_apiserver_cache: false,
            object_limit: Some(100_000),
        }
        .watcher_config(Some(""));
        assert_eq!(big.field_selector, None);
        assert_eq!(big.page_size, Some(500));
    }

    #[test]
    fn budget_admits_up_to_the_limit_per_list() {
        let mut b = ListSettings {
            use_apiserver_cache: false,
            object_limit: Some(2),
        }
        .budget();
        assert!(b.admit() && b.admit() && !b.admit());
        b.restart();
        assert!(b.admit());
        let mut unlimited = ListSettings::default().budget();
        assert!((0..10_000).all(|_| unlimited.admit()));
    }
}
