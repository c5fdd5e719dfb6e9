//! Every resource ksm can export ([`RESOURCES`], the one table of them), and how to start
//! watching one by its `--resources` name.

use std::fmt::Debug;
use std::sync::Arc;

use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::families::{self, FamilyContext, FamilyMeta, ResourceFamilies};
use crate::store::MetricsStore;
use crate::watch::{Decoded, OnSynced, RenderObject, Scope, WatchSettings, WatchedResource};

/// Whether a family (by name, and whether it is opt-in) is exported.
pub type FamilyPredicate = Arc<dyn Fn(&str, bool) -> bool + Send + Sync>;

/// What to watch for one resource, besides what every watcher shares.
pub struct ResourcePlan {
    pub watch: WatchSettings,
    /// Extra field selector for this resource (pods on one node with `--node`).
    pub field_selector: Option<String>,
    pub ctx: FamilyContext,
    pub family_enabled: FamilyPredicate,
    /// Called once per watcher when its first list is complete.
    pub on_synced: OnSynced,
}

pub struct StartedResource {
    pub store: Arc<MetricsStore>,
    /// One task per watcher; aborting them stops the resource (on reload or re-sharding).
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// How to build a namespaced Api for a namespaced resource; `None` for cluster-scoped ones.
/// Built-in objects are watched as [`Decoded`], so one the model cannot hold is dropped
/// loudly instead of failing its whole list.
type NamespacedApi<K> = Option<fn(Client, &str) -> Api<Decoded<K>>>;

fn namespaced<K>(client: Client, ns: &str) -> Api<Decoded<K>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(client, ns)
}

/// A built-in resource's enabled families, with the settings they read.
struct FamilyRenderer<K> {
    families: ResourceFamilies<K>,
    enabled: Vec<usize>,
    ctx: FamilyContext,
}

impl<K: Send + Sync> RenderObject<Decoded<K>> for FamilyRenderer<K> {
    fn render(&self, obj: &Decoded<K>) -> Result<Vec<Vec<u8>>, String> {
        match obj {
            Decoded::Object(k) => Ok(self.families.render(k, &self.ctx, &self.enabled)),
            Decoded::Undecodable { error, .. } => Err(format!("cannot be decoded: {error}")),
        }
    }
}

/// How upstream names a resource in its self-metrics: the Go type of its objects
/// (`%T` of `*v1.Pod`, `*v2.HorizontalPodAutoscaler`).
fn go_type_name<K: Resource<DynamicType = ()>>() -> String {
    format!("*{}.{}", K::version(&()), K::kind(&()))
}

/// [`go_type_name`] of the objects a families module renders.
fn go_type_name_of<K: Resource<DynamicType = ()>>(
    _families: fn() -> ResourceFamilies<K>,
) -> String {
    go_type_name::<K>()
}

fn start_typed<K>(
    families: ResourceFamilies<K>,
    scope: NamespacedApi<K>,
    plan: &ResourcePlan,
) -> StartedResource
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let enabled: Vec<usize> = (0..families.families.len())
        .filter(|&i| (plan.family_enabled)(families.families[i].name, families.families[i].opt_in))
        .collect();
    let store = Arc::new(MetricsStore::new(&families, &enabled));
    let resource = WatchedResource {
        scope: match scope {
            Some(_) => Scope::Namespaced,
            None => Scope::Cluster,
        },
        field_selector: plan.field_selector.clone(),
        telemetry_label: go_type_name::<K>(),
        render: Arc::new(FamilyRenderer {
            families,
            enabled,
            ctx: plan.ctx.clone(),
        }),
        store: store.clone(),
    };
    let api = move |client: Client, ns: Option<&str>| match (scope, ns) {
        (Some(namespaced), Some(ns)) => namespaced(client, ns),
        _ => Api::all(client),
    };
    let tasks = plan.watch.spawn(&resource, api, plan.on_synced.clone());
    StartedResource { store, tasks }
}

/// Whether a resource is exported when `--resources` is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enablement {
    /// One of upstream's `DefaultResources`.
    Default,
    /// Exported only when named in `--resources`.
    OptIn,
}

/// One resource ksm can export: a row of [`RESOURCES`].
pub struct ResourceKind {
    /// The `--resources` name (`pods`, `ingressclasses`).
    pub name: &'static str,
    pub enablement: Enablement,
    pub scope: Scope,
    /// The module of its families, which is upstream's resource name (`pod`, `ingressclass`).
    pub module: &'static str,
    families: fn() -> Vec<FamilyMeta>,
    telemetry_label: fn() -> String,
    start: fn(&ResourcePlan) -> StartedResource,
}

impl ResourceKind {
    /// The metadata of every family of this resource, in registration order.
    pub fn families(&self) -> Vec<FamilyMeta> {
        (self.families)()
    }

    /// The `resource` label of its self-metrics (`*v1.Pod`), as upstream writes it.
    pub fn telemetry_label(&self) -> String {
        (self.telemetry_label)()
    }
}

/// Proves at compile time that a resource the table calls cluster-scoped is one (a
/// namespaced one would not compile with [`namespaced`] either way round).
fn cluster_scoped<K>(families: ResourceFamilies<K>) -> ResourceFamilies<K>
where
    K: Resource<Scope = k8s_openapi::ClusterResourceScope>,
{
    families
}

/// Writes [`RESOURCES`] from one line per resource: name, families module, enablement, scope.
macro_rules! resources {
    ($($name:literal => $module:ident, $enablement:ident, $scope:ident;)*) => {
        /// Every resource ksm can export, sorted by name: the one list the `--resources`
        /// names, the defaults, the families and how each is watched are derived from.
        pub const RESOURCES: [ResourceKind; 39] = [$(ResourceKind {
            name: $name,
            enablement: Enablement::$enablement,
            scope: Scope::$scope,
            module: stringify!($module),
            families: || families::$module::families().metadata(stringify!($module)),
            telemetry_label: || go_type_name_of(families::$module::families),
            start: |plan| resources!(@start $scope, $module, plan),
        }),*];
    };
    (@start Namespaced, $module:ident, $plan:ident) => {
        start_typed(families::$module::families(), Some(namespaced), $plan)
    };
    (@start Cluster, $module:ident, $plan:ident) => {
        start_typed(cluster_scoped(families::$module::families()), None, $plan)
    };
}

resources! {
    "certificatesigningrequests" => certificatesigningrequest, Default, Cluster;
    "clusterrolebindings" => clusterrolebinding, OptIn, Cluster;
    "clusterroles" => clusterrole, OptIn, Cluster;
    "configmaps" => configmap, Default, Namespaced;
    "cronjobs" => cronjob, Default, Namespaced;
    "daemonsets" => daemonset, Default, Namespaced;
    "deployments" => deployment, Default, Namespaced;
    "endpoints" => endpoint, OptIn, Namespaced;
    "endpointslices" => endpointslice, Default, Namespaced;
    "horizontalpodautoscalers" => horizontalpodautoscaler, Default, Namespaced;
    "ingressclasses" => ingressclass, OptIn, Cluster;
    "ingresses" => ingress, Default, Namespaced;
    "jobs" => job, Default, Namespaced;
    "leases" => lease, Default, Namespaced;
    "limitranges" => limitrange, Default, Namespaced;
    "mutatingadmissionpolicies" => mutatingadmissionpolicy, Default, Cluster;
    "mutatingadmissionpolicybindings" => mutatingadmissionpolicybinding, Default, Cluster;
    "mutatingwebhookconfigurations" => mutatingwebhookconfiguration, Default, Cluster;
    "namespaces" => namespace, Default, Cluster;
    "networkpolicies" => networkpolicy, Default, Namespaced;
    "nodes" => node, Default, Cluster;
    "persistentvolumeclaims" => persistentvolumeclaim, Default, Namespaced;
    "persistentvolumes" => persistentvolume, Default, Cluster;
    "poddisruptionbudgets" => poddisruptionbudget, Default, Namespaced;
    "pods" => pod, Default, Namespaced;
    "replicasets" => replicaset, Default, Namespaced;
    "replicationcontrollers" => replicationcontroller, Default, Namespaced;
    "resourcequotas" => resourcequota, Default, Namespaced;
    "rolebindings" => rolebinding, OptIn, Namespaced;
    "roles" => role, OptIn, Namespaced;
    "secrets" => secret, Default, Namespaced;
    "serviceaccounts" => serviceaccount, OptIn, Namespaced;
    "services" => service, Default, Namespaced;
    "statefulsets" => statefulset, Default, Namespaced;
    "storageclasses" => storageclass, Default, Cluster;
    "validatingadmissionpolicies" => validatingadmissionpolicy, Default, Cluster;
    "validatingadmissionpolicybindings" => validatingadmissionpolicybinding, Default, Cluster;
    "validatingwebhookconfigurations" => validatingwebhookconfiguration, Default, Cluster;
    "volumeattachments" => volumeattachment, Default, Cluster;
}

/// Whether a row is selected by an enablement filter (`None`: every row).
const fn selected(kind: &ResourceKind, filter: Option<Enablement>) -> bool {
    matches!(
        (filter, kind.enablement),
        (None, _)
            | (Some(Enablement::Default), Enablement::Default)
            | (Some(Enablement::OptIn), Enablement::OptIn)
    )
}

const fn count(filter: Option<Enablement>) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < RESOURCES.len() {
        if selected(&RESOURCES[i], filter) {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn names<const N: usize>(filter: Option<Enablement>) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < RESOURCES.len() {
        if selected(&RESOURCES[i], filter) {
            out[n] = RESOURCES[i].name;
            n += 1;
        }
        i += 1;
    }
    out
}

/// Resources enabled when `--resources` is not given (upstream `DefaultResources`), sorted.
pub const DEFAULT_RESOURCES: [&str; count(Some(Enablement::Default))] =
    names(Some(Enablement::Default));

/// Resources that exist but are off by default, sorted.
pub const OPTIONAL_RESOURCES: [&str; count(Some(Enablement::OptIn))] =
    names(Some(Enablement::OptIn));

/// Every valid `--resources` name (upstream `availableStores`), sorted.
pub const ALL_RESOURCES: [&str; count(None)] = names(None);

/// The row of a `--resources` name.
pub fn resource_kind(name: &str) -> Option<&'static ResourceKind> {
    RESOURCES.iter().find(|r| r.name == name)
}

/// Starts the watchers of one resource by its `--resources` name; `None` for an unknown name.
pub fn start(name: &str, plan: &ResourcePlan) -> Option<StartedResource> {
    resource_kind(name).map(|kind| (kind.start)(plan))
}

/// Every family ksm can emit (opt-in ones included), resource by resource.
pub fn all_family_metadata() -> Vec<FamilyMeta> {
    RESOURCES.iter().flat_map(ResourceKind::families).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_names_what_its_families_export() {
        assert!(RESOURCES.windows(2).all(|w| w[0].name < w[1].name));
        for kind in &RESOURCES {
            let families = kind.families();
            assert!(!families.is_empty(), "{}", kind.name);
            assert!(
                families
                    .iter()
                    .all(|f| f.resource == kind.name && f.module == kind.module),
                "{}",
                kind.name
            );
        }
        assert_eq!(DEFAULT_RESOURCES.len(), 32);
        assert_eq!(
            resource_kind("pods").map(|k| k.scope),
            Some(Scope::Namespaced)
        );
        assert_eq!(
            resource_kind("nodes").map(|k| k.scope),
            Some(Scope::Cluster)
        );
        assert!(resource_kind("widgets").is_none());
        let label = |name: &str| resource_kind(name).map(ResourceKind::telemetry_label);
        assert_eq!(label("configmaps").as_deref(), Some("*v1.ConfigMap"));
        assert_eq!(
            label("horizontalpodautoscalers").as_deref(),
            Some("*v2.HorizontalPodAutoscaler")
        );
        assert_eq!(label("endpoints").as_deref(), Some("*v1.Endpoints"));
    }
}
