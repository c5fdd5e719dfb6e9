//! ksm against the real control plane: Prometheus scrapes it, objects the test creates,
//! updates and deletes show up (and go away) in PromQL, and shards add up to the whole.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;
use ferrocrane_e2e::{Cluster, http_client, wait_until};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

use ferrocrane_e2e::ksm::{sample_lines, scrape, start_ksm};

fn configmap(name: &str) -> Result<ConfigMap> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": { "team": "core" } }, "data": { "k": "v" }
    }))?)
}

#[tokio::test]
async fn prometheus_sees_objects_come_change_and_go() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-e2e").await?;
    let client = cluster.client().await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    configmaps
        .create(&PostParams::default(), &configmap("before-start")?)
        .await?;

    let ksm = start_ksm(
        cluster,
        &[
            "--resources=configmaps,deployments".to_string(),
            format!("--namespaces={}", ns.name),
            "--metric-labels-allowlist=configmaps=[team]".to_string(),
        ],
    )
    .await?;
    let prometheus = cluster.prometheus()?;
    let _target = prometheus.add_scrape_target("ksm", &ksm.metrics, "/metrics")?;
    let n = &ns.name;

    // An object that existed before ksm started, with its allowlisted label.
    let labels = prometheus
        .wait_for_samples(
            &format!("kube_configmap_labels{{namespace=\"{n}\",configmap=\"before-start\"}}"),
            Duration::from_secs(60),
        )
        .await?;
    assert_eq!(
        labels[0].labels.get("label_team").map(String::as_str),
        Some("core")
    );

    // Created while ksm runs.
    configmaps
        .create(&PostParams::default(), &configmap("during")?)
        .await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), n);
    let deploy: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "web" },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": "web" } },
            "template": { "metadata": { "labels": { "app": "web" } },
                          "spec": { "containers": [{ "name": "c", "image": "registry.invalid/none:1" }] } }
        }
    }))?;
    deployments.create(&PostParams::default(), &deploy).await?;
    prometheus
        .wait_for_samples(
            &format!("kube_configmap_info{{namespace=\"{n}\",configmap=\"during\"}}"),
            Duration::from_secs(60),
        )
        .await?;
    let replicas = format!("kube_deployment_spec_replicas{{namespace=\"{n}\",deployment=\"web\"}}");
    wait_until("spec replicas 2", Duration::from_secs(60), || async {
        Ok(prometheus
            .query(&replicas)
            .await?
            .first()
            .filter(|s| s.value == 2.0)
            .map(|_| ()))
    })
    .await?;

    // Updated.
    let scale = serde_json::json!({ "spec": { "replicas": 5 } });
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await?;
    wait_until("spec replicas 5", Duration::from_secs(60), || async {
        Ok(prometheus
            .query(&replicas)
            .await?
            .first()
            .filter(|s| s.value == 5.0)
            .map(|_| ()))
    })
    .await?;

    // Deleted: gone from ksm's output, then stale in Prometheus.
    configmaps
        .delete("during", &DeleteParams::default())
        .await?;
    let gone = format!("kube_configmap_info{{namespace=\"{n}\",configmap=\"during\"}}");
    wait_until(
        "deleted configmap to disappear",
        Duration::from_secs(60),
        || async { Ok(prometheus.query(&gone).await?.is_empty().then_some(())) },
    )
    .await?;
    let text = scrape(&ksm.metrics).await?;
    assert!(
        !text.contains("configmap=\"during\""),
        "deleted object still exported"
    );
    assert!(text.contains("configmap=\"before-start\""));

    // Self-metrics on the telemetry port.
    let telemetry = http_client()?
        .get(format!("http://{}/metrics", ksm.telemetry))
        .send()
        .await?
        .text()
        .await?;
    assert!(
        telemetry.contains(
            "kube_state_metrics_list_total{resource=\"*v1.ConfigMap\",result=\"success\"}"
        ),
        "{telemetry}"
    );
    assert!(
        telemetry.contains("kube_state_metrics_total_shards 1"),
        "{telemetry}"
    );
    drop(ksm);
    Ok(())
}

#[tokio::test]
async fn shards_add_up_to_the_unsharded_output() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-shards").await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.client().await?, &ns.name);
    for i in 0..30 {
        configmaps
            .create(&PostParams::default(), &configmap(&format!("cm-{i}"))?)
            .await?;
    }
    let base = [
        "--resources=configmaps".to_string(),
        format!("--namespaces={}", ns.name),
    ];
    let whole = start_ksm(cluster, &base).await?;
    let mut shards = Vec::new();
    for shard in 0..3 {
        let mut args = base.to_vec();
        args.push(format!("--shard={shard}"));
        args.push("--total-shards=3".to_string());
        shards.push(start_ksm(cluster, &args).await?);
    }
    let expected = sample_lines(&scrape(&whole.metrics).await?);
    assert_eq!(
        expected
            .iter()
            .filter(|l| l.starts_with("kube_configmap_info") && l.contains("configmap=\"cm-"))
            .count(),
        30
    );
    let mut union = BTreeSet::new();
    let mut total = 0;
    for shard in &shards {
        let lines = sample_lines(&scrape(&shard.metrics).await?);
        total += lines.len();
        union.extend(lines);
    }
    assert_eq!(
        union, expected,
        "the union of 3 shards differs from the unsharded output"
    );
    assert_eq!(
        total,
        expected.len(),
        "an object was exported by more than one shard"
    );
    let per_shard: Vec<usize> = {
        let mut v = Vec::new();
        for shard in &shards {
            v.push(
                sample_lines(&scrape(&shard.metrics).await?)
                    .iter()
                    .filter(|l| {
                        l.starts_with("kube_configmap_info") && l.contains("configmap=\"cm-")
                    })
                    .count(),
            );
        }
        v
    };
    assert!(
        per_shard.iter().all(|&c| c > 0),
        "a shard got no objects out of 30: {per_shard:?}"
    );
    Ok(())
}
