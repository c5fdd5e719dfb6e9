//! The objects the IdleNode, Service and Volume recommenders judge in the craned differential,
//! beside the workloads: a Node with no pods (the two kwok Nodes run the workloads' pods),
//! LoadBalancer and ClusterIP Services with and without endpoints, and PersistentVolumes
//! claimed by a pod, claimed by nobody, and not claimed at all.

use anyhow::Result;
use ferrocrane_e2e::create_bare_node;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, Pod, Service};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::workloads::NS;

/// Where the pod that mounts a claimed volume lives.
pub const STORAGE_NS: &str = "storage";
/// A Node no pod runs on.
pub const IDLE_NODE: &str = "idle-node";
pub const SERVICES: [&str; 3] = ["orphan-lb", "flat-lb", "flat-internal"];
pub const VOLUMES: [&str; 3] = ["used-pv", "orphan-pv", "unclaimed-pv"];

fn service(name: &str, kind: &str, app: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "type": kind,
            "selector": {"app": app},
            "ports": [{"port": 80, "targetPort": 8080}],
        },
    })
}

fn volume(name: &str, claim: Option<&str>) -> Value {
    let mut pv = json!({
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": format!("/var/lib/{name}")},
        },
    });
    if let Some(claim) = claim {
        pv["spec"]["claimRef"] = json!({"namespace": STORAGE_NS, "name": claim});
    }
    pv
}

/// Creates them; the `storage` namespace must exist.
pub async fn create(client: &Client) -> Result<()> {
    create_bare_node(&Api::<Node>::all(client.clone()), IDLE_NODE, json!({})).await?;

    let services: Api<Service> = Api::namespaced(client.clone(), NS);
    for s in [
        // Selects nothing: an orphan.
        service("orphan-lb", "LoadBalancer", "gone"),
        // The flat workload's pods are its endpoints.
        service("flat-lb", "LoadBalancer", "flat"),
        // Not a LoadBalancer.
        service("flat-internal", "ClusterIP", "flat"),
    ] {
        services
            .create(&PostParams::default(), &serde_json::from_value(s)?)
            .await?;
    }

    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    for pv in [
        volume("used-pv", Some("data")),
        volume("orphan-pv", Some("unused")),
        volume("unclaimed-pv", None),
    ] {
        volumes
            .create(&PostParams::default(), &serde_json::from_value(pv)?)
            .await?;
    }
    // Mounts claim `data`; it never runs (no such claim is bound), which is all the Volume
    // recommender looks at: a pod of the claim's namespace naming the claim.
    let writer = json!({
        "metadata": {"name": "writer", "namespace": STORAGE_NS},
        "spec": {
            "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    });
    Api::<Pod>::namespaced(client.clone(), STORAGE_NS)
        .create(&PostParams::default(), &serde_json::from_value(writer)?)
        .await?;
    Ok(())
}
