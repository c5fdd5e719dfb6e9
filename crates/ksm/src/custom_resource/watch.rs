//! Runtime: one store per configured custom resource, following discovery, fed by the
//! list/watch loop built-in resources use ([`crate::watch`]).
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
use std::sync::Arc;

use ferrocrane_core::kube::{ResourceMapper, ResourceMapping, SharedMapper};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use tokio::task::JoinHandle;

use super::config::{CustomResourceStateConfig, GroupVersionKind, Resource};
use super::metrics::CompiledResource;
use crate::registry::FamilyPredicate;
use crate::store::CustomResourceStores;
use crate::watch::{RenderObject, Scope, WatchSettings, WatchedResource};

/// What only custom resources need; the rest is the engine's [`WatchSettings`].
#[derive(Clone, Default)]
pub struct CustomResourceOptions {
    /// `--metric-allowlist` / `--metric-denylist` (custom families are never opt-in);
    /// `None` exports every configured family.
    pub family_enabled: Option<FamilyPredicate>,
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

/// The watcher tasks of each resolved GVK; aborted when dropped, so stopping the
/// supervisor stops everything it started.
#[derive(Default)]
struct Running(BTreeMap<String, Vec<JoinHandle<()>>>);

impl Drop for Running {
    fn drop(&mut self) {
        for tasks in self.0.values() {
            abort(tasks);
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

    pub fn scope(&self) -> Scope {
        if self.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        }
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

/// Starts the custom-resource runtime. Every configured GVK discovery already serves gets
/// its store and watchers before this returns (so a reload can tell which stores it
/// replaces); a supervisor task then resolves them again on each discovery change, starts
/// watchers for newly served GVKs and stops those discovery no longer lists. When the
/// mapper's refresher stops, the supervisor keeps the running watchers going.
pub fn run_custom_resources(
    config: CustomResourceStateConfig,
    mapper: SharedMapper,
    watch: WatchSettings,
    options: CustomResourceOptions,
) -> CustomResourceRuntime {
    let mut supervisor = Supervisor {
        config,
        watch,
        options,
        stores: CustomResourceStores::default(),
        running: Running::default(),
        reported_missing: HashSet::new(),
    };
    let snapshot = mapper.current();
    if !snapshot.is_empty() {
        supervisor.reconcile(&snapshot);
    }
    let stores = supervisor.stores.clone();
    let supervisor = tokio::spawn(supervisor.run(mapper));
    CustomResourceRuntime { stores, supervisor }
}

/// Owns the watchers of every resolved GVK; what the supervisor task runs.
struct Supervisor {
    config: CustomResourceStateConfig,
    watch: WatchSettings,
    options: CustomResourceOptions,
    stores: CustomResourceStores,
    running: Running,
    /// Configuration entries already logged as not (yet) served.
    reported_missing: HashSet<usize>,
}

impl Supervisor {
    async fn run(mut self, mut mapper: SharedMapper) {
        loop {
            match mapper.changed().await {
                Ok(snapshot) if snapshot.is_empty() => {}
                Ok(snapshot) => self.reconcile(&snapshot),
                Err(e) => {
                    // The last mapping stays valid: running watchers keep their stores, and
                    // this task must live on because dropping `running` would stop them.
                    tracing::info!(error = %e, "custom resources: discovery stopped; no further CRDs will be picked up");
                    std::future::pending::<()>().await;
                }
            }
        }
    }

    fn reconcile(&mut self, mapper: &ResourceMapper) {
        let mut wanted: BTreeSet<String> = BTreeSet::new();
        for (index, resource) in self.config.spec.resources.iter().enumerate() {
            let resolved = resolve(index, resource, mapper);
            if resolved.is_empty() {
                if self.reported_missing.insert(index) {
                    tracing::warn!(
                        gvk = %resource.group_version_kind,
                        "configured custom resource not found in discovery; waiting for its CRD"
                    );
                }
                continue;
            }
            self.reported_missing.remove(&index);
            for r in resolved {
                let key = r.key();
                wanted.insert(key.clone());
                if self.running.0.contains_key(&key) {
                    continue;
                }
                let compiled = match compile(resource, &r.gvk, &self.options) {
                    Ok(c) => Arc::new(c),
                    Err(e) => {
                        // Validated configs always compile; never let one entry stop the rest.
                        tracing::error!(error = %e, "custom resource configuration does not compile");
                        continue;
                    }
                };
                let store = Arc::new(compiled.new_store(&r.plural));
                self.stores.insert(key.clone(), store.clone());
                tracing::info!(gvk = %r.gvk, plural = %r.plural, "watching custom resource");
                let watched = WatchedResource {
                    scope: r.scope(),
                    // Upstream would AND `--node`'s `spec.nodeName` selector here too, which
                    // a CRD rejects unless it declares that field selectable; it is the pods'.
                    field_selector: None,
                    render: compiled,
                    telemetry_label: r.plural.clone(),
                    store,
                };
                let ar = r.api_resource();
                let api = move |client: Client, ns: Option<&str>| match ns {
                    Some(ns) => Api::namespaced_with(client, ns, &ar),
                    None => Api::all_with(client, &ar),
                };
                // Readiness never waits for custom resources: their CRDs may never exist.
                let tasks = self.watch.spawn(&watched, api, Arc::new(|| {}));
                self.running.0.insert(key, tasks);
            }
        }
        let stopped: Vec<String> = self
            .running
            .0
            .keys()
            .filter(|key| !wanted.contains(*key))
            .cloned()
            .collect();
        for key in stopped {
            tracing::info!(
                key,
                "custom resource no longer served; stopping its watcher"
            );
            if let Some(tasks) = self.running.0.remove(&key) {
                abort(&tasks);
            }
            if let Some(store) = self.stores.remove(&key) {
                let resource = store.resource();
                // Another served version of the same kind shares the label.
                if !self
                    .stores
                    .snapshot()
                    .iter()
                    .any(|s| s.resource() == resource)
                {
                    self.watch.telemetry.forget_resources([resource]);
                }
            }
        }
    }
}

fn abort(tasks: &[JoinHandle<()>]) {
    for task in tasks {
        task.abort();
    }
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

/// A custom object is rendered from its JSON form, which is what the path language reads.
impl RenderObject<DynamicObject> for CompiledResource {
    fn render(&self, obj: &DynamicObject) -> Result<Vec<Vec<u8>>, String> {
        let value = serde_json::to_value(obj)
            .map_err(|e| format!("{} object not representable as JSON: {e}", self.gvk))?;
        Ok(CompiledResource::render(self, &value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::custom_resource::config::{Each, Gauge, Generator, PathSpec};
    use crate::sharding::Sharding;
    use crate::telemetry::Telemetry;
    use crate::watch::{ListSettings, NamespacePlan, WatchContext, WatchTarget, apply_events};
    use ferrocrane_core::exposition::Format;
    use kube::runtime::watcher::{self, Event};

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

    fn settings(client: Client, namespaces: NamespacePlan) -> WatchSettings {
        WatchSettings {
            client,
            namespaces,
            ownership: Arc::new(Sharding { shard: 0, total: 1 }),
            telemetry: Telemetry::new().expect("telemetry"),
            list: ListSettings::default(),
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
            config,
            SharedMapper::fixed(mapper()),
            settings(client, NamespacePlan::default()),
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

    #[test]
    fn custom_resources_are_planned_with_the_namespace_denylist() {
        let plan = NamespacePlan {
            namespaces: vec![],
            denylist_selector: Some("metadata.namespace!=kube-system".into()),
        };
        let foo = &resolve(0, &resource("myteam.io", "v1", "Foo"), &mapper())[0];
        assert_eq!(
            plan.targets(foo.scope(), None),
            [WatchTarget {
                namespace: None,
                field_selector: Some("metadata.namespace!=kube-system".into()),
            }]
        );
        let listed = NamespacePlan {
            namespaces: vec!["a".into(), "kube-system".into()],
            ..plan.clone()
        };
        assert!(
            listed
                .targets(foo.scope(), None)
                .iter()
                .all(|t| t.field_selector.as_deref() == Some("metadata.namespace!=kube-system")),
        );
        let cluster_scoped = Resolved {
            namespaced: false,
            ..foo.clone()
        };
        assert_eq!(
            listed.targets(cluster_scoped.scope(), None),
            [WatchTarget {
                namespace: None,
                field_selector: None,
            }]
        );
    }

    fn dynamic(name: &str, uid: &str, replicas: i64) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "myteam.io/v1",
            "kind": "Foo",
            "metadata": {"name": name, "namespace": "ns", "uid": uid},
            "spec": {"replicas": replicas},
        }))
        .expect("object")
    }

    #[tokio::test]
    async fn custom_resource_watches_record_the_builtin_telemetry() {
        let r = resource("myteam.io", "v1", "Foo");
        let compiled = Arc::new(CompiledResource::compile(&r, &r.group_version_kind).unwrap());
        let store = Arc::new(compiled.new_store("foos"));
        let telemetry = Telemetry::new().expect("telemetry");
        let wc = WatchContext {
            render: compiled,
            store: store.clone(),
            telemetry_label: "foos".into(),
            ownership: Arc::new(Sharding { shard: 0, total: 1 }),
            telemetry: telemetry.clone(),
            list: ListSettings::default(),
            on_synced: Box::new(|| {}),
        };
        let events = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(dynamic("a", "u1", 1))),
            Ok(Event::InitDone),
            Ok(Event::Apply(dynamic("b", "u2", 2))),
            Err(watcher::Error::NoResourceVersion),
        ];
        apply_events(futures::stream::iter(events), wc).await;
        assert_eq!(store.len(), 2);
        let text = telemetry.exposition();
        for line in [
            "kube_state_metrics_list_total{resource=\"foos\",result=\"success\"} 1",
            "kube_state_metrics_watch_total{resource=\"foos\",result=\"success\"} 1",
            "kube_state_metrics_watch_total{resource=\"foos\",result=\"error\"} 1",
            "kube_state_metrics_list_objects{resource=\"foos\"} 2",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
