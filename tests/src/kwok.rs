//! kwok, the data plane `hack/local-up.sh` runs: Nodes it keeps Ready, the pods scheduled
//! onto them it runs, and their kubelet-style resource metrics (scraped as `job="kwok"`),
//! computed from the pods' usage annotations.

use anyhow::{Result, anyhow};
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::workload::Workload;

/// A pod's CPU usage, as a quantity (`250m`); kwok reports 1m without it.
pub const KWOK_USAGE_CPU: &str = "kwok.x-k8s.io/usage-cpu";
/// A pod's memory working set, as a quantity (`64Mi`); kwok reports 1Mi without it.
pub const KWOK_USAGE_MEMORY: &str = "kwok.x-k8s.io/usage-memory";

// Beside the helpers rather than in cluster.rs, so the cluster module needs nothing from here.
impl Cluster {
    /// The Nodes kwok manages (`KWOK_NODES` in the env file).
    pub fn kwok_nodes(&self) -> Result<Vec<String>> {
        Ok(self
            .env
            .var("KWOK_NODES")?
            .split(',')
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// The toleration a pod needs to run on a kwok Node, from their taint (`KWOK_TOLERATION`
    /// in the env file, `key=value:effect`), as a PodSpec `tolerations` item.
    pub fn kwok_toleration(&self) -> Result<Value> {
        let taint = self.env.var("KWOK_TOLERATION")?;
        let parse = || {
            let (key_value, effect) = taint.split_once(':')?;
            let (key, value) = key_value.split_once('=')?;
            Some(json!({"key": key, "operator": "Equal", "value": value, "effect": effect}))
        };
        parse().ok_or_else(|| anyhow!("KWOK_TOLERATION={taint:?} is not key=value:effect"))
    }

    /// A Deployment whose pods run on kwok's Nodes: label `app=<name>`, one container `main`
    /// requesting 100m of CPU and 64Mi of memory, the pod template carrying `annotations`
    /// (usage, say, which every pod then reports).
    pub fn kwok_deployment(
        &self,
        name: &str,
        replicas: i32,
        annotations: Value,
    ) -> Result<Deployment> {
        Workload::deployment(name)
            .replicas(replicas)
            .container("main", "100m", "64Mi")
            .on_kwok(self)?
            .pod_annotations(annotations)
            .deployment_object()
    }
}
