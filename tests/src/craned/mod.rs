//! craned in the end-to-end tests: the synthetic workloads and their week of
//! cAdvisor-style history, the recommendation each should get (computed here from Crane's
//! documented algorithm, not craned's code), and starting craned, rules and Recommendation
//! lookups against the test cluster.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod launch;

pub use launch::CranedLaunch;

use crate::history::History;
use crate::usage::{MIB, SyntheticWorkload, Usage};
use crate::{Cluster, ServiceProcess, http_client};
use anyhow::{Context, Result};
use ferrocrane_core::quantity::Quantity;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

pub const MINUTE: i64 = 60;
pub use crate::history::WEEK_MINUTES;

/// The Resource tests' workloads: a web app with bursts and a steady sidecar, and a
/// database with bursts.
pub fn workloads() -> Vec<SyntheticWorkload> {
    vec![
        SyntheticWorkload::week_long("web", &["web-7c9d8f6b5-abcde", "web-7c9d8f6b5-fghij"])
            .container(
                "app",
                Usage::bursts((0.25, 300.0 * MIB), (0.85, 650.0 * MIB), 3),
                "500m",
                // Above the usage estimate, so the OOM bump of this request shows.
                "1Gi",
            )
            .container("sidecar", Usage::flat(0.05, 50.0 * MIB), "100m", "64Mi"),
        SyntheticWorkload::week_long("db", &["db-5f6d7c8b9-klmno", "db-5f6d7c8b9-pqrst"])
            .container(
                "postgres",
                Usage::bursts((1.35, 1500.0 * MIB), (2.45, 2150.0 * MIB), 5),
                "1",
                "1Gi",
            ),
    ]
}

/// The workloads' cAdvisor history in `namespace`: every pod's containers, one sample a
/// minute over a week (and ten minutes) up to and including `end_minute`.
pub fn history(namespace: &str, end_minute: i64) -> History {
    let mut history = History::new();
    for w in workloads() {
        w.cadvisor(&mut history, namespace, "", end_minute + 1, false);
    }
    history
}

/// The p99 of Crane's histogram, computed here from the documented algorithm rather than
/// craned's code: linear buckets of `bucket`, each sample weighted by its value (at least
/// 1e-5), the answer is the end of the first bucket where the cumulative weight reaches 99%.
pub fn p99_bucket_end(values: &[f64], bucket: f64) -> f64 {
    let mut weights: BTreeMap<i64, f64> = BTreeMap::new();
    let mut total = 0.0;
    for &v in values {
        let w = v.max(1e-5);
        *weights.entry((v / bucket).trunc() as i64).or_default() += w;
        total += w;
    }
    let mut cumulative = 0.0;
    for (b, w) in weights {
        cumulative += w;
        if cumulative >= 0.99 * total {
            return (b + 1) as f64 * bucket;
        }
    }
    unreachable!("the cumulative weight reaches the total")
}

/// The expected (millicores, bytes) of a container with margin `margin`: the week of minutes
/// both pods contribute (the same values twice do not move a percentile, but keep it honest).
pub fn expected(p: &Usage, end_minute: i64, margin: f64) -> (i64, i64) {
    let minutes: Vec<i64> = (end_minute - WEEK_MINUTES..=end_minute).collect();
    let cpu: Vec<f64> = minutes.iter().flat_map(|&m| [p.cpu(m), p.cpu(m)]).collect();
    let mem: Vec<f64> = minutes.iter().flat_map(|&m| [p.mem(m), p.mem(m)]).collect();
    let cpu_est = p99_bucket_end(&cpu, 0.1) * (1.0 + margin) / 1.0;
    let mem_est = p99_bucket_end(&mem, 104_857_600.0) * (1.0 + margin) / 1.0;
    ((cpu_est * 1000.0) as i64, mem_est as i64)
}

pub fn config_file(margin: &str) -> String {
    format!(
        "apiVersion: analysis.crane.io/v1alpha1
kind: RecommendationConfiguration
recommenders:
  - name: Resource
    acceptedResources:
      - kind: Deployment
        apiVersion: apps/v1
    config:
      cpu-request-margin-fraction: \"{margin}\"
      mem-request-margin-fraction: \"{margin}\"
      # The test's workloads are seconds old; Crane's default cooldown is 3 minutes.
      creation-cooldown: \"0s\"
"
    )
}

pub fn recommendation_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("analysis.crane.io", "v1alpha1", "Recommendation"),
        "recommendations",
    );
    Api::namespaced_with(client.clone(), namespace, &ar)
}

pub fn rule_api(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("analysis.crane.io", "v1alpha1", "RecommendationRule"),
        "recommendationrules",
    );
    Api::all_with(client.clone(), &ar)
}

/// The Recommendations of a target (by name, whatever its kind).
pub async fn recommendations_of(
    api: &Api<DynamicObject>,
    target: &str,
) -> Result<Vec<DynamicObject>> {
    let list = api
        .list(&kube::api::ListParams::default().labels(&format!(
            "analysis.crane.io/recommendation-target-name={target}"
        )))
        .await?;
    Ok(list.items)
}

/// The Recommendation of a target, when Ready.
pub async fn ready_recommendation(
    api: &Api<DynamicObject>,
    target: &str,
) -> Result<Option<DynamicObject>> {
    Ok(recommendations_of(api, target)
        .await?
        .into_iter()
        .find(|r| {
            r.data
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
        }))
}

/// container → (millicores, bytes) from a Recommendation's recommendedInfo (the patch that
/// would adopt it; recommendedValue holds the same numbers as YAML).
pub fn targets_of(rec: &DynamicObject) -> Result<BTreeMap<String, (i64, i64)>> {
    let info = rec.data["status"]["recommendedInfo"]
        .as_str()
        .context("no recommendedInfo")?;
    let v: Value = serde_json::from_str(info)?;
    let mut out = BTreeMap::new();
    for c in v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .context("no containers")?
    {
        let name = c["name"].as_str().context("name")?;
        let req = &c["resources"]["requests"];
        let cpu = Quantity::parse(req["cpu"].as_str().context("cpu")?)?.milli_value();
        let mem = Quantity::parse(req["memory"].as_str().context("memory")?)?.value();
        out.insert(name.to_string(), (cpu, mem));
    }
    assert!(
        rec.data["status"]["recommendedValue"]
            .as_str()
            .is_some_and(|v| v.contains("resourceRequest:")),
        "{:#}",
        rec.data["status"]
    );
    Ok(out)
}

pub async fn scrape(addr: &str) -> Result<String> {
    Ok(http_client()?
        .get(format!("http://{addr}/metrics"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?)
}

pub fn gauge(text: &str, name: &str, must_contain: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(name) && must_contain.iter().all(|m| l.contains(m)))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Deletes the cluster-scoped rule when the test ends, however it ends.
pub struct RuleGuard {
    kubectl: std::process::Command,
}

impl Drop for RuleGuard {
    fn drop(&mut self) {
        let _ = self
            .kubectl
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// A RecommendationRule, deleted when the guard drops.
pub async fn create_rule(
    cluster: &Cluster,
    client: &kube::Client,
    name: &str,
    spec: Value,
) -> Result<RuleGuard> {
    let rule: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "analysis.crane.io/v1alpha1",
        "kind": "RecommendationRule",
        "metadata": {"name": name},
        "spec": spec,
    }))?;
    rule_api(client)
        .create(&PostParams::default(), &rule)
        .await?;
    let mut kubectl = cluster.kubectl()?;
    kubectl.args([
        "delete",
        "recommendationrules.analysis.crane.io",
        name,
        "--wait=false",
        "--ignore-not-found",
    ]);
    Ok(RuleGuard { kubectl })
}

pub fn tempfile_dir() -> Result<std::path::PathBuf> {
    let d = std::env::temp_dir().join(format!(
        "ferrocrane-craned-e2e-{}-{}",
        std::process::id(),
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos()
    ));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

/// The test workloads' Deployments, created in `namespace`.
pub async fn create_workloads(client: &kube::Client, namespace: &str) -> Result<()> {
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), namespace);
    for w in workloads() {
        let d = serde_json::from_value(w.deployment_json(namespace, 2))?;
        deployments.create(&PostParams::default(), &d).await?;
    }
    Ok(())
}

/// A recommendation configuration with `margin` for the Resource recommender, written to a
/// fresh temporary directory; its path.
pub fn write_config_file(margin: &str) -> Result<std::path::PathBuf> {
    let path = tempfile_dir()?.join("recommendation-configuration.yaml");
    std::fs::write(&path, config_file(margin))?;
    Ok(path)
}

/// The rule both Resource tests create: every Deployment of `namespace`, once a day.
pub fn resource_rule_spec(namespace: &str) -> Value {
    json!({
        "runInterval": "24h",
        "namespaceSelector": {"matchNames": [namespace]},
        "resourceSelectors": [{"kind": "Deployment", "apiVersion": "apps/v1"}],
        "recommenders": [{"name": "Resource"}],
    })
}

/// Waits for `target`'s Ready Recommendation, failing early if craned exits.
pub async fn wait_ready_recommendation(
    recs: &Api<DynamicObject>,
    craned: &mut ServiceProcess,
    target: &str,
    timeout: Duration,
) -> Result<DynamicObject> {
    crate::wait_until(
        &format!("a Ready Resource recommendation for {target}"),
        timeout,
        || {
            let alive = craned.ensure_running();
            async move {
                alive?;
                ready_recommendation(recs, target).await
            }
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", craned.logs()))
}

/// A daily cron window from `from` to `to` minutes after now on the wall clock of `zone`, as
/// (start, end) schedules.
pub fn daily_window(zone: &str, from: i64, to: i64) -> Result<(String, String)> {
    use k8s_openapi::jiff::{Timestamp, ToSpan, tz::TimeZone};
    let now = Timestamp::now().to_zoned(TimeZone::get(zone)?);
    let at = |m: i64| -> Result<String> {
        let t = now.checked_add(m.minutes())?;
        Ok(format!("{} {} * * *", t.minute(), t.hour()))
    };
    Ok((at(from)?, at(to)?))
}

/// Crane's `group/v1alpha1` objects of `kind` (`plural`) in `namespace`, as JSON.
fn crane_api(
    client: &kube::Client,
    namespace: &str,
    group: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1alpha1", kind), plural);
    Api::namespaced_with(client.clone(), namespace, &ar)
}

/// The EffectiveHorizontalPodAutoscalers of `namespace`.
pub fn ehpa_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    crane_api(
        client,
        namespace,
        "autoscaling.crane.io",
        "EffectiveHorizontalPodAutoscaler",
        "effectivehorizontalpodautoscalers",
    )
}

/// The Substitutes of `namespace`.
pub fn substitute_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    crane_api(
        client,
        namespace,
        "autoscaling.crane.io",
        "Substitute",
        "substitutes",
    )
}

/// The TimeSeriesPredictions of `namespace`.
pub fn tsp_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    crane_api(
        client,
        namespace,
        "prediction.crane.io",
        "TimeSeriesPrediction",
        "timeseriespredictions",
    )
}
