//! Custom resource state metrics against the real control plane: ksm starts with a
//! configuration for a CRD that does not exist yet and keeps serving (upstream #2354); the
//! CRD and an object are created and the configured Gauge, StateSet and Info families appear
//! without a restart (upstream #2296), follow an update, and go away with the object. Custom
//! resources are watched by the built-in resources' loop: `--namespaces-denylist` applies to
//! them and they count in the list/watch telemetry.

use std::time::Duration;

use anyhow::Result;
use ferrocrane_e2e::{Cluster, wait_until};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};

use ferrocrane_e2e::ksm::{
    Ksm, TestCrd, get, sample_value, scrape, start_ksm, temp_dir, wait_for_scrape,
    widget_crs_config,
};

#[tokio::test]
async fn custom_resource_metrics_follow_a_crd_created_after_start() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-crs").await?;
    let client = cluster.client().await?;
    let crd = TestCrd::new(cluster, &ns.name)?;
    let dir = temp_dir()?;
    let config = dir.join("crs.yaml");
    std::fs::write(&config, widget_crs_config(&crd.group, "widget_replicas"))?;

    // The CRD does not exist: ksm must still start, turn ready and serve the built-ins.
    let ksm = start_ksm(
        cluster,
        &[
            "--resources=configmaps".to_string(),
            format!("--namespaces={}", ns.name),
            format!("--custom-resource-state-config-file={}", config.display()),
        ],
    )
    .await?;
    let before = scrape(&ksm.metrics).await?;
    assert!(
        before.contains("# TYPE kube_configmap_info gauge"),
        "{before}"
    );
    assert!(!before.contains("kube_customresource_"), "{before}");

    // Prometheus scrapes ksm from here on.
    let prometheus = cluster.prometheus()?;
    let _target = prometheus.add_scrape_target("ksm-crs", &ksm.metrics, "/metrics")?;

    crd.create(&client).await?;
    let widgets = crd.api(&client, &ns.name);
    widgets
        .create(
            &PostParams::default(),
            &crd.widget(
                "w1",
                serde_json::json!({ "replicas": 3, "owner": "team-a" }),
                serde_json::json!({ "phase": "Ready" }),
            )?,
        )
        .await?;

    let g = &crd.group;
    let n = &ns.name;
    let ids = format!(
        "customresource_group=\"{g}\",customresource_kind=\"Widget\",customresource_version=\"v1\",name=\"w1\",namespace=\"{n}\""
    );
    let text = wait_for_scrape("widget families to appear", &ksm.metrics, |t| {
        t.contains("kube_customresource_widget_replicas{")
    })
    .await?;
    for line in [
        "# HELP kube_customresource_widget_replicas Desired widgets.".to_string(),
        "# TYPE kube_customresource_widget_replicas gauge".to_string(),
        format!("kube_customresource_widget_replicas{{{ids}}} 3"),
        // Text 0.0.4 has no stateset/info types: upstream writes them as gauges.
        "# TYPE kube_customresource_widget_phase gauge".to_string(),
        format!("kube_customresource_widget_phase{{{ids},phase=\"Pending\"}} 0"),
        format!("kube_customresource_widget_phase{{{ids},phase=\"Ready\"}} 1"),
        format!("kube_customresource_widget_phase{{{ids},phase=\"Failed\"}} 0"),
        "# TYPE kube_customresource_widget_owner gauge".to_string(),
        format!("kube_customresource_widget_owner{{{ids},owner=\"team-a\"}} 1"),
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing line {line:?} in\n{text}"
        );
    }

    // OpenMetrics keeps the real types.
    let om = ferrocrane_e2e::http_client()?
        .get(format!("http://{}/metrics", ksm.metrics))
        .header("Accept", "application/openmetrics-text;version=1.0.0")
        .send()
        .await?
        .text()
        .await?;
    for line in [
        "# TYPE kube_customresource_widget_phase stateset",
        "# TYPE kube_customresource_widget_owner info",
        "# EOF",
    ] {
        assert!(om.lines().any(|l| l == line), "missing {line:?} in\n{om}");
    }

    // The same series through Prometheus.
    let query = format!(
        "kube_customresource_widget_replicas{{customresource_group=\"{g}\",namespace=\"{n}\",name=\"w1\"}}"
    );
    let samples = prometheus
        .wait_for_samples(&query, Duration::from_secs(60))
        .await?;
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].value, 3.0);
    assert_eq!(
        samples[0]
            .labels
            .get("customresource_kind")
            .map(String::as_str),
        Some("Widget")
    );

    // An update changes the values.
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({ "spec": { "replicas": 5 }, "status": { "phase": "Failed" } }),
            ),
        )
        .await?;
    wait_until(
        "replicas 5 in Prometheus",
        Duration::from_secs(60),
        || async {
            Ok(prometheus
                .query(&query)
                .await?
                .first()
                .filter(|s| s.value == 5.0)
                .map(|_| ()))
        },
    )
    .await?;
    let text = scrape(&ksm.metrics).await?;
    assert!(
        text.lines()
            .any(|l| l == format!("kube_customresource_widget_phase{{{ids},phase=\"Failed\"}} 1")),
        "{text}"
    );

    // Deleting the object removes its series; the family headers stay only while objects do.
    widgets.delete("w1", &DeleteParams::default()).await?;
    let text = wait_for_scrape("widget series to go", &ksm.metrics, |t| {
        !t.contains("name=\"w1\"")
    })
    .await?;
    assert!(
        !text.contains("kube_customresource_widget_replicas{"),
        "{text}"
    );
    assert!(text.contains("kube_configmap_info"), "{text}");
    drop(ksm);
    crd.delete(&client).await?;
    Ok(())
}

/// ksm exporting only the widgets (inline configuration), with one namespace flag.
async fn start_widgets_only(cluster: &Cluster, crd: &TestCrd, namespaces: String) -> Result<Ksm> {
    start_ksm(
        cluster,
        &[
            "--custom-resource-state-only".to_string(),
            format!(
                "--custom-resource-state-config={}",
                widget_crs_config(&crd.group, "widget_replicas")
            ),
            namespaces,
        ],
    )
    .await
}

#[tokio::test]
async fn custom_resource_state_only_serves_nothing_else() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-crs-only").await?;
    let client = cluster.client().await?;
    let crd = TestCrd::new(cluster, &ns.name)?;
    crd.create_with_widget(
        &client,
        &ns.name,
        "solo",
        serde_json::json!({ "replicas": 1, "owner": "x" }),
        serde_json::json!({ "phase": "Pending" }),
    )
    .await?;
    // Inline configuration this time.
    let ksm = start_widgets_only(cluster, &crd, format!("--namespaces={}", ns.name)).await?;
    let text = wait_for_scrape("the widget", &ksm.metrics, |t| {
        t.contains("kube_customresource_widget_replicas{")
    })
    .await?;
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(
        families,
        [
            "kube_customresource_widget_replicas",
            "kube_customresource_widget_phase",
            "kube_customresource_widget_owner"
        ],
        "{text}"
    );
    drop(ksm);
    crd.delete(&client).await?;
    Ok(())
}

#[tokio::test]
async fn custom_resources_follow_the_namespace_denylist_and_count_in_telemetry() -> Result<()> {
    let cluster = Cluster::get()?;
    let kept = cluster.namespace("ksm-crs-kept").await?;
    let denied = cluster.namespace("ksm-crs-denied").await?;
    let client = cluster.client().await?;
    let crd = TestCrd::new(cluster, &kept.name)?;
    crd.create_with_widget(
        &client,
        &kept.name,
        "kept",
        serde_json::json!({ "replicas": 1, "owner": "x" }),
        serde_json::json!({ "phase": "Ready" }),
    )
    .await?;
    crd.api(&client, &denied.name)
        .create(
            &PostParams::default(),
            &crd.widget(
                "denied",
                serde_json::json!({ "replicas": 2, "owner": "y" }),
                serde_json::json!({ "phase": "Ready" }),
            )?,
        )
        .await?;
    // All namespaces but one: one cluster-wide watch with a metadata.namespace!= selector.
    let ksm = start_widgets_only(
        cluster,
        &crd,
        format!("--namespaces-denylist={}", denied.name),
    )
    .await?;
    let text = wait_for_scrape("the kept widget", &ksm.metrics, |t| {
        t.contains("name=\"kept\"")
    })
    .await?;
    assert!(!text.contains("name=\"denied\""), "{text}");
    assert!(!text.contains(&denied.name), "{text}");

    // The first list is counted once it is complete, which may be just after the scrape.
    let listed = "kube_state_metrics_list_total{resource=\"widgets\",result=\"success\"}";
    let telemetry = wait_until(
        "the widget list in telemetry",
        Duration::from_secs(30),
        || async {
            let t = get(&format!("http://{}/metrics", ksm.telemetry)).await?;
            Ok(sample_value(&t, listed)
                .is_some_and(|v| v >= 1.0)
                .then_some(t))
        },
    )
    .await?;
    assert_eq!(
        sample_value(
            &telemetry,
            "kube_state_metrics_list_objects{resource=\"widgets\"}"
        ),
        Some(1.0),
        "{telemetry}"
    );
    drop(ksm);
    crd.delete(&client).await?;
    Ok(())
}
