//! The recommenders that find objects serving nothing: IdleNode (a node with little usage
//! or few requests), Service (an orphan LoadBalancer) and Volume (an unmounted
//! PersistentVolume).

use k8s_openapi::api::core::v1::{PersistentVolume, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};

use super::{Output, TargetRun};
use crate::controller::recommendation_rule::status::RunError;
use crate::datasource::{NetDirection, NodeUtilization, pods_net_query};
use crate::recommender::{Config, idlenode, service, volume};

impl TargetRun<'_> {
    pub(super) async fn idle_node(&self, config: &Config) -> Result<Output, RunError> {
        let cfg = idlenode::IdleNodeConfig::from_config(config)
            .map_err(crate::recommender::RecommendError::from)?;
        let api: Api<Pod> = Api::all(self.client.clone());
        let pods = api
            .list(&ListParams::default().fields(&format!("spec.nodeName={}", self.target.name)))
            .await
            .map_err(|e| RunError::Target(format!("listing pods on the node: {e}")))?;
        let owners: Vec<Vec<String>> = pods
            .items
            .iter()
            .filter(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .map(|p| {
                p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|o| o.kind.clone())
                    .collect()
            })
            .collect();
        let owner_refs: Vec<Vec<&str>> = owners
            .iter()
            .map(|o| o.iter().map(String::as_str).collect())
            .collect();
        let owner_slices: Vec<&[&str]> = owner_refs.iter().map(Vec::as_slice).collect();
        // Only the checks with a threshold are queried, as Crane does, and none for a node
        // the DaemonSet rule already calls idle.
        let node = &self.target.name;
        let by_daemonsets = idlenode::only_daemonset_pods(&owner_slices);
        let checked = |threshold: f64, what: NodeUtilization| async move {
            if threshold > 0.0 && !by_daemonsets {
                self.fixed_window_series(&what.query(node)).await
            } else {
                Ok(Vec::new())
            }
        };
        let (cpu_usage, memory_usage, cpu_request, memory_request) = tokio::try_join!(
            checked(cfg.cpu_usage_utilization, NodeUtilization::CpuUsage),
            checked(cfg.memory_usage_utilization, NodeUtilization::MemoryUsage),
            checked(cfg.cpu_request_utilization, NodeUtilization::CpuRequest),
            checked(
                cfg.memory_request_utilization,
                NodeUtilization::MemoryRequest
            ),
        )?;
        let input = idlenode::IdleNodeInput {
            pod_owner_kinds: &owner_slices,
            cpu_usage_utilization: &cpu_usage,
            memory_usage_utilization: &memory_usage,
            cpu_request_utilization: &cpu_request,
            memory_request_utilization: &memory_request,
        };
        Ok(Output {
            proposal: idlenode::recommend(&cfg, &self.target.name, &input)?,
            ..Default::default()
        })
    }

    pub(super) async fn service(&self, config: &Config) -> Result<Output, RunError> {
        let cfg = service::ServiceConfig::from_config(config)
            .map_err(crate::recommender::RecommendError::from)?;
        let svc: Service =
            serde_json::from_value(serde_json::to_value(&self.target.object).unwrap_or_default())
                .map_err(|e| RunError::Target(format!("reading the Service: {e}")))?;
        let spec = svc.spec.unwrap_or_default();
        let slices: Api<EndpointSlice> =
            Api::namespaced(self.client.clone(), &self.target.namespace);
        let addresses: usize = slices
            .list(
                &ListParams::default()
                    .labels(&format!("kubernetes.io/service-name={}", self.target.name)),
            )
            .await
            .map_err(|e| RunError::Target(format!("listing EndpointSlices: {e}")))?
            .items
            .iter()
            .flat_map(|s| s.endpoints.iter().flatten())
            .map(|e| e.addresses.len())
            .sum();
        let pods: Vec<String> = match spec.selector.filter(|s| !s.is_empty()) {
            None => Vec::new(),
            Some(sel) => {
                let label = sel
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.target.namespace);
                api.list_metadata(&ListParams::default().labels(&label))
                    .await
                    .map_err(|e| RunError::Target(format!("listing pods: {e}")))?
                    .items
                    .into_iter()
                    .filter_map(|p| p.metadata.name)
                    .collect()
            }
        };
        let service_type = spec.type_.as_deref().unwrap_or("ClusterIP");
        // Traffic is read only when it can decide: an orphan LoadBalancer with pods behind it
        // and a threshold set.
        let names: Vec<&str> = pods.iter().map(String::as_str).collect();
        let traffic = |threshold: f64, direction: NetDirection| {
            let wanted = threshold > 0.0
                && service_type == "LoadBalancer"
                && addresses == 0
                && !names.is_empty();
            let query = pods_net_query(direction, &self.target.namespace, &names);
            async move {
                if wanted {
                    self.fixed_window_series(&query).await
                } else {
                    Ok(Vec::new())
                }
            }
        };
        let (receive, transmit) = tokio::try_join!(
            traffic(cfg.net_receive_bytes, NetDirection::Receive),
            traffic(cfg.net_transfer_bytes, NetDirection::Transmit),
        )?;
        let input = service::ServiceInput {
            service_type,
            endpoint_addresses: addresses,
            pods: pods.len(),
            net_receive_bytes: &receive,
            net_transfer_bytes: &transmit,
        };
        Ok(Output {
            proposal: service::recommend(&cfg, &self.target.name, &input)?,
            ..Default::default()
        })
    }

    pub(super) async fn volume(&self) -> Result<Output, RunError> {
        let pv: PersistentVolume =
            serde_json::from_value(serde_json::to_value(&self.target.object).unwrap_or_default())
                .map_err(|e| RunError::Target(format!("reading the PersistentVolume: {e}")))?;
        let claim = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        let claim_ns = claim.and_then(|c| c.namespace.clone());
        let claim_name = claim.and_then(|c| c.name.clone());
        let mut mounted: Vec<String> = Vec::new();
        if let Some(ns) = &claim_ns {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
            for p in api
                .list(&ListParams::default())
                .await
                .map_err(|e| RunError::Target(format!("listing pods: {e}")))?
                .items
            {
                for v in p
                    .spec
                    .into_iter()
                    .flat_map(|s| s.volumes.unwrap_or_default())
                {
                    if let Some(c) = v.persistent_volume_claim {
                        mounted.push(c.claim_name);
                    }
                }
            }
        }
        Ok(Output {
            proposal: volume::recommend(
                &self.target.name,
                claim_name.as_deref(),
                mounted.iter().map(String::as_str),
            )?,
            ..Default::default()
        })
    }
}
