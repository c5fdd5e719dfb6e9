//! Every resource ksm can export, and how to start watching one by its `--resources` name.

use std::fmt::Debug;
use std::sync::Arc;

use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::families::{self, FamilyContext, ResourceFamilies};
use crate::store::MetricsStore;
use crate::telemetry::Telemetry;
use crate::watch::{ListSettings, ObjectOwnership, WatchContext, run_watcher};

/// Whether a family (by name, and whether it is opt-in) is exported.
pub type FamilyPredicate = Arc<dyn Fn(&str, bool) -> bool + Send + Sync>;

/// Where and what to watch for one resource.
pub struct ResourcePlan {
    pub client: Client,
    /// Namespaces to watch; empty means all (cluster-scoped resources ignore it).
    pub namespaces: Vec<String>,
    /// Field selector for namespaced resources watched cluster-wide, e.g. a namespace denylist.
    pub namespace_field_selector: Option<String>,
    /// Extra field selector for this resource (pods on one node with `--node`).
    pub field_selector: Option<String>,
    pub ctx: FamilyContext,
    pub family_enabled: FamilyPredicate,
    pub ownership: Arc<dyn ObjectOwnership>,
    pub telemetry: Telemetry,
    pub list: ListSettings,
    /// Called once per watcher when its first list is complete.
    pub on_synced: Arc<dyn Fn() + Send + Sync>,
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
    let families = Arc::new(families);
    let enabled = Arc::new(enabled);
    let ctx = Arc::new(plan.ctx.clone());
    let mut targets: Vec<(Api<K>, Option<String>)> = Vec::new();
    let selectors = |ns_selector: Option<&str>| -> Option<String> {
        let parts: Vec<&str> = ns_selector
            .into_iter()
            .chain(plan.field_selector.as_deref())
            .collect();
        (!parts.is_empty()).then(|| parts.join(","))
    };
    match scope {
        Some(namespaced) if !plan.namespaces.is_empty() => {
            for ns in &plan.namespaces {
                targets.push((namespaced(plan.client.clone(), ns), selectors(None)));
            }
        }
        Some(_) => targets.push((
            Api::all(plan.client.clone()),
            selectors(plan.namespace_field_selector.as_deref()),
        )),
        None => targets.push((Api::all(plan.client.clone()), selectors(None))),
    }
    let mut tasks = Vec::with_capacity(targets.len());
    for (api, fields) in targets {
        let config = plan.list.watcher_config(fields.as_deref());
        let on_synced = plan.on_synced.clone();
        let wc = WatchContext {
            families: families.clone(),
            enabled: enabled.clone(),
            ctx: ctx.clone(),
            store: store.clone(),
            ownership: plan.ownership.clone(),
            telemetry: plan.telemetry.clone(),
            list: plan.list,
            on_synced: Box::new(move || on_synced()),
        };
        tasks.push(tokio::spawn(run_watcher(api, config, wc)));
    }
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
