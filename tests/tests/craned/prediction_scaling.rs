//! An EHPA with prediction scales a workload *before* its daily peak: three days of history
//! show CPU rising every day twenty minutes from now's time of day; the pods use little now.
//! craned's TimeSeriesPrediction finds the daily period, the EHPA's HPA reads the predicted peak
//! (`crane_autoscaling_prediction`, served by metrics-adapter) next to the workload's own low
//! utilization, and the real HPA controller scales up ahead of the peak; once the window no
//! longer reaches the peak, it scales back down.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, History, HistoryPrometheus, KWOK_USAGE_CPU,
    METRICS_APISERVICES_LOCK, MIB, SyntheticPod, SyntheticWorkload, Usage, install_craned_crds,
    repo_root, wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const DAYS: i64 = 3;
/// The peak starts this many minutes after now's time of day, and lasts an hour.
const PEAK_IN: i64 = 20;

#[tokio::test(flavor = "multi_thread")]
async fn the_hpa_scales_up_before_a_predicted_daily_peak() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(900)).await?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned-predicted").await?;
    let n = ns.name.clone();

    let now_minute = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64 / MINUTE;
    let peak_start = (now_minute + PEAK_IN).rem_euclid(1440);
    let busy = move |m: i64| {
        let since = (m.rem_euclid(1440) - peak_start).rem_euclid(1440);
        if since < 60 { 0.6 } else { 0.05 }
    };
    let history_pods = SyntheticWorkload {
        pods: vec![SyntheticPod {
            name: "web-5f6d7c8b9-abcde",
            from: DAYS * 1440 + 10,
            to: 0,
        }],
        ..SyntheticWorkload::week_long("web", &[]).container(
            "main",
            Usage::new(busy, |_| 64.0 * MIB),
            "100m",
            "64Mi",
        )
    };
    let mut history = History::new();
    history_pods.cadvisor(&mut history, &n, "", now_minute, false);
    let prometheus = HistoryPrometheus::start(&history).await?;

    // The live pods use 10% of their request: on its own the HPA keeps one replica.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    deployments
        .create(
            &PostParams::default(),
            &cluster.kwok_deployment("web", 1, json!({KWOK_USAGE_CPU: "10m"}))?,
        )
        .await?;
    let adapter =
        AdapterLaunch::config_file(&repo_root().join("config/adapter/default-config.yaml"))
            .behind_aggregator(cluster, &n)
            .await?;
    let config = write_config_file("0.15")?;
    let craned = CranedLaunch::new(cluster, &prometheus.handle.url, &config, &n)?
        .start()
        .await?;
    let logs = || {
        format!(
            "craned log:\n{}\nadapter log:\n{}",
            craned.logs(),
            adapter.process.logs()
        )
    };

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
                    "minReplicas": 1, "maxReplicas": 10,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50}}}],
                    "prediction": {"predictionWindowSeconds": 3600, "predictionAlgorithm": {
                        "algorithmType": "dsp", "dsp": {"sampleInterval": "1m", "historyLength": "3d",
                            // The past days' shape as it was (Crane's default FFT estimators
                            // smooth the hour-long peak into a 20-minute ramp).
                            "estimators": {"maxValue": [{"marginFraction": "0"}]}}}},
                    "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0},
                                 "scaleDown": {"stabilizationWindowSeconds": 0,
                                               "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
                }
            }))?,
        )
        .await?;

    // Ahead of the peak (20 minutes away): the predicted 0.6 cores over a 50m per-pod target.
    let scaled = wait_until(
        "web scaled up ahead of its peak",
        Duration::from_secs(180),
        || async {
            let r = deployments.get("web").await?.spec.replicas.unwrap_or(0);
            Ok((r >= 5).then_some(r))
        },
    )
    .await
    .with_context(logs)?;
    let minutes_left = peak_start
        - (SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64 / MINUTE)
            .rem_euclid(1440);
    anyhow::ensure!(
        minutes_left.rem_euclid(1440) > 5,
        "scaled to {scaled} only {minutes_left} minutes before the peak"
    );

    // The status names the prediction as what scaled it.
    wait_until(
        "the prediction named in the status",
        Duration::from_secs(60),
        || async {
            let source = ehpas.get("web").await?.data["status"]["replicasSource"].clone();
            Ok((source["type"] == "Prediction" && source["name"] == "resource.cpu").then_some(()))
        },
    )
    .await
    .with_context(logs)?;

    // The peak out of the window: back to one. Waiting out the hour-long peak would take an
    // hour; a ten-minute window no longer reaches it, as the window stops reaching a peak that
    // has passed, and the live utilization alone asks for one replica.
    ehpas
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"prediction": {"predictionWindowSeconds": 600}}})),
        )
        .await?;
    wait_until(
        "web back to one replica",
        Duration::from_secs(180),
        || async { Ok((deployments.get("web").await?.spec.replicas == Some(1)).then_some(())) },
    )
    .await
    .with_context(logs)?;
    Ok(())
}
