//! metrics-adapter and craned on the query layers users put in front of Prometheus when one
//! is not enough (issue 16, docs/backends.md): VictoriaMetrics single-node, and Thanos Query
//! over two Prometheus replicas with sidecars. Each backend must give the answers a plain
//! Prometheus gives (tests/tests/adapter/apis.rs, tests/tests/craned/recommendations.rs) — discovery, custom,
//! external and resource metrics, a real HPA scaling, Recommendations equal to the values
//! computed from the history — and through Thanos the replicas' series must be deduplicated
//! and a replica going down must never produce a wrong value.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{
    AdapterLaunch, Backend, BackendKind, Cluster, ClusterLock, Exporter, KWOK_USAGE_CPU,
    KWOK_USAGE_MEMORY, METRICS_APISERVICES_LOCK, MetricsAdapter, ServiceProcess,
    install_craned_crds, mebibytes, millicores, top_rows, wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use ferrocrane_e2e::craned::*;

const ADAPTER_CONFIG: &str = r#"
rules:
- seriesQuery: 'e2e_http_requests{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'e2e_queue_depth{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum(irate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    nodeQuery: 'sum(irate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  window: 1m
"#;

/// The value of the external metric `e2e_queue_depth` for queue `jobs`, or the error.
async fn queue_depth(cluster: &Cluster, ns: &str) -> Result<std::result::Result<String, String>> {
    let path = format!(
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/e2e_queue_depth?labelSelector=queue%3Djobs"
    );
    Ok(cluster.get_raw(&path, None).await?.map(|list| {
        list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|i| i["value"].as_str().unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    }))
}

fn hpa(name: &str, metric: Value) -> Value {
    json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 8,
            "metrics": [metric],
            "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0}}
        }
    })
}

async fn adapter_on(kind: BackendKind) -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(900)).await?;
    let ns = cluster.namespace("backend-adapter").await?;
    let n = ns.name.clone();
    let client = cluster.client().await?;
    let sa: Api<ServiceAccount> = Api::namespaced(client.clone(), &n);
    wait_until(
        "default ServiceAccount",
        Duration::from_secs(60),
        || async { Ok(sa.get_opt("default").await?.map(|_| ())) },
    )
    .await?;

    let mut backend = Backend::live(kind, cluster).await?;

    // web-1 runs on a kwok node with usage annotations (resource metrics); web-2 stays
    // Pending (no toleration).
    let pods: Api<Pod> = Api::namespaced(client.clone(), &n);
    for name in ["web-1", "web-2"] {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "registry.invalid/none:1"}]}
        }))?;
        if name == "web-1" {
            p.metadata.annotations = Some(
                [(KWOK_USAGE_CPU, "250m"), (KWOK_USAGE_MEMORY, "64Mi")]
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .into(),
            );
            let spec = p.spec.as_mut().context("pod spec")?;
            spec.node_selector = Some([("type".to_owned(), "kwok".to_owned())].into());
            spec.tolerations = Some(vec![serde_json::from_value(cluster.kwok_toleration()?)?]);
        }
        pods.create(&PostParams::default(), &p).await?;
    }
    let exporter = Exporter::start().await?;
    exporter.set(
        "e2e_http_requests",
        &[("namespace", &n), ("pod", "web-1")],
        1.5,
    );
    exporter.set(
        "e2e_http_requests",
        &[("namespace", &n), ("pod", "web-2")],
        4.0,
    );
    exporter.set(
        "e2e_queue_depth",
        &[("namespace", &n), ("queue", "jobs")],
        7.0,
    );
    exporter.set(
        "e2e_queue_depth",
        &[("namespace", &n), ("queue", "mail")],
        2.0,
    );
    exporter.set("e2e_hpa_queue", &[("namespace", &n)], 1.0);
    // The cluster's Prometheus and the backend read the same target files.
    let _target = exporter.register(&cluster.prometheus()?, &n)?;
    let view = backend.handle();
    view.wait_for_samples(
        &format!("e2e_queue_depth{{namespace=\"{n}\"}}"),
        Duration::from_secs(90),
    )
    .await
    .with_context(|| backend.logs())?;

    // Every pods/* query over a few pods goes out as a POST form (the URL limit is set low),
    // the short ones as GET: both verbs on the real engine.
    let adapter = AdapterLaunch::new(ADAPTER_CONFIG)
        .prometheus(&backend.url)
        .arg("--prometheus-max-get-length=300")
        .behind_aggregator(cluster, &n)
        .await?;
    let result = async {
        wait_until("custom metric discovered", Duration::from_secs(60), || async {
            let list = cluster.get_raw("/apis/custom.metrics.k8s.io/v1beta1", None).await?;
            Ok(list.ok().filter(|v| {
                v["resources"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|e| e["name"] == "pods/e2e_http_requests"))
            }))
        })
        .await?;

        let path = format!(
            "/apis/custom.metrics.k8s.io/v1beta1/namespaces/{n}/pods/*/e2e_http_requests?labelSelector=app%3Dweb"
        );
        let list = cluster.get_raw(&path, None).await?.map_err(anyhow::Error::msg)?;
        let got: BTreeMap<String, String> = list["items"]
            .as_array()
            .context("items")?
            .iter()
            .map(|i| {
                (
                    i["describedObject"]["name"].as_str().unwrap_or_default().to_owned(),
                    i["value"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        ensure!(
            got == BTreeMap::from([("web-1".into(), "1500m".into()), ("web-2".into(), "4".into())]),
            "{kind}: {list}"
        );
        // External: summed over the series of queue=jobs; through Thanos, 14 would mean the
        // two replicas' copies were both counted.
        ensure!(queue_depth(cluster, &n).await? == Ok("7".into()), "{kind}");

        // metrics.k8s.io from kwok's resource metrics, as kubectl top reads it.
        let (cpu_m, mem_mi) = wait_until("kubectl top pods", Duration::from_secs(90), || async {
            let mut cmd = cluster.kubectl()?;
            cmd.args(["top", "pods", "-n", &n]);
            let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
            let rows = top_rows(&String::from_utf8_lossy(&out.stdout));
            let web = rows.get("web-1");
            let cpu = web.and_then(|r| millicores(r.first()?));
            let mem = web.and_then(|r| mebibytes(r.get(1)?));
            // irate needs two scrapes of the new counter before it reads a rate.
            Ok(cpu.zip(mem).filter(|(c, _)| *c > 0.0))
        })
        .await?;
        ensure!((200.0..=300.0).contains(&cpu_m), "{kind}: web-1 at {cpu_m}m");
        ensure!(mem_mi == 64.0, "{kind}: web-1 at {mem_mi}Mi");

        // A real HPA on the External metric: 8 queued / 2 per replica = 4 replicas.
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
        deployments
            .create(
                &PostParams::default(),
                &cluster.kwok_deployment("queue-worker", 1, json!({}))?,
            )
            .await?;
        let hpas: Api<kube::api::DynamicObject> = Api::namespaced_with(
            client.clone(),
            &n,
            &kube::api::ApiResource {
                group: "autoscaling".into(),
                version: "v2".into(),
                api_version: "autoscaling/v2".into(),
                kind: "HorizontalPodAutoscaler".into(),
                plural: "horizontalpodautoscalers".into(),
            },
        );
        let h = hpa(
            "queue-worker",
            json!({"type": "External", "external": {
                "metric": {"name": "e2e_hpa_queue"},
                "target": {"type": "AverageValue", "averageValue": "2"}}}),
        );
        hpas.create(&PostParams::default(), &serde_json::from_value(h)?)
            .await?;
        // The external rule above does not cover e2e_hpa_queue: add it by hot reload, which
        // also proves a reload relists against this backend.
        let with_hpa_rule = ADAPTER_CONFIG.replacen(
            "externalRules:\n",
            "externalRules:\n- seriesQuery: 'e2e_hpa_queue{namespace!=\"\"}'\n  resources: {overrides: {namespace: {resource: namespace}}}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'\n",
            1,
        );
        std::fs::write(adapter.dir.join("config.yaml"), with_hpa_rule)?;
        exporter.set("e2e_hpa_queue", &[("namespace", &n)], 8.0);
        wait_until("queue-worker scaled to 4", Duration::from_secs(150), || async {
            let d = deployments.get("queue-worker").await?;
            Ok((d.spec.replicas == Some(4)).then_some(()))
        })
        .await?;

        if kind == BackendKind::Thanos {
            thanos_replica_down(cluster, &n, &mut backend, &adapter).await?;
        }
        Ok::<_, anyhow::Error>(())
    }
    .await;
    if result.is_err() {
        eprintln!(
            "adapter log:\n{}\n{}",
            adapter.process.logs(),
            backend.logs()
        );
    }
    result
}

/// Both replicas hold the series (dedup=false sees two copies); Query answers one. Then a
/// replica fails: with its Prometheus down behind a live sidecar, Query cannot give a complete
/// answer and — partial responses refused, the adapter's default — the adapter fails loudly
/// with Thanos' reason instead of serving a sum over part of the data; with the whole replica
/// gone, the remaining one answers, right.
async fn thanos_replica_down(
    cluster: &Cluster,
    n: &str,
    backend: &mut Backend,
    adapter: &MetricsAdapter,
) -> Result<()> {
    let selector = format!("e2e_queue_depth{{namespace=\"{n}\",queue=\"jobs\"}}");
    let http = ferrocrane_e2e::http_client()?;
    let copies = |dedup: &'static str| {
        let http = http.clone();
        let url = format!("{}/api/v1/query", backend.url);
        let selector = selector.clone();
        async move {
            let body: Value = http
                .get(url)
                .query(&[("query", selector.as_str()), ("dedup", dedup)])
                .send()
                .await?
                .json()
                .await?;
            anyhow::Ok(body["data"]["result"].as_array().map_or(0, Vec::len))
        }
    };
    ensure!(
        copies("false").await? == 2,
        "both replicas scraped the series"
    );
    ensure!(copies("true").await? == 1, "Query deduplicates them");

    // Polled by hand, not with wait_until: a wrong value must fail at once, not be retried.
    let deadline = Instant::now() + Duration::from_secs(60);
    backend.stop("prometheus-b")?;
    let refused = loop {
        match queue_depth(cluster, n).await? {
            Err(e) => break e,
            Ok(v) => ensure!(v == "7", "a wrong value while replica b fails: {v}"),
        }
        ensure!(
            Instant::now() < deadline,
            "replica b's failure never showed"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    eprintln!("Thanos, replica b's Prometheus down, partial responses refused: {refused}");
    // The log carries Thanos' own error type and text: which store failed, and why.
    let logs = adapter.process.logs();
    ensure!(
        logs.contains("execution: expanding series") && logs.contains("receive series from"),
        "{logs}"
    );
    ensure!(
        refused.contains("InternalError") || refused.contains("500"),
        "{refused}"
    );

    backend.stop("sidecar-b")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match queue_depth(cluster, n).await? {
            Ok(v) => {
                ensure!(v == "7", "a wrong value with replica b gone: {v}");
                eprintln!("Thanos, replica b gone: {v}, from replica a alone");
                break;
            }
            Err(e) => ensure!(
                Instant::now() < deadline,
                "no answer from replica a alone: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn adapter_on_victoria_metrics() -> Result<()> {
    adapter_on(BackendKind::VictoriaMetrics).await
}

#[tokio::test(flavor = "multi_thread")]
async fn adapter_on_thanos_over_two_replicas() -> Result<()> {
    adapter_on(BackendKind::Thanos).await
}

/// craned's Resource recommendations from the same week of history as tests/tests/craned/recommendations.rs,
/// loaded into the backend, must equal the values computed from that history.
async fn craned_on(kind: BackendKind) -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("backend-craned").await?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end_minute = now / MINUTE - 1;
    let backend = Backend::history(kind, &history(&ns.name, end_minute)).await?;

    create_workloads(&client, &ns.name).await?;
    let config_path = write_config_file("0.15")?;
    // Long selectors as POST: the backend must take craned's queries either way.
    let mut craned: ServiceProcess =
        CranedLaunch::new(cluster, &backend.url, &config_path, &ns.name)?
            .leader_elect()
            .arg("--prometheus-max-get-length=200")
            .start()
            .await?;
    let _guard = create_rule(
        cluster,
        &client,
        &format!("e2e-{}", ns.name),
        resource_rule_spec(&ns.name),
    )
    .await?;
    let recs = recommendation_api(&client, &ns.name);
    for w in workloads() {
        let rec = wait_ready_recommendation(&recs, &mut craned, w.name, Duration::from_secs(120))
            .await
            .with_context(|| format!("{kind}:\n{}", backend.logs()))?;
        let got = targets_of(&rec)?;
        for c in &w.containers {
            let want = expected(&c.usage, end_minute, 0.15);
            ensure!(
                got.get(c.name) == Some(&want),
                "{kind}: {}/{}: got {:?}, want {want:?}",
                w.name,
                c.name,
                got.get(c.name)
            );
        }
    }
    // Neither serves Prometheus' remote read (Thanos Query: 404; VictoriaMetrics does not
    // even say its version): craned must have said so and used range queries.
    let log = craned.logs();
    ensure!(
        log.contains("reading history with range queries"),
        "{kind}: craned did not report falling back from remote read:\n{log}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn craned_on_victoria_metrics() -> Result<()> {
    craned_on(BackendKind::VictoriaMetrics).await
}

#[tokio::test(flavor = "multi_thread")]
async fn craned_on_thanos_over_two_replicas() -> Result<()> {
    craned_on(BackendKind::Thanos).await
}
