//! Runtime: one watcher and one store per configured custom resource, following discovery.
//!
//! Upstream's two known failures are designed out here:
//!
//! * a CRD created after start gets metrics without a restart (upstream #2296): GVKs are
//!   resolved again on every change of the refreshed [`SharedMapper`], and a watcher is
//!   started for each newly resolvable one;
//! * a configured CRD that does not exist never affects anything else (upstream #2354):
//!   it is logged once and waited for; a watcher that fails (RBAC, CRD deleted) only
//!   retries with backoff, and its store simply stays as it was. When discovery no
//!   longer lists a resolved GVK, its watcher stops and its store is dropped.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, RwLock};

use ferrocrane_core::exposition::Format;
use ferrocrane_core::kube::{ResourceMapper, ResourceMapping, SharedMapper};
use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::task::JoinHandle;

use super::config::{CustomResourceStateConfig, GroupVersionKind, Resource};
use super::metrics::CompiledResource;
use crate::registry::FamilyPredicate;
use crate::store::MetricsStore;
use crate::watch::{ListSettings, ObjectOwnership};

/// The live set of custom-resource stores, shared with the HTTP layer. Stores come and
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

    fn remove(&self, key: &str) {
        self.inner
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

/// Settings shared by every custom-resource watcher.
#[derive(Clone, Default)]
pub struct CustomResourceOptions {
    /// `--namespaces`; empty watches all namespaces (cluster-scoped kinds ignore it).
    pub namespaces: Vec<String>,
    /// Sharding; `None` exports every object.
    pub ownership: Option<Arc<dyn ObjectOwnership>>,
    /// `--metric-allowlist` / `--metric-denylist` (custom families are never opt-in);
    /// `None` exports every configured family.
    pub family_enabled: Option<FamilyPredicate>,
    /// `--use-apiserver-cache`, `--object-limit`.
    pub list: ListSettings,
}

/// A running custom-resource runtime: its stores, and the tasks feeding them, which stop
/// when this is dropped (a reload replaces the whole runtime).
pub struct CustomResourceRuntime {
    stores: CustomResourceStores,
    supervisor: JoinHandle<()>,
}

impl CustomResourceRuntime {
    pub fn stores(&self) -> &CustomResourceStores {
        &self.stores
    }
}

impl Drop for CustomResourceRuntime {
    fn drop(&mut self) {
        // The supervisor owns the watcher tasks (see `Running`), so they stop with it.
        self.supervisor.abort();
    }
}

/// The watcher task of each resolved GVK; aborted when dropped, so stopping the
/// supervisor stops everything it started.
#[derive(Default)]
struct Running(BTreeMap<String, JoinHandle<()>>);

impl Drop for Running {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// One configured resource resolved to a concrete, served GVK.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Index of the entry in `spec.resources`.
    pub index: usize,
    pub gvk: GroupVersionKind,
    pub plural: String,
    pub namespaced: bool,
}

impl Resolved {
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.index, self.gvk.group, self.gvk.version, self.gvk.kind
        )
    }

    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.gvk.group.clone(),
            version: self.gvk.version.clone(),
            api_version: format!("{}/{}", self.gvk.group, self.gvk.version),
            kind: self.gvk.kind.clone(),
            plural: self.plural.clone(),
        }
    }
}

/// Resolves one configured GVK against discovery, expanding `*`/empty version and kind
/// (every served version, every kind of the group). Empty when nothing matches yet.
pub fn resolve(index: usize, resource: &Resource, mapper: &ResourceMapper) -> Vec<Resolved> {
    let want = &resource.group_version_kind;
    let candidates: Vec<&ResourceMapping> = if want.kind_is_wildcard() {
        mapper
            .all()
            .iter()
            .filter(|m| m.group == want.group)
            .collect()
    } else {
        mapper
            .by_kind(&want.group, &want.kind)
            .filter(|m| m.group == want.group)
            .into_iter()
            .collect()
    };
    let mut out = Vec::new();
    for m in candidates {
        for v in &m.versions {
            if want.version_is_wildcard() || *v == want.version {
                out.push(Resolved {
                    index,
                    gvk: GroupVersionKind::new(&m.group, v, &m.kind),
                    plural: m.plural.clone(),
                    namespaced: m.namespaced,
                });
            }
        }
    }
    out
}

/// Starts the custom-resource runtime and returns at once (stores empty until CRDs
/// resolve). A supervisor task resolves every configured GVK on each discovery change,
/// starts a watcher per newly served GVK and stops those discovery no longer lists. When
/// the mapper's refresher stops, the supervisor keeps the running watchers going.
pub fn run_custom_resources(
    client: Client,
    config: CustomResourceStateConfig,
    mapper: SharedMapper,
    options: CustomResourceOptions,
) -> CustomResourceRuntime {
    let stores = CustomResourceStores::default();
    let supervisor = tokio::spawn(supervise(client, config, mapper, options, stores.clone()));
    CustomResourceRuntime { stores, supervisor }
}

async fn supervise(
    client: Client,
    config: CustomResourceStateConfig,
    mut mapper: SharedMapper,
    options: CustomResourceOptions,
    stores: CustomResourceStores,
) {
    let mut running = Running::default();
    let mut reported_missing: HashSet<usize> = HashSet::new();
    let mut snapshot = mapper.current();
    loop {
        if !snapshot.is_empty() {
            reconcile(
                &client,
                &config,
                &snapshot,
                &options,
                &stores,
                &mut running,
                &mut reported_missing,
            );
        }
        match mapper.changed().await {
            Ok(next) => snapshot = next,
            Err(e) => {
                // The last mapping stays valid: running watchers keep their stores, and
                // this task must live on because dropping `running` would stop them.
                tracing::info!(error = %e, "custom resources: discovery stopped; no further CRDs will be picked up");
                std::future::pending::<()>().await;
            }
        }
    }
}

fn reconcile(
    client: &Client,
    config: &CustomResourceStateConfig,
    mapper: &ResourceMapper,
    options: &CustomResourceOptions,
    stores: &CustomResourceStores,
    running: &mut Running,
    reported_missing: &mut HashSet<usize>,
) {
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    for (index, resource) in config.spec.resources.iter().enumerate() {
        let resolved = resolve(index, resource, mapper);
        if resolved.is_empty() {
            if reported_missing.insert(index) {
                tracing::warn!(
                    gvk = %resource.group_version_kind,
                    "configured custom resource not found in discovery; waiting for its CRD"
                );
            }
            continue;
        }
        reported_missing.remove(&index);
        for r in resolved {
            let key = r.key();
            wanted.insert(key.clone());
            if running.0.contains_key(&key) {
                continue;
            }
            let compiled = match compile(resource, &r.gvk, options) {
                Ok(c) => Arc::new(c),
                Err(e) => {
                    // Validated configs always compile; never let one entry stop the rest.
                    tracing::error!(error = %e, "custom resource configuration does not compile");
                    continue;
                }
            };
            let store = Arc::new(compiled.new_store(&r.plural));
            stores.insert(key.clone(), store.clone());
            tracing::info!(gvk = %r.gvk, plural = %r.plural, "watching custom resource");
            let task = tokio::spawn(watch_resource(
                client.clone(),
                r,
                compiled,
                store,
                options.clone(),
            ));
            running.0.insert(key, task);
        }
    }
    running.0.retain(|key, task| {
        if wanted.contains(key) {
            return true;
        }
        tracing::info!(
            key,
            "custom resource no longer served; stopping its watcher"
        );
        task.abort();
        stores.remove(key);
        false
    });
}

/// Compiles one configured resource for a resolved GVK, keeping only the families the
/// metric allow/deny lists let through (upstream filters custom families the same way).
fn compile(
    resource: &Resource,
    gvk: &GroupVersionKind,
    options: &CustomResourceOptions,
) -> Result<CompiledResource, super::metrics::CompileError> {
    let mut compiled = CompiledResource::compile(resource, gvk)?;
    if let Some(enabled) = &options.family_enabled {
        compiled.families.retain(|f| enabled(&f.name, false));
    }
    Ok(compiled)
}

/// Watches every namespace in `options.namespaces` (or all) into one store.
async fn watch_resource(
    client: Client,
    r: Resolved,
    compiled: Arc<CompiledResource>,
    store: Arc<MetricsStore>,
    options: CustomResourceOptions,
) {
    let ar = r.api_resource();
    let apis: Vec<Api<DynamicObject>> = if r.namespaced && !options.namespaces.is_empty() {
        options
            .namespaces
            .iter()
            .map(|ns| Api::namespaced_with(client.clone(), ns, &ar))
            .collect()
    } else {
        vec![Api::all_with(client.clone(), &ar)]
    };
    let watchers = apis.into_iter().map(|api| {
        watch_one(
            api,
            r.gvk.clone(),
            compiled.clone(),
            store.clone(),
            options.ownership.clone(),
            options.list,
        )
    });
    futures::future::join_all(watchers).await;
}

async fn watch_one(
    api: Api<DynamicObject>,
    gvk: GroupVersionKind,
    compiled: Arc<CompiledResource>,
    store: Arc<MetricsStore>,
    ownership: Option<Arc<dyn ObjectOwnership>>,
    list: ListSettings,
) {
    let mut listed: HashSet<String> = HashSet::new();
    let mut budget = list.budget();
    let apply = |obj: &DynamicObject, listed: Option<&mut HashSet<String>>| {
        let Some(uid) = obj.metadata.uid.as_deref() else {
            return;
        };
        if ownership.as_ref().is_some_and(|o| !o.owns(uid)) {
            return;
        }
        match serde_json::to_value(obj) {
            Ok(value) => store.upsert(uid, compiled.render(&value)),
            Err(e) => tracing::warn!(%gvk, error = %e, "custom object not representable as JSON"),
        }
        if let Some(listed) = listed {
            listed.insert(uid.to_string());
        }
    };
    let mut events = watcher(api, list.watcher_config(None))
        .default_backoff()
        .boxed();
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
            Ok(Event::InitDone) => store.retain(&std::mem::take(&mut listed)),
            Ok(Event::Apply(obj)) => apply(&obj, None),
            Ok(Event::Delete(obj)) => {
                if let Some(uid) = obj.metadata.uid.as_deref() {
                    store.remove(uid);
                }
            }
            Err(e) => {
                tracing::warn!(%gvk, error = %e, "custom resource watch failed; retrying with backoff")
            }
        }
    }
}

fn watcher(
    api: Api<DynamicObject>,
    config: watcher::Config,
) -> impl futures::Stream<Item = watcher::Result<Event<DynamicObject>>> {
    kube::runtime::watcher(api, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::custom_resource::config::{Each, Gauge, Generator, PathSpec};

    fn mapping(group: &str, versions: &[&str], kind: &str, plural: &str) -> ResourceMapping {
        ResourceMapping {
            group: group.into(),
            version: versions[0].into(),
            versions: versions.iter().map(|v| v.to_string()).collect(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            short_names: vec![],
            namespaced: true,
            has_scale: false,
            verbs: vec!["list".into(), "watch".into()],
        }
    }

    fn mapper() -> ResourceMapper {
        ResourceMapper::from_mappings(vec![
            mapping("myteam.io", &["v1", "v1beta1"], "Foo", "foos"),
            mapping("myteam.io", &["v1"], "Bar", "bars"),
            mapping("other.io", &["v1"], "Foo", "foos"),
        ])
    }

    fn resource(group: &str, version: &str, kind: &str) -> Resource {
        Resource {
            group_version_kind: GroupVersionKind::new(group, version, kind),
            metrics: vec![Generator {
                name: "x".into(),
                each: Each {
                    gauge: Some(Gauge {
                        path: PathSpec::from(["spec", "replicas"]),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn keys(group: &str, version: &str, kind: &str) -> Vec<String> {
        resolve(0, &resource(group, version, kind), &mapper())
            .iter()
            .map(Resolved::key)
            .collect()
    }

    #[test]
    fn resolves_exact_and_wildcard_gvks() {
        assert_eq!(keys("myteam.io", "v1", "Foo"), ["0/myteam.io/v1/Foo"]);
        assert_eq!(
            keys("myteam.io", "v1beta1", "Foo"),
            ["0/myteam.io/v1beta1/Foo"]
        );
        assert!(keys("myteam.io", "v2", "Foo").is_empty());
        assert!(keys("missing.io", "v1", "Foo").is_empty());
        assert_eq!(
            keys("myteam.io", "*", "Foo"),
            ["0/myteam.io/v1/Foo", "0/myteam.io/v1beta1/Foo"]
        );
        assert_eq!(
            keys("myteam.io", "v1", "*"),
            ["0/myteam.io/v1/Foo", "0/myteam.io/v1/Bar"]
        );
        assert_eq!(
            keys("myteam.io", "", ""),
            [
                "0/myteam.io/v1/Foo",
                "0/myteam.io/v1beta1/Foo",
                "0/myteam.io/v1/Bar"
            ]
        );
        let r = &resolve(0, &resource("myteam.io", "v1", "Foo"), &mapper())[0];
        let ar = r.api_resource();
        assert_eq!(
            (ar.api_version.as_str(), ar.plural.as_str()),
            ("myteam.io/v1", "foos")
        );
    }

    #[tokio::test]
    async fn runtime_starts_a_store_per_served_gvk_and_waits_for_the_rest() {
        let cfg = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = Client::try_from(cfg).unwrap();
        let config = CustomResourceStateConfig {
            spec: super::super::config::Spec {
                resources: vec![
                    resource("myteam.io", "*", "Foo"),
                    resource("missing.io", "v1", "Nope"),
                ],
            },
            ..Default::default()
        };
        let runtime = run_custom_resources(
            client,
            config,
            SharedMapper::fixed(mapper()),
            CustomResourceOptions::default(),
        );
        let stores = runtime.stores().clone();
        for _ in 0..100 {
            if stores.keys().len() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(
            stores.keys(),
            ["0/myteam.io/v1/Foo", "0/myteam.io/v1beta1/Foo"]
        );
        assert!(stores.snapshot().iter().all(|s| s.resource() == "foos"));
        let mut out = Vec::new();
        stores.write_all(&mut out, Format::Text004);
        assert!(
            out.is_empty(),
            "no objects listed from an unreachable server"
        );
        drop(runtime);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(stores.keys().len(), 2, "stores stay readable after a stop");
    }

    #[test]
    fn allow_and_deny_lists_apply_to_custom_families() {
        let mut r = resource("myteam.io", "v1", "Foo");
        let mut second = r.metrics[0].clone();
        second.name = "y".into();
        r.metrics.push(second);
        let all = compile(&r, &r.group_version_kind, &CustomResourceOptions::default()).unwrap();
        assert_eq!(all.families.len(), 2);
        let options = CustomResourceOptions {
            family_enabled: Some(Arc::new(|name: &str, _| name != "kube_customresource_y")),
            ..Default::default()
        };
        let some = compile(&r, &r.group_version_kind, &options).unwrap();
        let names: Vec<&str> = some.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["kube_customresource_x"]);
    }

    #[test]
    fn stores_render_like_builtin_stores() {
        let r = resource("myteam.io", "v1", "Foo");
        let compiled = CompiledResource::compile(&r, &r.group_version_kind).unwrap();
        let store = Arc::new(compiled.new_store("foos"));
        assert_eq!(store.resource(), "foos");
        let stores = CustomResourceStores::default();
        stores.insert("0/myteam.io/v1/Foo".into(), store.clone());
        let obj = serde_json::json!({"metadata": {"uid": "u1"}, "spec": {"replicas": 3}});
        store.upsert("u1", compiled.render(&obj));
        let mut out = Vec::new();
        stores.write_all(&mut out, Format::Text004);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# HELP kube_customresource_x \n# TYPE kube_customresource_x gauge\n\
             kube_customresource_x{customresource_group=\"myteam.io\",customresource_kind=\"Foo\",customresource_version=\"v1\"} 3\n"
        );
        stores.remove("0/myteam.io/v1/Foo");
        assert!(stores.snapshot().is_empty());
    }
}
