//! Feeding a store from the API server: the one list/watch loop of ksm, used by built-in and
//! custom resources alike, so both get the same namespace handling, sharding, `--object-limit`,
//! telemetry and retries. Objects are rendered as they arrive and then dropped; only their
//! bytes are kept, so managedFields and everything families do not read cost nothing after
//! the event.

mod decoded;
mod list;
mod targets;

pub use decoded::Decoded;
pub use list::{ListBudget, ListSettings};
pub use targets::{NamespacePlan, Scope, WatchTarget};

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::store::MetricsStore;
use crate::telemetry::Telemetry;

/// Decides whether this instance exports an object: sharding by UID.
pub trait ObjectOwnership: Send + Sync {
    fn owns(&self, uid: &str) -> bool;

    /// Whether the API server was asked to send only owned objects (server-side sharding),
    /// so one that is not owned means the server ignored the request.
    fn filtered_by_server(&self) -> bool {
        false
    }
}

/// Turns one object into its store lines (one entry per enabled family): what differs
/// between built-in families and a custom resource configuration. An error when the object
/// cannot be rendered (it could not be decoded, say): the loop then drops what the store
/// had for it, logs why and counts it, rather than keep an old version.
pub trait RenderObject<K>: Send + Sync {
    fn render(&self, obj: &K) -> Result<Vec<Vec<u8>>, String>;
}

/// Called once per watcher, when its first list has been applied.
pub type OnSynced = Arc<dyn Fn() + Send + Sync>;

/// What every watcher of an engine shares, built-in or custom.
#[derive(Clone)]
pub struct WatchSettings {
    pub client: Client,
    /// `--namespaces` and `--namespaces-denylist`.
    pub namespaces: NamespacePlan,
    /// Sharding.
    pub ownership: Arc<dyn ObjectOwnership>,
    pub telemetry: Telemetry,
    /// `--use-apiserver-cache`, `--object-limit`.
    pub list: ListSettings,
}

/// One resource to watch into one store.
pub struct WatchedResource<K> {
    pub scope: Scope,
    /// ANDed to every list/watch of this resource (the pods' `spec.nodeName` selector).
    pub field_selector: Option<String>,
    pub render: Arc<dyn RenderObject<K>>,
    /// Its `resource()` is the `--resources` name or a custom resource's plural, as in
    /// `?resources=`.
    pub store: Arc<MetricsStore>,
    /// The `resource` label of its self-metrics: upstream's Go type (`*v1.Pod`) for a
    /// built-in, the plural for a custom resource (upstream's `*unstructured.Unstructured`
    /// cannot tell two CRDs apart).
    pub telemetry_label: String,
}

impl WatchSettings {
    /// Starts the watchers of one resource (see [`NamespacePlan::targets`]), all feeding
    /// its store; `api` builds the handle for a namespace or, with `None`, the whole
    /// cluster. Aborting the tasks stops the resource (on reload, re-sharding or when a
    /// CRD goes away).
    pub fn spawn<K>(
        &self,
        resource: &WatchedResource<K>,
        api: impl Fn(Client, Option<&str>) -> Api<K>,
        on_synced: OnSynced,
    ) -> Vec<JoinHandle<()>>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        self.namespaces
            .targets(resource.scope, resource.field_selector.as_deref())
            .into_iter()
            .map(|target| {
                let config = self.list.watcher_config(target.field_selector.as_deref());
                let on_synced = on_synced.clone();
                let wc = WatchContext {
                    render: resource.render.clone(),
                    store: resource.store.clone(),
                    telemetry_label: resource.telemetry_label.clone(),
                    ownership: self.ownership.clone(),
                    telemetry: self.telemetry.clone(),
                    list: self.list,
                    on_synced: Box::new(move || on_synced()),
                };
                let api = api(self.client.clone(), target.namespace.as_deref());
                tokio::spawn(run_watcher(api, config, wc))
            })
            .collect()
    }
}

/// What one watcher needs besides the API handle.
pub struct WatchContext<K> {
    pub render: Arc<dyn RenderObject<K>>,
    pub store: Arc<MetricsStore>,
    /// See [`WatchedResource::telemetry_label`].
    pub telemetry_label: String,
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
    let events = kube::runtime::watcher(api, config).default_backoff();
    apply_events(events, wc).await;
}

/// Applies a watcher's events to the store and records them in the telemetry; what
/// [`run_watcher`] does with the API server's stream.
pub(crate) async fn apply_events<K>(
    events: impl futures::Stream<Item = watcher::Result<Event<K>>> + Send,
    wc: WatchContext<K>,
) where
    K: Resource + Debug + Send,
{
    let WatchContext {
        render,
        store,
        telemetry_label,
        ownership,
        telemetry,
        list,
        on_synced,
    } = wc;
    let resource = store.resource();
    let label = telemetry_label.as_str();
    let mut budget = list.budget();
    let mut on_synced = Some(on_synced);
    let mut listed: HashSet<String> = HashSet::new();
    let warned_unfiltered = std::sync::atomic::AtomicBool::new(false);
    let (received_owned, received_foreign) = telemetry.received_counters(label);
    let apply = |obj: &K, listed: Option<&mut HashSet<String>>| {
        let Some(uid) = obj.meta().uid.as_deref() else {
            return;
        };
        if ownership.owns(uid) {
            received_owned.inc();
        } else {
            received_foreign.inc();
            if ownership.filtered_by_server()
                && !warned_unfiltered.swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::error!(
                    resource,
                    "--server-side-sharding: the API server sent an object of another shard, so it ignores shardSelector (kube-apiserver older than 1.36, or its ShardedListAndWatch feature gate is off); filtering here instead: the output is right, but every object still reaches every shard"
                );
            }
            return;
        }
        match render.render(obj) {
            Ok(lines) => store.upsert(uid, lines),
            Err(error) => {
                store.remove(uid);
                telemetry.object_dropped(label);
                tracing::error!(resource, name = %obj.name_any(), namespace = obj.meta().namespace.as_deref().unwrap_or(""), %error, "object dropped: it cannot be rendered");
            }
        }
        if let Some(listed) = listed {
            listed.insert(uid.to_string());
        }
    };
    let mut events = std::pin::pin!(events);
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
                telemetry.list_succeeded(label);
                // The watch starts here: upstream counts watch calls, not the events they
                // bring (a resource that never changes still has its watch counted).
                telemetry.watch_succeeded(label);
                if let Some(f) = on_synced.take() {
                    f();
                }
            }
            Ok(Event::Apply(obj)) => apply(&obj, None),
            Ok(Event::Delete(obj)) => {
                if let Some(uid) = obj.meta().uid.as_deref() {
                    store.remove(uid);
                }
                tracing::trace!(resource, name = %obj.name_any(), "deleted");
            }
            Err(e) => {
                telemetry.watch_failed(label, &e);
                tracing::warn!(resource, error = %e, "watch failed; retrying with backoff");
            }
        }
        telemetry.set_objects(label, store.len());
    }
}

#[cfg(test)]
mod tests;
