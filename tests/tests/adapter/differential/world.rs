//! What both adapters answer about: the objects a run creates in the cluster, and the
//! Prometheus history that names them.

use anyhow::Result;
use ferrocrane_e2e::{Cluster, History, create_bare_node, patch_pod_status, running_status};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::api::{Api, PostParams};
use serde_json::json;

/// The objects and names a run uses.
pub struct World {
    pub ns: String,
    pub other_ns: String,
    pub nodes: [String; 2],
}

/// The series in Prometheus, for objects of `world`; values chosen so every rule has
/// something to find. Counters rise at the given rate per second.
pub fn history(world: &World, end: i64) -> History {
    let (ns, other) = (world.ns.as_str(), world.other_ns.as_str());
    let [node_a, node_b] = &world.nodes;
    // (metric, labels, value at `end`, rate per second)
    let mut series: Vec<(&str, String, f64, f64)> = Vec::new();
    let mut add = |metric: &'static str, labels: String, value: f64, rate: f64| {
        series.push((metric, labels, value, rate))
    };
    for (n, pod, code, rate) in [
        (ns, "web-0", "200", 2.0),
        (ns, "web-0", "500", 0.5),
        (ns, "web-1", "200", 1.0),
        (ns, "db-0", "200", 4.0),
        (other, "other-0", "200", 3.0),
    ] {
        add(
            "http_requests_total",
            format!(r#"namespace="{n}",pod="{pod}",code="{code}""#),
            1e4,
            rate,
        );
    }
    for (n, pod, container, cpu, mem) in [
        (ns, "web-0", "app", 0.25, 64.0),
        (ns, "web-0", "sidecar", 0.05, 16.0),
        (ns, "web-1", "app", 1.2, 200.0),
        (ns, "db-0", "db", 0.5, 1024.5),
        (other, "other-0", "app", 0.001, 1.0),
    ] {
        let labels = format!(r#"namespace="{n}",pod="{pod}",container="{container}""#);
        add(
            "container_cpu_usage_seconds_total",
            labels.clone(),
            1e3,
            cpu,
        );
        add(
            "container_memory_working_set_bytes",
            labels,
            mem * 1024.0 * 1024.0,
            0.0,
        );
    }
    // cAdvisor's pod-level series.
    add(
        "container_memory_working_set_bytes",
        format!(r#"namespace="{ns}",pod="web-0",container="""#),
        999.0 * 1024.0 * 1024.0,
        0.0,
    );
    for (node, cpu, mem, temp) in [(node_a, 1.5, 2048.0, 55.5), (node_b, 0.1, 512.0, 61.0)] {
        add(
            "node_cpu_usage_seconds_total",
            format!(r#"node="{node}""#),
            5e4,
            cpu,
        );
        add(
            "node_memory_working_set_bytes",
            format!(r#"node="{node}""#),
            mem * 1024.0 * 1024.0,
            0.0,
        );
        add(
            "node_temperature_celsius",
            format!(r#"node="{node}""#),
            temp,
            0.0,
        );
    }
    for (service, v) in [("web", 12.0), ("db", 0.25)] {
        add(
            "queue_length",
            format!(r#"namespace="{ns}",service="{service}""#),
            v,
            0.0,
        );
    }
    for (n, v) in [(ns, 0.75), (other, 1.5)] {
        add(
            "namespace_budget_ratio",
            format!(r#"namespace="{n}""#),
            v,
            0.0,
        );
    }
    add(
        "deployment_queue_seconds",
        format!(r#"namespace="{ns}",deployment="web""#),
        3.0,
        0.0,
    );
    for (n, queue, topic, v) in [
        (ns, "orders", "t1", 100.0),
        (ns, "billing", "t2", 7.0),
        (other, "orders", "t1", 5.0),
    ] {
        add(
            "queue_messages_ready",
            format!(r#"namespace="{n}",queue="{queue}",topic="{topic}""#),
            v,
            0.0,
        );
    }
    for (team, v) in [("a", 42.0), ("b", 1e9)] {
        add("cluster_backlog", format!(r#"team="{team}""#), v, 0.0);
    }
    // Upstream's sample config names these.
    add(
        "queue_consumer_lag",
        format!(r#"name="orders",namespace="{ns}""#),
        17.0,
        0.0,
    );
    add(
        "queue_depth",
        format!(r#"name="orders",topic="t1",namespace="{ns}""#),
        9.0,
        0.0,
    );

    let mut history = History::new();
    let (step, span) = (15, 30 * 60);
    for (metric, labels, value, rate) in series {
        history.series(metric, &labels, (end - span..=end).step_by(step), |t| {
            value - rate * (end - t) as f64
        });
    }
    history
}

/// Creates the objects the history names: pods (Running, labelled), a pod without series,
/// services, a Deployment and two nodes.
pub async fn create_world(cluster: &Cluster, ns: &str, other_ns: &str) -> Result<World> {
    let client = cluster.client().await?;
    let started = "2024-01-01T00:00:00Z";
    for (n, name, labels, containers) in [
        (
            ns,
            "web-0",
            json!({"app": "web", "tier": "front", "rank": "1"}),
            vec!["app", "sidecar"],
        ),
        (
            ns,
            "web-1",
            json!({"app": "web", "tier": "back", "rank": "2"}),
            vec!["app"],
        ),
        (ns, "db-0", json!({"app": "db", "rank": "3"}), vec!["db"]),
        (ns, "idle-0", json!({"app": "idle"}), vec!["app"]),
        (other_ns, "other-0", json!({"app": "web"}), vec!["app"]),
    ] {
        let pods: Api<Pod> = Api::namespaced(client.clone(), n);
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": containers.iter().map(|c| json!({"name": c, "image": "registry.invalid/none:1"})).collect::<Vec<_>>()}
        }))?;
        pods.create(&PostParams::default(), &pod).await?;
        patch_pod_status(&pods, name, running_status(&containers, started)).await?;
    }
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    for name in ["web", "db"] {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"ports": [{"port": 80}], "selector": {"app": name}}
        }))?;
        services.create(&PostParams::default(), &svc).await?;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web-deployment"}},
            "template": {
                "metadata": {"labels": {"app": "web-deployment"}},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/none:1"}]}
            }
        }
    }))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await?;
    let nodes_api: Api<Node> = Api::all(client.clone());
    let nodes = [format!("{ns}-node-a"), format!("{ns}-node-b")];
    for (n, rank) in nodes.iter().zip(["1", "2"]) {
        create_bare_node(
            &nodes_api,
            n,
            json!({"ferrocrane.io/e2e": ns, "rank": rank}),
        )
        .await?;
    }
    Ok(World {
        ns: ns.to_owned(),
        other_ns: other_ns.to_owned(),
        nodes,
    })
}

/// Deletes the test's nodes when dropped (nodes are not namespaced).
pub struct NodeGuard {
    pub kubectl: ferrocrane_e2e::Kubectl,
    pub names: [String; 2],
}

impl Drop for NodeGuard {
    fn drop(&mut self) {
        self.kubectl
            .delete_without_waiting(&["node", &self.names[0], &self.names[1]]);
    }
}
