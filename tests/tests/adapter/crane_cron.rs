//! metrics-adapter serves Crane's `crane_autoscaling_cron` from an EffectiveHorizontalPodAutoscaler's
//! crons, and the real kube-controller-manager's HPA scales a kwok Deployment on it: the
//! windows open now give the largest target (one in another time zone included), a window
//! later today counts for nothing, and a workload no EHPA scales is a 404.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::craned::{daily_window, ehpa_api};
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, METRICS_APISERVICES_LOCK, install_craned_crds, repo_root,
    wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

fn cron(name: &str, zone: Option<&str>, (start, end): (String, String), target: i32) -> Value {
    let mut c = json!({"name": name, "start": start, "end": end, "targetReplicas": target});
    if let Some(z) = zone {
        c["timezone"] = json!(z);
    }
    c
}

#[tokio::test]
async fn the_hpa_scales_to_the_largest_open_cron_target() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(900)).await?;
    let client = cluster.client().await?;
    // The adapter serves Crane's metrics only where the API server serves Crane's CRDs.
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("adapter-crane-cron").await?;
    let n = ns.name.clone();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    deployments
        .create(
            &PostParams::default(),
            &cluster.kwok_deployment("web", 1, json!({}))?,
        )
        .await?;

    // Shanghai has no DST: its window below, read in UTC, would be eight hours off.
    let crons = json!([
        cron("open-3", None, daily_window("UTC", -5, 40)?, 3),
        cron("open-4", Some("UTC"), daily_window("UTC", -10, 50)?, 4),
        cron("later-9", None, daily_window("UTC", 120, 180)?, 9),
        cron(
            "shanghai-5",
            Some("Asia/Shanghai"),
            daily_window("Asia/Shanghai", -5, 40)?,
            5
        ),
    ]);
    let ehpas = ehpa_api(&client, &n);
    ehpas
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "autoscaling.crane.io/v1alpha1",
                "kind": "EffectiveHorizontalPodAutoscaler",
                "metadata": {"name": "web"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 10, "crons": crons,
                }
            }))?,
        )
        .await?;

    let adapter =
        AdapterLaunch::config_file(&repo_root().join("config/adapter/default-config.yaml"))
            .behind_aggregator(cluster, &n)
            .await?;
    let path = |name: &str| {
        format!(
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/{n}/crane_autoscaling_cron?labelSelector=targetKind%3DDeployment,targetName%3D{name},targetNamespace%3D{n},resourceIdentifier%3Dcron"
        )
    };
    let answer = wait_until(
        "the cron metric served",
        Duration::from_secs(60),
        || async { Ok(cluster.get_raw(&path("web"), None).await?.ok()) },
    )
    .await
    .with_context(|| format!("adapter log:\n{}", adapter.process.logs()))?;
    let item = &answer["items"][0];
    ensure!(
        item["metricName"] == "crane_autoscaling_cron" && item["value"] == "5",
        "the largest open target is 5: {answer:#}"
    );
    let missing = cluster.get_raw(&path("db"), None).await?;
    ensure!(
        missing
            .as_ref()
            .is_err_and(|e| e.contains("NotFound") || e.contains("not find")),
        "a workload no EHPA scales: {missing:?}"
    );

    // The HPA an EHPA writes for its crons: one External metric, an average value of 1.
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), &n);
    hpas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "ehpa-web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 10,
                "metrics": [{"type": "External", "external": {
                    "metric": {"name": "crane_autoscaling_cron", "selector": {"matchLabels": {
                        "targetKind": "Deployment", "targetName": "web", "targetNamespace": n,
                        "resourceIdentifier": "cron"}}},
                    "target": {"type": "AverageValue", "averageValue": "1"}}}],
                "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0}}
            }
        }))?,
    )
    .await?;
    wait_until(
        "web scaled to 5 by its HPA",
        Duration::from_secs(180),
        || async {
            let d = deployments.get("web").await?;
            Ok((d.spec.replicas == Some(5)).then_some(()))
        },
    )
    .await
    .with_context(|| format!("adapter log:\n{}", adapter.process.logs()))?;
    Ok(())
}
