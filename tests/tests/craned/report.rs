//! `craned recommend` against the real control plane and a Prometheus holding 7 days of
//! backfilled cAdvisor-style history for the pods the controller-manager created: the JSON
//! report's requests and replicas equal values computed here, independently, from the same
//! synthetic series; a look-alike Deployment's heavy usage does not leak in; the other formats
//! carry the same numbers.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::{Cluster, History, HistoryPrometheus, Workload, binary, wait_until};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;

const MI: f64 = 1024.0 * 1024.0;
const DAYS: i64 = 7;

/// Usage of one pod's container at minute `i`: CPU cores and memory bytes.
type Profile = fn(i64) -> (f64, f64);

/// 90% of minutes quiet, every tenth busy: the p99 of the usage-weighted histogram lands in
/// the busy bucket, the p95 of the workload total on the busy total.
fn api_profile(i: i64) -> (f64, f64) {
    if i % 10 == 0 {
        (0.45, 750.0 * MI)
    } else {
        (0.15, 350.0 * MI)
    }
}

/// The look-alike: ten times heavier; if its pods leaked into `api` the numbers would show it.
fn canary_profile(_: i64) -> (f64, f64) {
    (2.5, 3000.0 * MI)
}

fn db_profile(_: i64) -> (f64, f64) {
    (0.75, 1100.0 * MI)
}

fn workload(kind: &str, name: &str, replicas: i32, cpu: &str, memory: &str) -> Value {
    let w = if kind == "StatefulSet" {
        Workload::stateful_set(name)
    } else {
        Workload::deployment(name)
    };
    w.replicas(replicas)
        .container("app", cpu, memory)
        .json(None)
}

async fn pods_of(pods: &Api<Pod>, app: &str, n: usize) -> Result<Vec<String>> {
    let lp = ListParams::default().labels(&format!("app={app}"));
    wait_until(
        &format!("{n} pods of {app}"),
        Duration::from_secs(90),
        || {
            let pods = pods.clone();
            let lp = lp.clone();
            async move {
                let mut names: Vec<String> = pods
                    .list(&lp)
                    .await?
                    .items
                    .iter()
                    .map(|p| p.name_any())
                    .collect();
                names.sort();
                Ok((names.len() == n).then_some(names))
            }
        },
    )
    .await
}

/// cAdvisor's two series for each pod, one sample a minute over `[start, end]` (whole
/// minutes): the CPU counter grows by the profile's cores × 60 s each minute.
fn history(ns: &str, pods: &[(String, Profile)], start: i64, end: i64) -> History {
    let mut history = History::new();
    let first = start / 60;
    for (pod, profile) in pods {
        let labels = format!(
            "namespace=\"{ns}\",pod=\"{pod}\",container=\"app\",image=\"registry.invalid/app:1\""
        );
        history.cadvisor(
            &labels,
            first..=end / 60,
            |m| profile(m - first).0,
            |m| profile(m - first).1,
        );
    }
    history
}

/// Crane's Resource estimate, computed the textbook way: every sample weighs its value; the
/// p99 is the upper edge of the first bucket (of `bucket` width) where the cumulative weight
/// reaches 99%; plus 15%.
fn resource_estimate(values: &[f64], bucket: f64) -> f64 {
    let mut weights: std::collections::BTreeMap<i64, f64> = Default::default();
    for &v in values {
        *weights.entry((v / bucket).floor() as i64).or_default() += v;
    }
    let total: f64 = weights.values().sum();
    let mut acc = 0.0;
    for (b, w) in weights {
        acc += w;
        if acc >= 0.99 * total {
            return (b + 1) as f64 * bucket * 1.15;
        }
    }
    unreachable!("the cumulative weight reaches the total")
}

/// The CPU estimate (buckets of 0.1 core) in millicores, truncated as Crane truncates.
fn resource_millicores(values: &[f64]) -> i64 {
    (resource_estimate(values, 0.1) * 1000.0) as i64
}

/// Crane's Replicas bound: ceil(p95(total) / (0.5 × request)), p95 as montanaflynn's
/// (whole index → that element; the profiles keep it away from the in-between case).
fn replicas_estimate(totals: &mut [f64], request: f64) -> i64 {
    totals.sort_by(f64::total_cmp);
    let idx = (0.95 * totals.len() as f64).ceil() as usize - 1;
    (totals[idx] / (0.5 * request)).ceil() as i64
}

fn run_report(cluster: &Cluster, prometheus: &str, ns: &str, format: &str) -> Result<String> {
    let out = Command::new(binary("craned")?)
        .args([
            "recommend",
            "--prometheus-address",
            prometheus,
            "--namespace",
            ns,
        ])
        .args(["--format", format])
        .arg(format!("--kubeconfig={}", cluster.kubeconfig()?.display()))
        .output()?;
    if !out.status.success() {
        bail!(
            "craned recommend --format {format} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

fn find<'a>(report: &'a Value, kind: &str, name: &str) -> Result<&'a Value> {
    report["workloads"]
        .as_array()
        .context("workloads")?
        .iter()
        .find(|w| w["kind"] == kind && w["name"] == name)
        .with_context(|| format!("{kind} {name} in the report"))
}

#[tokio::test]
async fn report_matches_independent_computation_from_backfilled_history() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("craned-report").await?;
    let client = cluster.client().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let pp = PostParams::default();
    deployments
        .create(
            &pp,
            &serde_json::from_value(workload("Deployment", "api", 2, "500m", "512Mi"))?,
        )
        .await?;
    deployments
        .create(
            &pp,
            &serde_json::from_value(workload("Deployment", "api-canary", 1, "250m", "256Mi"))?,
        )
        .await?;
    statefulsets
        .create(
            &pp,
            &serde_json::from_value(workload("StatefulSet", "db", 1, "1", "1Gi"))?,
        )
        .await?;
    let api_pods = pods_of(&pods, "api", 2).await?;
    let canary_pods = pods_of(&pods, "api-canary", 1).await?;
    let db_pods = pods_of(&pods, "db", 1).await?;
    assert_eq!(db_pods, vec!["db-0".to_string()]);

    // Seven days up to an hour ago, whole minutes.
    let now = Timestamp::now().as_second();
    let end = (now / 60) * 60 - 3600;
    let start = end - DAYS * 86_400 + 3600;
    let mut series: Vec<(String, Profile)> = Vec::new();
    series.extend(api_pods.iter().map(|p| (p.clone(), api_profile as Profile)));
    series.extend(
        canary_pods
            .iter()
            .map(|p| (p.clone(), canary_profile as Profile)),
    );
    series.extend(db_pods.iter().map(|p| (p.clone(), db_profile as Profile)));
    let prometheus = HistoryPrometheus::start(&history(&ns.name, &series, start, end)).await?;

    let report: Value = serde_json::from_str(&run_report(
        cluster,
        &prometheus.handle.url,
        &ns.name,
        "json",
    )?)?;

    // Independent expectations from the profiles. The first minute has no irate (one sample),
    // which shifts nothing: the buckets are far from the thresholds.
    let minutes = (end - start) / 60 + 1;
    let cpu_of = |p: Profile| -> Vec<f64> { (1..minutes).map(|i| p(i).0).collect() };
    let mem_of = |p: Profile| -> Vec<f64> { (0..minutes).map(|i| p(i).1).collect() };

    // api: p99 of 0.15/0.45 cores → the 0.4–0.5 bucket → 0.5 × 1.15 = 575m;
    // memory 350/750 MiB → the 700–800 MiB bucket → 800 MiB × 1.15.
    let (api_cpu, api_mem) = (cpu_of(api_profile), mem_of(api_profile));
    let api = find(&report, "Deployment", "api")?;
    let app = &api["containers"][0];
    assert_eq!(app["name"], "app");
    assert_eq!(app["current"]["cpuMillis"], 500);
    assert_eq!(app["current"]["memoryBytes"], 512 * 1024 * 1024);
    assert_eq!(
        app["recommended"]["cpuMillis"],
        resource_millicores(&api_cpu)
    );
    assert_eq!(app["recommended"]["cpuMillis"], 575);
    let api_mem_bytes = resource_estimate(&api_mem, 100.0 * MI) as i64;
    assert_eq!(app["recommended"]["memoryBytes"], api_mem_bytes);
    // Both pods, every minute (the query's 5 minutes of lookback past the end add a few).
    let samples = app["memorySamples"].as_i64().context("memorySamples")?;
    assert!(
        (2 * minutes..=2 * (minutes + 5)).contains(&samples),
        "{samples}"
    );
    // Replicas: p95 of the total (two pods in step) over half of each pod's request.
    let mut total_cpu: Vec<f64> = api_cpu.iter().map(|v| v * 2.0).collect();
    let mut total_mem: Vec<f64> = api_mem.iter().map(|v| v * 2.0).collect();
    let by_cpu = replicas_estimate(&mut total_cpu, 0.5);
    let by_mem = replicas_estimate(&mut total_mem, 512.0 * MI);
    assert_eq!((by_cpu, by_mem), (4, 6));
    assert_eq!(api["replicas"]["current"], 2);
    assert_eq!(api["replicas"]["recommended"], by_cpu.max(by_mem));

    // The look-alike's pods count for it alone.
    let canary = find(&report, "Deployment", "api-canary")?;
    assert_eq!(
        canary["containers"][0]["recommended"]["cpuMillis"],
        resource_millicores(&cpu_of(canary_profile))
    );
    let samples = canary["containers"][0]["memorySamples"]
        .as_i64()
        .context("memorySamples")?;
    assert!((minutes..=minutes + 5).contains(&samples), "{samples}");

    let db = find(&report, "StatefulSet", "db")?;
    let d = &db["containers"][0];
    let (mut db_cpu, mut db_mem) = (cpu_of(db_profile), mem_of(db_profile));
    assert_eq!(d["recommended"]["cpuMillis"], resource_millicores(&db_cpu));
    assert_eq!(
        d["recommended"]["memoryBytes"],
        resource_estimate(&db_mem, 100.0 * MI) as i64
    );
    assert_eq!(
        db["replicas"]["recommended"],
        replicas_estimate(&mut db_cpu, 1.0).max(replicas_estimate(&mut db_mem, 1024.0 * MI))
    );

    // The other formats carry the same numbers.
    let table = run_report(cluster, &prometheus.handle.url, &ns.name, "table")?;
    let api_line = table
        .lines()
        .find(|l| l.contains(" api ") && l.contains("Deployment"))
        .context("api's table line")?;
    assert!(api_line.contains("575m (+15%)"), "{api_line}");
    let api_mem_text = app["recommended"]["memory"].as_str().context("memory")?;
    assert!(
        api_line.contains(&format!("{api_mem_text} (+80%)")),
        "{api_line}"
    );
    let csv = run_report(cluster, &prometheus.handle.url, &ns.name, "csv")?;
    assert!(
        csv.lines().any(|l| l.starts_with(&format!(
            "{},Deployment,api,app,500,575,536870912,{api_mem_bytes},2,6,false,",
            ns.name
        ))),
        "{csv}"
    );
    let html = run_report(cluster, &prometheus.handle.url, &ns.name, "html")?;
    // To look at what a person would see: CRANED_REPORT_OUT=/some/dir.
    if let Ok(dir) = std::env::var("CRANED_REPORT_OUT") {
        std::fs::write(format!("{dir}/report.html"), &html)?;
        std::fs::write(format!("{dir}/report.txt"), &table)?;
    }
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"));
    // Two charts per container: api, api-canary and db.
    assert_eq!(html.matches("<svg").count(), 6);
    assert!(html.contains("recommended 575m"));
    Ok(())
}
