//! Pods without a kubelet: nothing runs them, so tests that need a Running pod (with
//! container statuses, restarts, an OOM kill) write the status a kubelet would write.

use anyhow::Result;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{Patch, PatchParams};

/// Creates a Node nothing runs (no kubelet, not kwok's) with `labels`, its status reporting
/// 4 CPUs, 8Gi and 110 pods of capacity, as the metrics APIs need a node to exist.
pub async fn create_bare_node(
    api: &Api<Node>,
    name: &str,
    labels: serde_json::Value,
) -> Result<()> {
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": labels}
    }))?;
    api.create(&kube::api::PostParams::default(), &node).await?;
    let status = serde_json::json!({"status": {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// Merges `status` (a PodStatus in JSON) into the pod's status subresource.
pub async fn patch_pod_status(
    api: &Api<Pod>,
    name: &str,
    status: serde_json::Value,
) -> Result<Pod> {
    let patch = serde_json::json!({ "status": status });
    Ok(api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// The status of a pod whose containers all run and are ready, as a kubelet reports it.
pub fn running_status(containers: &[&str], started_at: &str) -> serde_json::Value {
    serde_json::json!({
        "phase": "Running",
        "startTime": started_at,
        "podIP": "10.1.0.10",
        "conditions": [
            { "type": "PodScheduled", "status": "True", "lastTransitionTime": started_at },
            { "type": "Initialized", "status": "True", "lastTransitionTime": started_at },
            { "type": "ContainersReady", "status": "True", "lastTransitionTime": started_at },
            { "type": "Ready", "status": "True", "lastTransitionTime": started_at }
        ],
        "containerStatuses": containers.iter().map(|c| serde_json::json!({
            "name": c, "ready": true, "started": true, "restartCount": 0,
            "image": "registry.invalid/none:1", "imageID": "",
            "state": { "running": { "startedAt": started_at } }
        })).collect::<Vec<_>>()
    })
}
