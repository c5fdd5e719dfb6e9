//! The TimeSeriesPrediction controller against the real control plane and a Prometheus
//! holding three days of a workload's daily CPU cycle: the DSP model predicts the cycle
//! ahead, the percentile model its p99 as a flat line, both in Crane's status format over the
//! next two windows; a metric that cannot be predicted is named in a PredictPartial condition
//! and does not keep the others from being ready.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{
    Cluster, History, HistoryPrometheus, MIB, SyntheticPod, SyntheticWorkload, Usage, daily,
    install_craned_crds, wait_until,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const DAYS: i64 = 3;
const WINDOW: i64 = 3600;

/// Cores at Unix minute `m`: one core plus 0.6 with the sun.
fn cores(m: i64) -> f64 {
    1.0 + 0.6 * daily(m)
}

fn tsp(name: &str, metrics: Value) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "prediction.crane.io/v1alpha1",
        "kind": "TimeSeriesPrediction",
        "metadata": {"name": name},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "predictionWindowSeconds": WINDOW,
            "predictionMetrics": metrics,
        }
    }))?)
}

/// The TSP's Ready condition once it has one with `reason`.
async fn condition(api: &Api<DynamicObject>, name: &str, reason: &str) -> Result<DynamicObject> {
    wait_until(
        &format!("TimeSeriesPrediction {name} with reason {reason}"),
        Duration::from_secs(120),
        || async {
            let t = api.get(name).await?;
            let found = t.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["reason"] == reason);
            Ok(found.then_some(t))
        },
    )
    .await
}

/// A metric's status: ready, and its samples as (Unix seconds, value).
type Predicted = (bool, Vec<(i64, f64)>);

/// resourceIdentifier → what its status says.
fn predictions(t: &DynamicObject) -> Result<BTreeMap<String, Predicted>> {
    let mut out = BTreeMap::new();
    for m in t.data["status"]["predictionMetrics"]
        .as_array()
        .context("predictionMetrics")?
    {
        let mut samples = Vec::new();
        for series in m["prediction"].as_array().into_iter().flatten() {
            for s in series["samples"].as_array().into_iter().flatten() {
                let text = s["value"].as_str().context("value is a string")?;
                ensure!(
                    text.split_once('.').is_some_and(|(_, d)| d.len() == 5),
                    "value {text:?} is not written with five decimals"
                );
                samples.push((s["timestamp"].as_i64().context("timestamp")?, text.parse()?));
            }
        }
        out.insert(
            m["resourceIdentifier"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            (m["ready"] == true, samples),
        );
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn predictions_follow_the_daily_cycle_and_a_bad_metric_is_named() -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned-tsp").await?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end_minute = now / MINUTE;
    let web = SyntheticWorkload {
        pods: vec![SyntheticPod {
            name: "web-7c9d8f6b5-abcde",
            from: DAYS * 1440 + 10,
            to: 0,
        }],
        ..SyntheticWorkload::week_long("web", &[]).container(
            "app",
            Usage::new(cores, |_| 300.0 * MIB),
            "1",
            "1Gi",
        )
    };
    let mut history = History::new();
    web.cadvisor(&mut history, &ns.name, "", end_minute, false);
    let prometheus = HistoryPrometheus::start(&history).await?;
    let config = write_config_file("0.15")?;
    let launch = CranedLaunch::new(cluster, &prometheus.handle.url, &config, &ns.name)?;
    let metrics_addr = launch.metrics_addr();
    let craned = launch.start().await?;

    let cpu = format!(
        "sum(irate(container_cpu_usage_seconds_total{{namespace=\"{}\",pod=~\"^web-[a-z0-9]+-[a-z0-9]{{5}}$\",container!=\"\"}}[3m]))",
        ns.name
    );
    let api = tsp_api(&client, &ns.name);
    api.create(
        &PostParams::default(),
        &tsp(
            "web",
            json!([
                {"resourceIdentifier": "resource.cpu", "type": "ExpressionQuery",
                 "expressionQuery": {"expression": cpu},
                 "algorithm": {"algorithmType": "dsp", "dsp": {"sampleInterval": "1m", "historyLength": "3d"}}},
                {"resourceIdentifier": "cpu.p99", "type": "ExpressionQuery",
                 "expressionQuery": {"expression": cpu},
                 "algorithm": {"algorithmType": "percentile", "percentile": {"historyLength": "3d"}}}
            ]),
        )?,
    )
    .await?;
    api.create(
        &PostParams::default(),
        &tsp(
            "partial",
            json!([
                {"resourceIdentifier": "resource.cpu", "type": "ExpressionQuery",
                 "expressionQuery": {"expression": cpu},
                 "algorithm": {"algorithmType": "percentile", "percentile": {"historyLength": "3d"}}},
                {"resourceIdentifier": "typo", "type": "ExpresionQuery",
                 "algorithm": {"algorithmType": "dsp"}}
            ]),
        )?,
    )
    .await?;

    // A level that doubled just before the TSP was made: its median over the hour before is
    // the old level, and what then happens is the new one. It doubles on a 10 s boundary, the
    // step of the predicted samples, so the first of them (at the write rounded down to a
    // step) is already after it.
    let doubled_at = now - now.rem_euclid(10);
    let doubled = format!("vector(1 + (time() >= bool {doubled_at}))");
    api.create(
        &PostParams::default(),
        &tsp(
            "doubled",
            json!([
                {"resourceIdentifier": "level", "type": "ExpressionQuery",
                 "expressionQuery": {"expression": doubled},
                 "algorithm": {"algorithmType": "percentile", "percentile": {
                     "historyLength": "1h", "sampleInterval": "10s", "percentile": "0.5",
                     "marginFraction": "0"}}}
            ]),
        )?,
    )
    .await?;

    let ready = condition(&api, "web", "PredictSucceed")
        .await
        .with_context(|| format!("craned log:\n{}", craned.logs()))?;
    let predicted = predictions(&ready)?;
    let written_at = ready.data["status"]["conditions"][0]["lastTransitionTime"]
        .as_str()
        .context("lastTransitionTime")?
        .parse::<k8s_openapi::jiff::Timestamp>()?
        .as_second();

    // DSP: the cycle goes on, minute by minute, over [now, now + 2 windows].
    let (dsp_ready, dsp) = &predicted["resource.cpu"];
    ensure!(*dsp_ready, "the DSP prediction is not ready");
    let first = dsp.first().context("DSP samples")?.0;
    let last = dsp.last().context("DSP samples")?.0;
    ensure!(
        first <= written_at + 60 && last >= written_at + 2 * WINDOW - 60,
        "DSP samples span {first}..{last}, not the two windows after {written_at}"
    );
    let worst = dsp
        .iter()
        .map(|(t, v)| (v - cores(t / 60)).abs())
        .fold(0.0, f64::max);
    ensure!(
        worst < 0.1,
        "the DSP prediction strays {worst} cores from the cycle: {dsp:?}"
    );

    // Percentile: a flat line at the p99 of the three days (Crane's 0.1-core buckets).
    let (p_ready, flat) = &predicted["cpu.p99"];
    ensure!(*p_ready, "the percentile prediction is not ready");
    let history_values: Vec<f64> = (end_minute - DAYS * 1440..end_minute).map(cores).collect();
    let want = p99_bucket_end(&history_values, 0.1);
    ensure!(
        flat.iter().all(|(_, v)| (v - want).abs() < 0.1 + 1e-9),
        "percentile samples are not the p99 {want}: {:?}",
        &flat[..flat.len().min(5)]
    );

    // One metric that cannot be predicted: named, and the other still ready.
    let partial = condition(&api, "partial", "PredictPartial").await?;
    let message = partial.data["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure!(
        message.starts_with("not all metric predicted")
            && message.contains("typo")
            && message.contains("ExpresionQuery"),
        "{message}"
    );
    let partial = wait_until(
        "the partial TSP's good metric ready",
        Duration::from_secs(60),
        || {
            let api = api.clone();
            async move {
                let t = api.get("partial").await?;
                let p = predictions(&t)?;
                Ok(p.get("resource.cpu")
                    .is_some_and(|(ready, _)| *ready)
                    .then_some(p))
            }
        },
    )
    .await?;
    ensure!(!partial["typo"].0, "the bad metric says ready");

    // When a status is replaced (here by a spec change), its past samples are scored against
    // what happened: |predicted - 2| / 2 at every instant.
    let doubled_status = condition(&api, "doubled", "PredictSucceed").await?;
    let level = predictions(&doubled_status)?["level"]
        .1
        .first()
        .context("the doubled level's samples")?
        .1;
    ensure!(
        level < 1.5,
        "the median of the hour before is the old level: {level}"
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    api.patch(
        "doubled",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"predictionWindowSeconds": WINDOW + 60}})),
    )
    .await?;
    let (ratio, samples) = wait_until(
        "the replaced prediction scored",
        Duration::from_secs(60),
        || async {
            let text = scrape(&metrics_addr).await?;
            let of = |family: &str| {
                gauge(
                    &text,
                    family,
                    &["name=\"doubled\"", "resource_identifier=\"level\""],
                )
            };
            Ok(of("craned_prediction_error_ratio").zip(of("craned_prediction_error_samples")))
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", craned.logs()))?;
    let want = (level - 2.0).abs() / 2.0;
    ensure!(
        (ratio - want).abs() < 1e-4 && samples >= 3.0,
        "error ratio {ratio} over {samples} samples; want {want} (predicted {level}, then 2)"
    );

    let text = scrape(&metrics_addr).await?;
    let reconciles = gauge(
        &text,
        "craned_reconcile_total",
        &["controller=\"timeseriesprediction\""],
    )
    .context("craned_reconcile_total{controller=\"timeseriesprediction\"}")?;
    ensure!(reconciles >= 2.0, "{reconciles} reconciles");
    Ok(())
}
