//! metrics-adapter on the living cluster: kwok runs the pods, its kubelet-style resource
//! metrics (scraped by Prometheus as `job="kwok"`) are the only source of usage, the adapter
//! answers from them through the default config's `resourceRules`, kubectl 1.37's `top` reads
//! them through `metrics.k8s.io/v1`, and the real kube-controller-manager's HPA (which reads
//! `v1beta1`) scales kwok Deployments on CPU utilization and on memory average value as the
//! pods' usage annotations change.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, KWOK_USAGE_CPU, KWOK_USAGE_MEMORY,
    METRICS_APISERVICES_LOCK, mebibytes, millicores, top_rows, wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const DEFAULT_CONFIG: &str = include_str!("../../../config/adapter/default-config.yaml");

/// The default config with a 15s `window`. The HPA controller ignores a pod's CPU sample
/// during the pod's first five minutes unless one window has passed since it became Ready
/// (`--horizontal-pod-autoscaler-cpu-initialization-period`), so with the default 5m window a
/// new pod would count for CPU only after five minutes.
fn config() -> Result<String> {
    ensure!(
        DEFAULT_CONFIG.contains("\n  window: 5m\n"),
        "default-config.yaml no longer has `window: 5m`; update this test"
    );
    Ok(DEFAULT_CONFIG.replace("\n  window: 5m\n", "\n  window: 15s\n"))
}

/// Runs kubectl (the 1.37 build) with `args`: (stdout, stderr), or the error with stderr.
async fn kubectl(cluster: &Cluster, args: &[&str]) -> Result<(String, String)> {
    let mut cmd = cluster.kubectl()?;
    cmd.args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        bail!("kubectl {} failed: {stderr}", args.join(" "));
    }
    Ok((String::from_utf8_lossy(&out.stdout).into_owned(), stderr))
}

/// A pod list's items as name → containers (name → usage), timestamps left out.
fn usage_by_pod(list: &Value) -> BTreeMap<String, BTreeMap<String, Value>> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            let containers = item["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_owned(),
                        c["usage"].clone(),
                    )
                })
                .collect();
            (
                item["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                containers,
            )
        })
        .collect()
}

/// kubectl 1.37's `top pods` and `top nodes` show kwok's usage, read through
/// metrics.k8s.io/v1; v1 and v1beta1 answer the same objects.
#[tokio::test]
async fn kubectl_top_reads_metrics_v1_from_kwok_usage() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(900)).await?;
    let ns = cluster.namespace("adapter-kwok-top").await?;
    let n = ns.name.clone();
    let client = cluster.client().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    let usage = json!({KWOK_USAGE_CPU: "250m", KWOK_USAGE_MEMORY: "96Mi"});
    deployments
        .create(
            &PostParams::default(),
            &cluster.kwok_deployment("web", 2, usage)?,
        )
        .await?;
    let adapter = AdapterLaunch::new(&config()?)
        .behind_aggregator(cluster, &n)
        .await?;

    let top = wait_until(
        "kubectl top pods to show both pods at 250m and 96Mi",
        Duration::from_secs(120),
        || async {
            let Ok((out, _)) = kubectl(cluster, &["top", "pods", "-n", &n]).await else {
                return Ok(None);
            };
            let rows = top_rows(&out);
            let settled = rows.len() == 2
                && rows.values().all(|cols| {
                    cols.first()
                        .and_then(|c| millicores(c))
                        .is_some_and(|c| (c - 250.0).abs() <= 5.0)
                        && cols.get(1).and_then(|m| mebibytes(m)) == Some(96.0)
                });
            Ok(settled.then_some(rows))
        },
    )
    .await
    .with_context(|| format!("adapter log:\n{}", adapter.process.logs()))?;
    ensure!(top.keys().all(|name| name.starts_with("web-")), "{top:?}");

    // kubectl 1.37 prefers v1 when the group lists it.
    let (_, log) = kubectl(cluster, &["top", "pods", "-n", &n, "-v=6"]).await?;
    ensure!(
        log.contains(&format!("/apis/metrics.k8s.io/v1/namespaces/{n}/pods")),
        "kubectl top did not read metrics.k8s.io/v1:\n{log}"
    );
    ensure!(
        !log.contains(&format!("/apis/metrics.k8s.io/v1beta1/namespaces/{n}/pods")),
        "kubectl top read v1beta1:\n{log}"
    );

    // The same objects in both versions, each carrying its own apiVersion.
    let mut answers = BTreeMap::new();
    for version in ["v1", "v1beta1"] {
        let path = format!("/apis/metrics.k8s.io/{version}/namespaces/{n}/pods");
        let (raw, _) = kubectl(cluster, &["get", "--raw", &path]).await?;
        let list: Value = serde_json::from_str(&raw)?;
        ensure!(list["kind"] == "PodMetricsList", "{raw}");
        ensure!(
            list["apiVersion"] == format!("metrics.k8s.io/{version}").as_str(),
            "{raw}"
        );
        let pod = top.keys().next().context("a pod")?;
        let (one, _) = kubectl(cluster, &["get", "--raw", &format!("{path}/{pod}")]).await?;
        let one: Value = serde_json::from_str(&one)?;
        ensure!(
            one["kind"] == "PodMetrics"
                && one["apiVersion"] == format!("metrics.k8s.io/{version}").as_str(),
            "{one}"
        );
        answers.insert(version, usage_by_pod(&list));
    }
    let (v1, v1beta1) = (&answers["v1"], &answers["v1beta1"]);
    ensure!(
        v1.keys().eq(v1beta1.keys()) && v1.len() == 2,
        "{v1:?} vs {v1beta1:?}"
    );
    for (pod, containers) in v1 {
        ensure!(
            containers["main"]["memory"] == "96Mi"
                && v1beta1[pod]["main"]["memory"] == containers["main"]["memory"],
            "{pod}: {containers:?} vs {:?}",
            v1beta1[pod]
        );
    }

    // Nodes: every kwok Node is listed, the ones running these pods with their usage.
    let (out, _) = kubectl(cluster, &["top", "nodes"]).await?;
    let nodes = top_rows(&out);
    for node in cluster.kwok_nodes()? {
        let cols = nodes
            .get(&node)
            .with_context(|| format!("{node} missing from kubectl top nodes:\n{out}"))?;
        ensure!(
            cols.first().and_then(|c| millicores(c)).is_some(),
            "{node}: {cols:?}"
        );
    }
    let busiest = nodes
        .iter()
        .filter(|(name, _)| name.starts_with("kwok-"))
        .filter_map(|(_, cols)| cols.first().and_then(|c| millicores(c)))
        .fold(0.0, f64::max);
    ensure!(busiest >= 240.0, "no kwok node shows the pods' CPU:\n{out}");
    Ok(())
}

fn hpa(name: &str, metric: Value) -> Result<HorizontalPodAutoscaler> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [metric],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0},
                "scaleDown": {"stabilizationWindowSeconds": 0,
                              "policies": [{"type": "Percent", "value": 100, "periodSeconds": 1}]}
            }
        }
    }))?)
}

/// Sets the usage every pod of the Deployment declares (a rollout replaces its pods).
async fn set_usage(api: &Api<Deployment>, name: &str, key: &str, value: &str) -> Result<()> {
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {key: value}}}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn wait_replicas(api: &Api<Deployment>, name: &str, want: i32) -> Result<()> {
    wait_until(
        &format!("deployment {name} scaled to {want}"),
        Duration::from_secs(240),
        || async {
            let d = api.get(name).await?;
            Ok((d.spec.replicas == Some(want)).then_some(()))
        },
    )
    .await
}

/// A Resource-metric HPA on CPU utilization and one on memory average value scale kwok
/// Deployments 1 → 3 → 1 as the pods' usage annotations go up and down, computed by the real
/// kube-controller-manager from the adapter's metrics.k8s.io answers.
#[tokio::test]
async fn hpa_scales_kwok_deployments_on_cpu_utilization_and_memory() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(900)).await?;
    let ns = cluster.namespace("adapter-kwok-hpa").await?;
    let n = ns.name.clone();
    let client = cluster.client().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    // 20% of the 100m request; 32Mi of a 100Mi target: one replica each.
    for (name, usage) in [
        ("cpu", json!({KWOK_USAGE_CPU: "20m"})),
        ("memory", json!({KWOK_USAGE_MEMORY: "32Mi"})),
    ] {
        deployments
            .create(
                &PostParams::default(),
                &cluster.kwok_deployment(name, 1, usage)?,
            )
            .await?;
    }
    let adapter = AdapterLaunch::new(&config()?)
        .behind_aggregator(cluster, &n)
        .await?;

    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), &n);
    let cpu = hpa(
        "cpu",
        json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}),
    )?;
    let memory = hpa(
        "memory",
        json!({"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "100Mi"}}}),
    )?;
    let result = async {
        for h in [cpu, memory] {
            hpas.create(&PostParams::default(), &h).await?;
        }
        // Both HPAs read their metric before anything changes.
        wait_until(
            "both HPAs to report a current metric",
            Duration::from_secs(180),
            || async {
                let list = hpas.list(&Default::default()).await?;
                let reading = list
                    .items
                    .iter()
                    .filter(|h| {
                        h.status
                            .as_ref()
                            .and_then(|s| s.current_metrics.as_ref())
                            .is_some_and(|m| !m.is_empty())
                    })
                    .count();
                Ok((reading == 2).then_some(()))
            },
        )
        .await?;
        for name in ["cpu", "memory"] {
            let replicas = deployments.get(name).await?.spec.replicas;
            ensure!(replicas == Some(1), "{name} scaled before its usage rose");
        }

        // 200% of the request (target 50%) and 250Mi (target 100Mi): up to maxReplicas.
        set_usage(&deployments, "cpu", KWOK_USAGE_CPU, "200m").await?;
        set_usage(&deployments, "memory", KWOK_USAGE_MEMORY, "250Mi").await?;
        wait_replicas(&deployments, "cpu", 3).await?;
        wait_replicas(&deployments, "memory", 3).await?;

        // 10% and 8Mi: back to one.
        set_usage(&deployments, "cpu", KWOK_USAGE_CPU, "10m").await?;
        set_usage(&deployments, "memory", KWOK_USAGE_MEMORY, "8Mi").await?;
        wait_replicas(&deployments, "cpu", 1).await?;
        wait_replicas(&deployments, "memory", 1).await?;
        Ok::<_, anyhow::Error>(())
    }
    .await;
    if result.is_err() {
        if let Ok((out, _)) = kubectl(cluster, &["describe", "hpa", "-n", &n]).await {
            eprintln!("{out}");
        }
        eprintln!("adapter log:\n{}", adapter.process.logs());
    }
    result
}
