//! `kubectl top` against the real control plane and the real Prometheus: a test exporter
//! publishes cAdvisor-style container series and node series for pods and nodes that exist in
//! the cluster, Prometheus scrapes them, the adapter's metrics.k8s.io API answers from them
//! through the default config's resourceRules, and the aggregator proxies kubectl to it.
//!
//! The adapter is the real `metrics-adapter` binary with `config/adapter/default-config.yaml`,
//! registered as the suite's APIServices under the harness' lock for their names.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, Exporter, METRICS_APISERVICES_LOCK, create_bare_node,
    mebibytes, millicores, patch_pod_status, repo_root, running_status, top_rows, wait_until,
};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

const CPU: &str = "container_cpu_usage_seconds_total";
const MEM: &str = "container_memory_working_set_bytes";
const NODE_CPU: &str = "node_cpu_usage_seconds_total";
const NODE_MEM: &str = "node_memory_working_set_bytes";
const MI: f64 = 1024.0 * 1024.0;

/// Runs kubectl with `args`, returning stdout, or the error with stderr.
async fn kubectl(cluster: &Cluster, args: &[&str]) -> Result<String> {
    let mut cmd = cluster.kubectl()?;
    cmd.args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
    if !out.status.success() {
        bail!(
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn near(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= want.abs() * tolerance + 1.0
}

#[tokio::test]
async fn kubectl_top_shows_what_the_exporter_published() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("adapter-top").await?;
    let client = cluster.client().await?;
    let prometheus = cluster.prometheus()?;

    // Two Running pods (one with two containers), one Pending pod with series (must not show),
    // two nodes. Node names carry the namespace so parallel runs do not collide.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let started = "2024-01-01T00:00:00Z";
    for (name, containers, running) in [
        ("web-0", vec!["app", "sidecar"], true),
        ("web-1", vec!["app"], true),
        ("pending", vec!["app"], false),
    ] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": "web", "tier": if name == "web-1" { "b" } else { "a" }}},
            "spec": {"containers": containers.iter().map(|c| json!({"name": c, "image": "registry.invalid/none:1"})).collect::<Vec<_>>()}
        }))?;
        pods.create(&PostParams::default(), &pod).await?;
        if running {
            patch_pod_status(&pods, name, running_status(&containers, started)).await?;
        }
    }
    let nodes_api: Api<Node> = Api::all(client.clone());
    let node_names = [format!("{}-node-a", ns.name), format!("{}-node-b", ns.name)];
    for n in &node_names {
        create_bare_node(
            &nodes_api,
            n,
            json!({"ferrocrane.io/e2e": ns.name.as_str()}),
        )
        .await?;
    }

    let exporter = Exporter::start().await?;
    let ns_name = ns.name.as_str();
    let series = |pod: &'static str, container: &'static str| {
        [
            ("namespace", ns_name),
            ("pod", pod),
            ("container", container),
        ]
    };
    exporter.set_counter_rate(CPU, &series("web-0", "app"), 0.25);
    exporter.set_counter_rate(CPU, &series("web-0", "sidecar"), 0.05);
    exporter.set_counter_rate(CPU, &series("web-1", "app"), 1.2);
    exporter.set_counter_rate(CPU, &series("pending", "app"), 0.5);
    exporter.set(MEM, &series("web-0", "app"), 64.0 * MI);
    exporter.set(MEM, &series("web-0", "sidecar"), 16.0 * MI);
    exporter.set(MEM, &series("web-1", "app"), 200.0 * MI);
    exporter.set(MEM, &series("pending", "app"), 10.0 * MI);
    // cAdvisor's pod-level series (container="") must not be counted twice.
    exporter.set(
        MEM,
        &[("namespace", ns_name), ("pod", "web-0"), ("container", "")],
        999.0 * MI,
    );
    exporter.set_counter_rate(NODE_CPU, &[("node", &node_names[0])], 1.5);
    exporter.set(NODE_MEM, &[("node", &node_names[0])], 2048.0 * MI);
    exporter.set_counter_rate(NODE_CPU, &[("node", &node_names[1])], 0.1);
    exporter.set(NODE_MEM, &[("node", &node_names[1])], 512.0 * MI);
    let _scrape = exporter.register(&prometheus, &format!("{}-exporter", ns.name))?;
    // irate needs two scrapes of every counter.
    for q in [
        format!("irate({CPU}{{namespace=\"{ns_name}\",pod=\"web-1\"}}[4m])"),
        format!("irate({NODE_CPU}{{node=\"{}\"}}[4m])", node_names[1]),
    ] {
        prometheus
            .wait_for_samples(&q, Duration::from_secs(60))
            .await?;
    }

    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(600)).await?;
    let config = std::fs::read_to_string(repo_root().join("config/adapter/default-config.yaml"))?;
    let adapter = AdapterLaunch::new(&config)
        .behind_aggregator(cluster, &ns.name)
        .await?;
    let result = check(cluster, &ns.name, &node_names, &pods).await;

    for n in &node_names {
        let _ = nodes_api.delete(n, &DeleteParams::default()).await;
    }
    if result.is_err() {
        eprintln!("adapter log:\n{}", adapter.process.logs());
    }
    result
}

async fn check(
    cluster: &Cluster,
    ns: &str,
    node_names: &[String; 2],
    pods_api: &Api<Pod>,
) -> Result<()> {
    // behind_aggregator returned once the APIServices were Available.
    // kubectl top pods: per-pod sums of the containers' usage.
    let last_error = std::sync::Mutex::new(String::new());
    let top = wait_until("kubectl top pods", Duration::from_secs(60), || async {
        match kubectl(cluster, &["top", "pods", "-n", ns]).await {
            Ok(out) => Ok(Some(out)),
            Err(e) => {
                if let Ok(mut last) = last_error.lock() {
                    *last = format!("{e:#}");
                }
                Ok(None)
            }
        }
    })
    .await
    .with_context(|| {
        format!(
            "last error: {}",
            last_error.lock().map(|e| e.clone()).unwrap_or_default()
        )
    })?;
    eprintln!("kubectl top pods -n {ns}:\n{top}");
    let pods = top_rows(&top);
    ensure!(
        pods.keys().map(String::as_str).collect::<Vec<_>>() == ["web-0", "web-1"],
        "kubectl top pods: only the Running pods, got:\n{top}"
    );
    for (pod, cpu_m, mem_mi) in [("web-0", 300.0, 80.0), ("web-1", 1200.0, 200.0)] {
        let cols = &pods[pod];
        let cpu = cols.first().and_then(|c| millicores(c));
        let mem = cols.get(1).and_then(|c| mebibytes(c));
        ensure!(
            cpu.is_some_and(|c| near(c, cpu_m, 0.02)) && mem == Some(mem_mi),
            "kubectl top pods: {pod} should use ~{cpu_m}m and {mem_mi}Mi, got:\n{top}"
        );
    }

    // kubectl top pods --containers: per-container rows.
    let top = kubectl(cluster, &["top", "pods", "-n", ns, "--containers", "web-0"]).await?;
    ensure!(
        top.contains("sidecar") && top.contains("16Mi") && top.contains("64Mi"),
        "kubectl top pods --containers:\n{top}"
    );

    // kubectl top nodes: ours among whatever other tests created.
    let top = kubectl(
        cluster,
        &["top", "nodes", "-l", &format!("ferrocrane.io/e2e={ns}")],
    )
    .await?;
    eprintln!("kubectl top nodes:\n{top}");
    let nodes = top_rows(&top);
    for (node, cpu_m, mem_mi) in [
        (&node_names[0], 1500.0, 2048.0),
        (&node_names[1], 100.0, 512.0),
    ] {
        let cols = nodes
            .get(node.as_str())
            .with_context(|| format!("kubectl top nodes has no {node}:\n{top}"))?;
        let cpu = cols.first().and_then(|c| millicores(c));
        let mem = cols.get(2).and_then(|c| mebibytes(c));
        ensure!(
            cpu.is_some_and(|c| near(c, cpu_m, 0.02)) && mem == Some(mem_mi),
            "kubectl top nodes: {node} should use ~{cpu_m}m and {mem_mi}Mi, got:\n{top}"
        );
    }

    // The raw list: upstream's shape.
    let raw = kubectl(
        cluster,
        &[
            "get",
            "--raw",
            &format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods"),
        ],
    )
    .await?;
    eprintln!("GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods:\n{raw}");
    let list: Value = serde_json::from_str(&raw)?;
    ensure!(list["kind"] == "PodMetricsList", "{raw}");
    ensure!(list["apiVersion"] == "metrics.k8s.io/v1beta1", "{raw}");
    let items = list["items"].as_array().context("items")?;
    ensure!(items.len() == 2, "{raw}");
    let web0 = &items[0];
    ensure!(web0["metadata"]["name"] == "web-0", "{raw}");
    ensure!(web0["metadata"]["namespace"] == ns, "{raw}");
    ensure!(web0["metadata"]["labels"]["app"] == "web", "{raw}");
    ensure!(web0["window"] == "5m0s", "{raw}");
    ensure!(
        web0["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{raw}"
    );
    let containers: Vec<(&str, &str)> = web0["containers"]
        .as_array()
        .context("containers")?
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or(""),
                c["usage"]["memory"].as_str().unwrap_or(""),
            )
        })
        .collect();
    ensure!(
        containers == [("app", "64Mi"), ("sidecar", "16Mi")],
        "containers sorted by name, memory in BinarySI: {raw}"
    );

    // labelSelector is honoured; fieldSelector on metadata.name too.
    let raw = kubectl(
        cluster,
        &[
            "get",
            "--raw",
            &format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods?labelSelector=tier%3Db"),
        ],
    )
    .await?;
    let list: Value = serde_json::from_str(&raw)?;
    ensure!(
        list["items"].as_array().map(Vec::len) == Some(1)
            && list["items"][0]["metadata"]["name"] == "web-1",
        "{raw}"
    );
    let raw = kubectl(
        cluster,
        &[
            "get",
            "--raw",
            &format!("/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=metadata.name%3Dweb-0,metadata.namespace%3D{ns}"),
        ],
    )
    .await?;
    let list: Value = serde_json::from_str(&raw)?;
    ensure!(list["items"].as_array().map(Vec::len) == Some(1), "{raw}");

    // One object, and NotFound as upstream words it.
    let raw = kubectl(
        cluster,
        &[
            "get",
            "--raw",
            &format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/web-1"),
        ],
    )
    .await?;
    let one: Value = serde_json::from_str(&raw)?;
    ensure!(
        one["kind"] == "PodMetrics" && one["metadata"]["name"] == "web-1",
        "{raw}"
    );
    let err = kubectl(
        cluster,
        &[
            "get",
            "--raw",
            &format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/pending"),
        ],
    )
    .await
    .err()
    .context("a Pending pod has no metrics")?;
    ensure!(
        format!("{err:#}").contains("pods \"pending\" not found"),
        "{err:#}"
    );
    let err = kubectl(
        cluster,
        &[
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/nodes/no-such-node",
        ],
    )
    .await
    .err()
    .context("a missing node")?;
    ensure!(format!("{err:#}").contains("not found"), "{err:#}");

    // A pod that stops running leaves the answers (the adapter watches Running pods).
    patch_pod_status(pods_api, "web-1", json!({"phase": "Succeeded"})).await?;
    wait_until(
        "web-1 gone from kubectl top",
        Duration::from_secs(30),
        || async {
            let top = kubectl(cluster, &["top", "pods", "-n", ns]).await?;
            Ok((!top_rows(&top).contains_key("web-1")).then_some(()))
        },
    )
    .await?;
    Ok(())
}
