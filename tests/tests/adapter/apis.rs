//! metrics-adapter as a real aggregated API server: its five APIServices become Available on
//! the real kube-apiserver, `kubectl get --raw` through the aggregator returns what a test
//! exporter published (an application's own metrics, scraped by the real Prometheus) and what
//! kwok reports for the pods it runs, unauthenticated and unauthorized callers are refused, and
//! the real kube-controller-manager's HPA scales kwok-run Deployments on its External and Pods
//! metrics.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, Exporter, KWOK_USAGE_CPU, KWOK_USAGE_MEMORY,
    METRICS_APISERVICES_LOCK, MetricsAdapter, adapter_https_client, wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, ListParams, PostParams};

/// Rules for the series this file publishes, plus upstream-style resource rules so the
/// metrics.k8s.io APIService is served too.
const CONFIG: &str = r#"
rules:
- seriesQuery: 'e2e_http_requests{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'e2e_pod_load{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'e2e_queue_depth{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'e2e_hpa_queue{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
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

async fn wait_default_sa(client: &kube::Client, ns: &str) -> Result<()> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    wait_until("default ServiceAccount", Duration::from_secs(60), || {
        let api = api.clone();
        async move { Ok(api.get_opt("default").await?.map(|_| ())) }
    })
    .await
}

fn pod(name: &str, labels: serde_json::Value) -> Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/none:1"}]}
    }))?)
}

#[tokio::test]
async fn custom_and_external_apis_through_the_aggregator() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(600)).await?;
    let ns = cluster.namespace("adapter").await?;
    let client = cluster.client().await?;
    wait_default_sa(&client, &ns.name).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    // web-1 runs on a kwok Node and reports 250m and 64Mi through kwok's resource metrics;
    // web-2 and db-1 do not tolerate kwok's taint and stay Pending.
    for (name, app) in [("web-1", "web"), ("web-2", "web"), ("db-1", "db")] {
        let mut p = pod(name, serde_json::json!({"app": app}))?;
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
    let n = ns.name.as_str();
    exporter.set(
        "e2e_http_requests",
        &[("namespace", n), ("pod", "web-1")],
        1.5,
    );
    exporter.set(
        "e2e_http_requests",
        &[("namespace", n), ("pod", "web-2")],
        4.0,
    );
    exporter.set(
        "e2e_http_requests",
        &[("namespace", n), ("pod", "db-1")],
        0.25,
    );
    exporter.set(
        "e2e_queue_depth",
        &[("namespace", n), ("queue", "jobs")],
        7.0,
    );
    exporter.set(
        "e2e_queue_depth",
        &[("namespace", n), ("queue", "mail")],
        2.0,
    );
    let prometheus = cluster.prometheus()?;
    let _target = exporter.register(&prometheus, &ns.name)?;
    prometheus
        .wait_for_samples(
            &format!("e2e_queue_depth{{namespace=\"{n}\"}}"),
            Duration::from_secs(60),
        )
        .await?;

    let adapter = AdapterLaunch::new(CONFIG)
        .behind_aggregator(cluster, &ns.name)
        .await?;
    let result = async {
        // Discovery lists the metric once a relist has seen it.
        wait_until("custom metric discovered", Duration::from_secs(60), || async {
            let list = cluster.get_raw("/apis/custom.metrics.k8s.io/v1beta1", None).await?;
            Ok(list.ok().filter(|v| {
                v["resources"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|e| e["name"] == "pods/e2e_http_requests"))
            }))
        })
        .await?;

        // v1beta1, every pod labelled app=web.
        let path = format!(
            "/apis/custom.metrics.k8s.io/v1beta1/namespaces/{n}/pods/*/e2e_http_requests?labelSelector=app%3Dweb"
        );
        let list = cluster.get_raw(&path, None).await?.map_err(anyhow::Error::msg)?;
        assert_eq!(list["kind"], "MetricValueList");
        assert_eq!(list["apiVersion"], "custom.metrics.k8s.io/v1beta1");
        let items = list["items"].as_array().context("items")?;
        let got: BTreeMap<String, String> = items
            .iter()
            .map(|i| {
                (
                    i["describedObject"]["name"].as_str().unwrap_or_default().to_owned(),
                    i["value"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            got,
            BTreeMap::from([("web-1".into(), "1500m".into()), ("web-2".into(), "4".into())]),
            "{list}"
        );
        assert_eq!(
            items[0]["describedObject"],
            serde_json::json!({"kind": "Pod", "namespace": n, "name": items[0]["describedObject"]["name"], "apiVersion": "/v1"})
        );
        assert_eq!(items[0]["metricName"], "e2e_http_requests");
        assert!(items[0]["selector"].is_null());

        // v1beta2, one pod.
        let path = format!("/apis/custom.metrics.k8s.io/v1beta2/namespaces/{n}/pods/db-1/e2e_http_requests");
        let one = cluster.get_raw(&path, None).await?.map_err(anyhow::Error::msg)?;
        assert_eq!(one["apiVersion"], "custom.metrics.k8s.io/v1beta2");
        assert_eq!(one["items"][0]["metric"]["name"], "e2e_http_requests");
        assert_eq!(one["items"][0]["value"], "250m");

        // Unknown metric: upstream's NotFound message.
        let path = format!("/apis/custom.metrics.k8s.io/v1beta2/namespaces/{n}/pods/*/nope");
        let err = cluster.get_raw(&path, None).await?.err().context("expected an error")?;
        ensure!(
            err.contains("the server could not find the metric nope for pods"),
            "{err}"
        );

        // External, with a metric selector and metricLabels.
        let path = format!(
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/{n}/e2e_queue_depth?labelSelector=queue%3Djobs"
        );
        let ext = cluster.get_raw(&path, None).await?.map_err(anyhow::Error::msg)?;
        assert_eq!(ext["kind"], "ExternalMetricValueList");
        let items = ext["items"].as_array().context("items")?;
        assert_eq!(items.len(), 1, "{ext}");
        assert_eq!(items[0]["metricName"], "e2e_queue_depth");
        assert_eq!(items[0]["metricLabels"], serde_json::json!({"queue": "jobs"}));
        assert_eq!(items[0]["value"], "7");

        // Straight to the adapter without credentials: 401.
        let base = format!("https://127.0.0.1:{}", adapter.port);
        let custom = format!("{base}/apis/custom.metrics.k8s.io/v1beta1/namespaces/{n}/pods/*/e2e_http_requests");
        let resp = adapter_https_client(cluster, &adapter.ca, false)?.get(&custom).send().await?;
        assert_eq!(resp.status().as_u16(), 401);
        // The front proxy's certificate, for a user without RBAC: the adapter's own
        // SubjectAccessReview says no.
        let resp = adapter_https_client(cluster, &adapter.ca, true)?
            .get(&custom)
            .header("X-Remote-User", "e2e-nobody")
            .send()
            .await?;
        assert_eq!(resp.status().as_u16(), 403);
        let status: serde_json::Value = resp.json().await?;
        ensure!(
            status["message"].as_str().unwrap_or_default().contains("User \"e2e-nobody\" cannot get resource \"pods/e2e_http_requests\""),
            "{status}"
        );
        // Through the API server as a user without RBAC: 403.
        let err = cluster.get_raw(&format!("/apis/custom.metrics.k8s.io/v1beta1/namespaces/{n}/pods/*/e2e_http_requests"), Some("e2e-nobody"))
            .await?
            .err()
            .context("expected forbidden")?;
        ensure!(err.contains("Forbidden") || err.contains("forbidden"), "{err}");

        // Hot reload: a new rule shows up without a restart...
        let config = adapter.dir.join("config.yaml");
        let renamed = CONFIG.replacen(
            "rules:\n",
            "rules:\n- seriesQuery: 'e2e_http_requests{namespace!=\"\",pod!=\"\"}'\n  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}\n  name: {matches: '^e2e_(.*)$', as: 'reloaded_${1}'}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n",
            1,
        );
        std::fs::write(&config, &renamed)?;
        let has = |v: &serde_json::Value, name: &str| {
            v["resources"]
                .as_array()
                .is_some_and(|r| r.iter().any(|e| e["name"] == name))
        };
        wait_until("reloaded rule discovered", Duration::from_secs(60), || async {
            let list = cluster.get_raw("/apis/custom.metrics.k8s.io/v1beta1", None).await?;
            Ok(list.ok().filter(|v| has(v, "pods/reloaded_http_requests")))
        })
        .await?;
        // ...and a broken file keeps the last good config, saying why.
        std::fs::write(&config, format!("{renamed}\nbogus: true\n"))?;
        wait_until("bad reload reported", Duration::from_secs(60), || async {
            Ok(adapter
                .process
                .logs()
                .contains("configuration reload failed")
                .then_some(()))
        })
        .await?;
        let list = cluster.get_raw("/apis/custom.metrics.k8s.io/v1beta1", None)
            .await?
            .map_err(anyhow::Error::msg)?;
        ensure!(
            has(&list, "pods/reloaded_http_requests") && has(&list, "pods/e2e_http_requests"),
            "{list}"
        );
        let logs = adapter.process.logs();
        ensure!(logs.contains("bogus"), "the reload error names the bad key:\n{logs}");

        // Discovery of the resource metrics group is served, and kubectl top goes through
        // the same binary (the metrics.k8s.io routes, behind the same authentication).
        let rm = cluster.get_raw("/apis/metrics.k8s.io/v1beta1", None)
            .await?
            .map_err(anyhow::Error::msg)?;
        assert_eq!(rm["resources"][0]["kind"], "NodeMetrics");
        let top = wait_until("kubectl top pods", Duration::from_secs(60), || async {
            let mut cmd = cluster.kubectl()?;
            cmd.args(["top", "pods", "-n", n, "--no-headers"]);
            let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            // irate needs two scrapes of the new counter before it reads the rate.
            let cpu_m = text
                .lines()
                .find(|l| l.starts_with("web-1"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|c| c.trim_end_matches('m').parse::<i64>().ok());
            Ok((out.status.success() && cpu_m.is_some_and(|m| m > 0)).then_some(text))
        })
        .await?;
        let row: Vec<&str> = top
            .lines()
            .find(|l| l.starts_with("web-1"))
            .map(|l| l.split_whitespace().collect())
            .unwrap_or_default();
        let cpu_m: i64 = row
            .get(1)
            .and_then(|c| c.trim_end_matches('m').parse().ok())
            .context("cpu column")?;
        ensure!((200..=300).contains(&cpu_m), "kubectl top pods:\n{top}");
        ensure!(row.get(2) == Some(&"64Mi"), "kubectl top pods:\n{top}");
        // Only Running pods are reported (upstream's semantics): web-2 is Pending.
        ensure!(!top.contains("web-2"), "kubectl top pods:\n{top}");
        Ok::<_, anyhow::Error>(())
    }
    .await;
    if result.is_err() {
        eprintln!("adapter log:\n{}", adapter.process.logs());
    }
    result
}

/// `load` spread evenly over the Running pods of `selector` (kwok runs them) as
/// `e2e_pod_load`, an application's own metric, which only an exporter can publish.
async fn simulate_pods(
    pods: Api<Pod>,
    exporter: Arc<Exporter>,
    ns: String,
    selector: String,
    load: Arc<Mutex<f64>>,
) {
    let mut published: Vec<String> = Vec::new();
    loop {
        if let Ok(list) = pods.list(&ListParams::default().labels(&selector)).await {
            let mut running = Vec::new();
            for p in list.items {
                let Some(name) = p.metadata.name.clone() else {
                    continue;
                };
                if p.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                if phase == Some("Running") {
                    running.push(name);
                }
            }
            let total = load.lock().map(|l| *l).unwrap_or(0.0);
            for gone in published.iter().filter(|p| !running.contains(p)) {
                exporter.remove(
                    "e2e_pod_load",
                    &[("namespace", ns.as_str()), ("pod", gone.as_str())],
                );
            }
            for p in &running {
                exporter.set(
                    "e2e_pod_load",
                    &[("namespace", ns.as_str()), ("pod", p.as_str())],
                    total / running.len() as f64,
                );
            }
            published = running;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn hpa(name: &str, metric: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 8,
            "metrics": [metric],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0},
                "scaleDown": {"stabilizationWindowSeconds": 0,
                              "policies": [{"type": "Percent", "value": 100, "periodSeconds": 1}]}
            }
        }
    })
}

async fn wait_replicas(
    api: &Api<Deployment>,
    name: &str,
    want: i32,
    adapter: &MetricsAdapter,
) -> Result<()> {
    wait_until(
        &format!("deployment {name} scaled to {want}"),
        Duration::from_secs(150),
        || async {
            let d = api.get(name).await?;
            let got = d.spec.replicas.unwrap_or(0);
            Ok((got == want).then_some(()))
        },
    )
    .await
    .with_context(|| format!("adapter log:\n{}", adapter.process.logs()))
}

#[tokio::test]
async fn hpa_scales_deployments_on_external_and_pods_metrics() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(600)).await?;
    let ns = cluster.namespace("adapter-hpa").await?;
    let client = cluster.client().await?;
    wait_default_sa(&client, &ns.name).await?;
    let n = ns.name.clone();

    let exporter = Arc::new(Exporter::start().await?);
    exporter.set("e2e_hpa_queue", &[("namespace", &n)], 1.0);
    let prometheus = cluster.prometheus()?;
    let _target = exporter.register(&prometheus, &n)?;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    for name in ["queue-worker", "web"] {
        deployments
            .create(
                &PostParams::default(),
                &cluster.kwok_deployment(name, 1, serde_json::json!({}))?,
            )
            .await?;
    }
    let load = Arc::new(Mutex::new(0.5));
    let sim = tokio::spawn(simulate_pods(
        Api::namespaced(client.clone(), &n),
        exporter.clone(),
        n.clone(),
        "app=web".into(),
        load.clone(),
    ));
    prometheus
        .wait_for_samples(
            &format!("e2e_pod_load{{namespace=\"{n}\"}}"),
            Duration::from_secs(60),
        )
        .await?;

    let adapter = AdapterLaunch::new(CONFIG)
        .behind_aggregator(cluster, &n)
        .await?;
    let result = async {
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
        let external = hpa(
            "queue-worker",
            serde_json::json!({"type": "External", "external": {
                "metric": {"name": "e2e_hpa_queue"},
                "target": {"type": "AverageValue", "averageValue": "2"}}}),
        );
        let pods_metric = hpa(
            "web",
            serde_json::json!({"type": "Pods", "pods": {
                "metric": {"name": "e2e_pod_load"},
                "target": {"type": "AverageValue", "averageValue": "1"}}}),
        );
        for h in [external, pods_metric] {
            hpas.create(&PostParams::default(), &serde_json::from_value(h)?)
                .await?;
        }

        // External: 8 queued / 2 per replica = 4 replicas, then back to 1.
        exporter.set("e2e_hpa_queue", &[("namespace", &n)], 8.0);
        wait_replicas(&deployments, "queue-worker", 4, &adapter).await?;
        // Pods: a load of 3 spread over the pods at 1 per pod = 3 replicas.
        if let Ok(mut l) = load.lock() {
            *l = 3.0;
        }
        wait_replicas(&deployments, "web", 3, &adapter).await?;

        exporter.set("e2e_hpa_queue", &[("namespace", &n)], 1.0);
        if let Ok(mut l) = load.lock() {
            *l = 0.5;
        }
        wait_replicas(&deployments, "queue-worker", 1, &adapter).await?;
        wait_replicas(&deployments, "web", 1, &adapter).await?;
        Ok::<_, anyhow::Error>(())
    }
    .await;
    sim.abort();
    if result.is_err() {
        let mut kubectl = cluster.kubectl()?;
        kubectl.args(["describe", "hpa", "-n", &n]);
        if let Ok(out) = kubectl.output() {
            eprintln!("{}", String::from_utf8_lossy(&out.stdout));
        }
    }
    result
}
