//! The data plane is alive: kwok keeps its Nodes Ready, kube-scheduler binds a Deployment's
//! pods to them, kwok runs them (and deletes them cleanly), and the usage a pod's annotations
//! declare reaches Prometheus through kwok's kubelet-style resource metrics endpoint.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{Cluster, KWOK_USAGE_CPU, KWOK_USAGE_MEMORY, Sample, wait_until};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const MI: f64 = 1024.0 * 1024.0;

/// `kubectl get nodes` (the kubectl 1.37 setup.sh builds) lists every kwok Node as Ready,
/// and the node lifecycle controller has left them untainted but for kwok's own taint.
#[tokio::test]
async fn kwok_nodes_are_ready() -> Result<()> {
    let cluster = Cluster::get()?;
    let kwok_nodes = cluster.kwok_nodes()?;
    ensure!(kwok_nodes.len() == 2, "KWOK_NODES={kwok_nodes:?}");

    let version = cluster
        .kubectl()?
        .args(["version", "--client", "-o", "json"])
        .output()?;
    let version: serde_json::Value = serde_json::from_slice(&version.stdout)?;
    assert_eq!(version["clientVersion"]["gitVersion"], "v1.37.2");

    let out = cluster
        .kubectl()?
        .args(["get", "nodes", "-l", "type=kwok", "--no-headers"])
        .output()?;
    ensure!(out.status.success(), "kubectl get nodes: {out:?}");
    let text = String::from_utf8(out.stdout)?;
    for node in &kwok_nodes {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(node))
            .with_context(|| format!("{node} missing from kubectl get nodes:\n{text}"))?;
        assert_eq!(line.split_whitespace().nth(1), Some("Ready"), "{line}");
    }

    let nodes: Api<Node> = Api::all(cluster.client().await?);
    for name in &kwok_nodes {
        let node = nodes.get(name).await?;
        let taints: Vec<String> = node
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect();
        assert_eq!(taints, ["kwok.x-k8s.io/node:NoSchedule"], "{name}");
        let allocatable = node.status.and_then(|s| s.allocatable).unwrap_or_default();
        assert_eq!(allocatable.get("cpu").map(|q| q.0.as_str()), Some("8"));
    }
    Ok(())
}

fn is_running_and_ready(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// A Deployment's pods are scheduled onto kwok Nodes and run; a usage annotation on one of
/// them shows in Prometheus as that pod's container, pod and node series, with its value;
/// scaling down deletes a pod for good, as a kubelet would.
#[tokio::test]
async fn deployment_runs_on_kwok_nodes_and_its_usage_reaches_prometheus() -> Result<()> {
    let cluster = Cluster::get()?;
    let kwok_nodes = cluster.kwok_nodes()?;
    let ns = cluster.namespace("kwok").await?;
    let client = cluster.client().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    deployments
        .create(
            &PostParams::default(),
            &cluster.kwok_deployment("web", 2, json!({}))?,
        )
        .await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let running = wait_until(
        "2 pods of deployment web Running and Ready on kwok nodes",
        Duration::from_secs(90),
        || async {
            let list = pods.list(&ListParams::default().labels("app=web")).await?;
            let running: Vec<Pod> = list
                .items
                .into_iter()
                .filter(|p| {
                    let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
                    is_running_and_ready(p)
                        && node.is_some_and(|n| kwok_nodes.iter().any(|k| k == n))
                })
                .collect();
            Ok((running.len() == 2).then_some(running))
        },
    )
    .await?;
    for pod in &running {
        let status = pod.status.clone().unwrap_or_default();
        let ip = status.pod_ip.unwrap_or_default();
        assert!(ip.starts_with("10.244."), "pod IP {ip} from kwok's --cidr");
        let containers = status.container_statuses.unwrap_or_default();
        assert_eq!(containers.len(), 1);
        assert!(containers[0].ready);
        assert!(
            containers[0]
                .state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .is_some()
        );
    }
    wait_until(
        "deployment web to have 2 available replicas",
        Duration::from_secs(60),
        || async {
            let d = deployments.get("web").await?;
            Ok((d.status.and_then(|s| s.available_replicas) == Some(2)).then_some(()))
        },
    )
    .await?;

    // Usage from annotations, as kubectl annotate would set it.
    let busy = running[0].metadata.name.clone().context("pod name")?;
    let quiet = running[1].metadata.name.clone().context("pod name")?;
    let node = running[0]
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .context("node name")?;
    let patch =
        json!({"metadata": {"annotations": {KWOK_USAGE_CPU: "250m", KWOK_USAGE_MEMORY: "64Mi"}}});
    pods.patch(&busy, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;

    let prometheus = cluster.prometheus()?;
    let n = &ns.name;
    let one = |samples: Vec<Sample>, what: &str| -> Result<Sample> {
        ensure!(samples.len() == 1, "{what}: {samples:?}");
        samples.into_iter().next().context("one sample")
    };
    let memory = one(
        prometheus
            .wait_for_samples(
                &format!(
                    "container_memory_working_set_bytes{{job=\"kwok\",namespace=\"{n}\",pod=\"{busy}\",container=\"main\"}} == {}",
                    64.0 * MI
                ),
                Duration::from_secs(60),
            )
            .await?,
        "container memory",
    )?;
    assert_eq!(memory.labels.get("node"), Some(&node), "{memory:?}");

    // The counter grows by 0.25 core-seconds a second once kwok sees the annotation; irate
    // over the last two scrapes (2 s apart) shows it as soon as both carry it.
    let cpu = format!(
        "irate(container_cpu_usage_seconds_total{{job=\"kwok\",namespace=\"{n}\",pod=\"{busy}\",container=\"main\"}}[1m])"
    );
    let rate = wait_until(
        "the busy pod's CPU rate to reach 250m",
        Duration::from_secs(60),
        || async {
            let samples = prometheus.query(&cpu).await?;
            Ok(samples
                .into_iter()
                .find(|s| (s.value - 0.25).abs() < 0.0125))
        },
    )
    .await?;
    assert_eq!(rate.labels.get("node"), Some(&node), "{rate:?}");

    let pod_memory = one(
        prometheus
            .query(&format!(
                "pod_memory_working_set_bytes{{job=\"kwok\",namespace=\"{n}\",pod=\"{busy}\"}}"
            ))
            .await?,
        "pod memory",
    )?;
    assert_eq!(pod_memory.value, 64.0 * MI);
    // Without annotations kwok's usage is 1m of CPU and 1Mi of memory.
    let quiet_memory = one(
        prometheus
            .wait_for_samples(
                &format!(
                    "container_memory_working_set_bytes{{job=\"kwok\",namespace=\"{n}\",pod=\"{quiet}\"}}"
                ),
                Duration::from_secs(30),
            )
            .await?,
        "quiet pod memory",
    )?;
    assert_eq!(quiet_memory.value, MI);
    // The node's working set sums its pods', the busy one's included.
    let node_memory = one(
        prometheus
            .query(&format!(
                "node_memory_working_set_bytes{{job=\"kwok\",node=\"{node}\"}}"
            ))
            .await?,
        "node memory",
    )?;
    assert!(node_memory.value >= 64.0 * MI, "{node_memory:?}");

    // Scaling down: the ReplicaSet deletes a pod and kwok finishes the deletion, as a kubelet
    // would (without one the pod would stay Terminating for ever).
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await?;
    wait_until(
        "deployment web to be down to 1 pod",
        Duration::from_secs(60),
        || async {
            let list = pods.list(&ListParams::default().labels("app=web")).await?;
            Ok((list.items.len() == 1).then_some(()))
        },
    )
    .await?;
    Ok(())
}
