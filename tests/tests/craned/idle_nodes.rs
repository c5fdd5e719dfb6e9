//! IdleNode and Service recommenders read their thresholds' series from Prometheus with
//! Crane's expressions: idle nodes and orphan LoadBalancer Services.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{Cluster, History, HistoryPrometheus, install_craned_crds, wait_until};
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};

/// `end_minute`; counters accumulate `value × 60` per minute.
fn flat_history(end_minute: i64, series: &[(String, f64, bool)]) -> History {
    let mut history = History::new();
    for (name, value, counter) in series {
        let (metric, labels) = name
            .split_once('{')
            .map_or((name.as_str(), ""), |(m, l)| (m, l.trim_end_matches('}')));
        let minutes = end_minute - 24 * 60..=end_minute;
        let mut total = 0.0;
        history.series(metric, labels, minutes.map(|m| m * MINUTE), |_| {
            total += value * 60.0;
            if *counter { total } else { *value }
        });
    }
    history
}

/// Deletes the test's Nodes (cluster-scoped, so the namespace does not take them along).
struct NodesGuard {
    api: Api<Node>,
    names: Vec<String>,
}

impl Drop for NodesGuard {
    fn drop(&mut self) {
        let (api, names) = (self.api.clone(), self.names.clone());
        // Drop cannot await; a detached thread with its own runtime does the deletes.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(rt) = rt {
                rt.block_on(async {
                    for n in names {
                        let _ = api.delete(&n, &DeleteParams::default()).await;
                    }
                });
            }
        })
        .join();
    }
}

/// The Recommendation of a target once its last run reached `reason` (Ready's reason).
async fn recommendation_with_reason(
    api: &Api<DynamicObject>,
    target: &str,
    reason: &str,
) -> Result<Option<DynamicObject>> {
    Ok(recommendations_of(api, target)
        .await?
        .into_iter()
        .find(|r| r.data.pointer("/status/conditions/0/reason") == Some(&json!(reason))))
}

/// IdleNode and Service read their thresholds' series from Prometheus with Crane's
/// expressions: a node whose CPU requests stay at 10% of capacity is idle, one at 80% is not;
/// a LoadBalancer Service without endpoints whose pods receive 1 B/s is an orphan, one whose
/// pods receive 100 kB/s is not.
#[tokio::test(flavor = "multi_thread")]
async fn idle_nodes_and_orphan_services_from_prometheus_series() -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned-idle").await?;
    let n = &ns.name;
    let (idle, busy) = (format!("idle-{n}"), format!("busy-{n}"));

    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let mut series = Vec::new();
    for (node, requested) in [(&idle, 0.4), (&busy, 3.2)] {
        series.push((format!("kube_node_labels{{node=\"{node}\"}}"), 1.0, false));
        series.push((
            format!("kube_node_status_capacity{{node=\"{node}\",resource=\"cpu\",unit=\"core\"}}"),
            4.0,
            false,
        ));
        series.push((
            format!(
                "kube_pod_container_resource_requests{{node=\"{node}\",namespace=\"{n}\",pod=\"on-{node}\",container=\"app\",resource=\"cpu\",unit=\"core\"}}"
            ),
            requested,
            false,
        ));
    }
    for (pod, bytes_per_second) in [("quiet-0", 1.0), ("loud-0", 100_000.0)] {
        series.push((
            format!(
                "container_network_receive_bytes_total{{namespace=\"{n}\",pod=\"{pod}\",container=\"app\"}}"
            ),
            bytes_per_second,
            true,
        ));
    }
    let prometheus = HistoryPrometheus::start(&flat_history(now / MINUTE - 1, &series)).await?;

    let nodes: Api<Node> = Api::all(client.clone());
    let _nodes_guard = NodesGuard {
        api: nodes.clone(),
        names: vec![idle.clone(), busy.clone()],
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let pod = |name: &str, labels: Value, node: Option<&str>| -> Result<Pod> {
        Ok(serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
            },
        }))?)
    };
    for node in [&idle, &busy] {
        let obj: Node = serde_json::from_value(json!({
            "metadata": {"name": node, "labels": {"e2e-namespace": n}},
        }))?;
        nodes.create(&PostParams::default(), &obj).await?;
        // A bare pod is a workload, so the node is judged by its utilization.
        pods.create(
            &PostParams::default(),
            &pod(&format!("on-{node}"), json!({}), Some(node))?,
        )
        .await?;
    }
    let services: Api<Service> = Api::namespaced(client.clone(), n);
    for app in ["quiet", "loud"] {
        // Pods that never run have no IP, so the Services have no endpoint addresses.
        pods.create(
            &PostParams::default(),
            &pod(&format!("{app}-0"), json!({ "app": app }), None)?,
        )
        .await?;
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": app},
            "spec": {"type": "LoadBalancer", "selector": {"app": app}, "ports": [{"port": 80}]},
        }))?;
        services.create(&PostParams::default(), &svc).await?;
    }

    let dir = tempfile_dir()?;
    let config_path = dir.join("recommendation-configuration.yaml");
    std::fs::write(
        &config_path,
        "apiVersion: analysis.crane.io/v1alpha1
kind: RecommendationConfiguration
recommenders:
  - name: IdleNode
    acceptedResources:
      - kind: Node
        apiVersion: v1
    config:
      cpu-request-utilization: \"0.3\"
      creation-cooldown: \"0s\"
  - name: Service
    acceptedResources:
      - kind: Service
        apiVersion: v1
    config:
      net-receive-bytes: \"1000\"
      creation-cooldown: \"0s\"
",
    )?;
    let mut craned = CranedLaunch::new(cluster, &prometheus.handle.url, &config_path, n)?
        .leader_elect()
        .start()
        .await?;
    let _rule = create_rule(
        cluster,
        &client,
        &format!("e2e-idle-{n}"),
        json!({
            "runInterval": "24h",
            "namespaceSelector": {"matchNames": [n]},
            "resourceSelectors": [
                {"kind": "Node", "apiVersion": "v1",
                 "labelSelector": {"matchLabels": {"e2e-namespace": n}}},
                {"kind": "Service", "apiVersion": "v1"},
            ],
            "recommenders": [{"name": "IdleNode"}, {"name": "Service"}],
        }),
    )
    .await?;

    let recs = recommendation_api(&client, n);
    for (target, reason, description) in [
        (
            idle.as_str(),
            "RecommendationReady",
            "Node resource utilization is low",
        ),
        (busy.as_str(), "NotApplicable", "is not a idle node"),
        (
            "quiet",
            "RecommendationReady",
            "It is a Orphan Service, Pod net bytes low",
        ),
        ("loud", "NotApplicable", "is not a Orphan Service"),
    ] {
        let rec = wait_until(
            &format!("{target}'s recommendation: {reason}"),
            Duration::from_secs(90),
            || {
                let recs = recs.clone();
                let alive = craned.ensure_running();
                async move {
                    alive?;
                    recommendation_with_reason(&recs, target, reason).await
                }
            },
        )
        .await
        .with_context(|| format!("craned log:\n{}", craned.logs()))?;
        let status = &rec.data["status"];
        assert!(
            status["description"]
                .as_str()
                .is_some_and(|d| d.contains(description)),
            "{target}: {status:#}"
        );
        let want_action = if reason == "RecommendationReady" {
            "Delete"
        } else {
            ""
        };
        assert_eq!(
            status["action"].as_str().unwrap_or(""),
            want_action,
            "{target}: {status:#}"
        );
    }
    Ok(())
}
