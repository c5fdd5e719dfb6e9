//! Every resource ksm can export, and how to start watching one by its `--resources` name.

use std::fmt::Debug;
use std::sync::Arc;

use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::families::{self, FamilyContext, ResourceFamilies};
use crate::store::MetricsStore;
use crate::watch::{OnSynced, RenderObject, Scope, WatchSettings, WatchedResource};

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
type NamespacedApi<K> = Option<fn(Client, &str) -> Api<K>>;

fn namespaced<K>(client: Client, ns: &str) -> Api<K>
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

impl<K: Send + Sync> RenderObject<K> for FamilyRenderer<K> {
    fn render(&self, obj: &K) -> Option<Vec<Vec<u8>>> {
        Some(self.families.render(obj, &self.ctx, &self.enabled))
    }
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

/// Starts the watchers of one resource by its `--resources` name; `None` for an unknown name.
pub fn start(name: &str, plan: &ResourcePlan) -> Option<StartedResource> {
    use families::*;
    Some(match name {
        "certificatesigningrequests" => {
            start_typed(certificatesigningrequest::families(), None, plan)
        }
        "clusterrolebindings" => start_typed(clusterrolebinding::families(), None, plan),
        "clusterroles" => start_typed(clusterrole::families(), None, plan),
        "configmaps" => start_typed(configmap::families(), Some(namespaced), plan),
        "cronjobs" => start_typed(cronjob::families(), Some(namespaced), plan),
        "daemonsets" => start_typed(daemonset::families(), Some(namespaced), plan),
        "deployments" => start_typed(deployment::families(), Some(namespaced), plan),
        "endpoints" => start_typed(endpoint::families(), Some(namespaced), plan),
        "endpointslices" => start_typed(endpointslice::families(), Some(namespaced), plan),
        "horizontalpodautoscalers" => {
            start_typed(horizontalpodautoscaler::families(), Some(namespaced), plan)
        }
        "ingressclasses" => start_typed(ingressclass::families(), None, plan),
        "ingresses" => start_typed(ingress::families(), Some(namespaced), plan),
        "jobs" => start_typed(job::families(), Some(namespaced), plan),
        "leases" => start_typed(lease::families(), Some(namespaced), plan),
        "limitranges" => start_typed(limitrange::families(), Some(namespaced), plan),
        "mutatingadmissionpolicies" => start_typed(mutatingadmissionpolicy::families(), None, plan),
        "mutatingadmissionpolicybindings" => {
            start_typed(mutatingadmissionpolicybinding::families(), None, plan)
        }
        "mutatingwebhookconfigurations" => {
            start_typed(mutatingwebhookconfiguration::families(), None, plan)
        }
        "namespaces" => start_typed(namespace::families(), None, plan),
        "networkpolicies" => start_typed(networkpolicy::families(), Some(namespaced), plan),
        "nodes" => start_typed(node::families(), None, plan),
        "persistentvolumeclaims" => {
            start_typed(persistentvolumeclaim::families(), Some(namespaced), plan)
        }
        "persistentvolumes" => start_typed(persistentvolume::families(), None, plan),
        "poddisruptionbudgets" => {
            start_typed(poddisruptionbudget::families(), Some(namespaced), plan)
        }
        "pods" => start_typed(pod::families(), Some(namespaced), plan),
        "replicasets" => start_typed(replicaset::families(), Some(namespaced), plan),
        "replicationcontrollers" => {
            start_typed(replicationcontroller::families(), Some(namespaced), plan)
        }
        "resourcequotas" => start_typed(resourcequota::families(), Some(namespaced), plan),
        "rolebindings" => start_typed(rolebinding::families(), Some(namespaced), plan),
        "roles" => start_typed(role::families(), Some(namespaced), plan),
        "secrets" => start_typed(secret::families(), Some(namespaced), plan),
        "serviceaccounts" => start_typed(serviceaccount::families(), Some(namespaced), plan),
        "services" => start_typed(service::families(), Some(namespaced), plan),
        "statefulsets" => start_typed(statefulset::families(), Some(namespaced), plan),
        "storageclasses" => start_typed(storageclass::families(), None, plan),
        "validatingadmissionpolicies" => {
            start_typed(validatingadmissionpolicy::families(), None, plan)
        }
        "validatingadmissionpolicybindings" => {
            start_typed(validatingadmissionpolicybinding::families(), None, plan)
        }
        "validatingwebhookconfigurations" => {
            start_typed(validatingwebhookconfiguration::families(), None, plan)
        }
        "volumeattachments" => start_typed(volumeattachment::families(), None, plan),
        _ => return None,
    })
}
