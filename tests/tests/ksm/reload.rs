//! Hot reload against the real control plane: edits of `--config` and of
//! `--custom-resource-state-config-file` take effect without a restart, a bad edit keeps the
//! last good configuration and shows in the upstream-named reload metrics, and the process
//! (same PID, same ports) keeps serving throughout.

use std::time::Duration;

use anyhow::Result;
use ferrocrane_e2e::Cluster;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};

use ferrocrane_e2e::ksm::{
    TestCrd, get, replace_file, sample_value, scrape, start_ksm, temp_dir, wait_for_scrape,
    wait_for_telemetry_value, widget_crs_config,
};

async fn telemetry(addr: &str) -> Result<String> {
    get(&format!("http://{addr}/metrics")).await
}

#[tokio::test]
async fn config_file_edits_apply_without_restart() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-reload").await?;
    let client = cluster.client().await?;
    let n = &ns.name;
    Api::<ConfigMap>::namespaced(client.clone(), n)
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "cm1"}}))?,
        )
        .await?;
    Api::<Secret>::namespaced(client.clone(), n)
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "s1"}}))?,
        )
        .await?;

    let dir = temp_dir()?;
    let config = dir.join("ksm.yaml");
    replace_file(&config, "resources:\n  configmaps: {}\n")?;
    let ksm = start_ksm(
        cluster,
        &[
            format!("--namespaces={n}"),
            format!("--config={}", config.display()),
        ],
    )
    .await?;
    let text = scrape(&ksm.metrics).await?;
    assert!(
        text.contains(&format!(
            "kube_configmap_info{{namespace=\"{n}\",configmap=\"cm1\"}} 1"
        )),
        "{text}"
    );
    assert!(!text.contains("kube_secret_info"), "{text}");
    let file = config.display().to_string();
    let ok = format!(
        "kube_state_metrics_last_config_reload_successful{{filename=\"{file}\",type=\"config\"}}"
    );
    let at = format!(
        "kube_state_metrics_last_config_reload_success_timestamp_seconds{{filename=\"{file}\",type=\"config\"}}"
    );
    let t0 = telemetry(&ksm.telemetry).await?;
    assert_eq!(sample_value(&t0, &ok), Some(1.0), "{t0}");
    let first_success = sample_value(&t0, &at).unwrap_or_default();
    assert!(first_success > 0.0, "{t0}");

    // A valid edit: another resource, and a family denied.
    tokio::time::sleep(Duration::from_millis(1100)).await; // a visibly later timestamp
    replace_file(
        &config,
        "resources:\n  configmaps: {}\n  secrets: {}\nmetric_denylist:\n  kube_configmap_created: {}\n",
    )?;
    let text = wait_for_scrape("secrets after the reload", &ksm.metrics, |t| {
        t.contains(&format!(
            "kube_secret_info{{namespace=\"{n}\",secret=\"s1\"}} 1"
        ))
    })
    .await?;
    assert!(text.contains("kube_configmap_info{"), "{text}");
    assert!(!text.contains("kube_configmap_created"), "{text}");
    let t1 = telemetry(&ksm.telemetry).await?;
    assert_eq!(sample_value(&t1, &ok), Some(1.0), "{t1}");
    assert!(
        sample_value(&t1, &at).unwrap_or_default() > first_success,
        "{t1}"
    );

    // A bad edit: refused, reported, and the last good config keeps serving.
    replace_file(&config, "resources:\n  notaresource: {}\n")?;
    wait_for_telemetry_value(&ksm.telemetry, &ok, 0.0).await?;
    let text = scrape(&ksm.metrics).await?;
    assert!(
        text.contains("kube_secret_info{"),
        "last good config dropped:\n{text}"
    );
    assert!(!text.contains("kube_configmap_created"), "{text}");
    let logs = std::fs::read_to_string(&ksm.process.log)?;
    assert!(
        logs.contains("notaresource"),
        "the reason is not logged:\n{logs}"
    );

    // Fixed again: back to successful.
    replace_file(&config, "resources:\n  configmaps: {}\n")?;
    wait_for_scrape("secrets gone after the fix", &ksm.metrics, |t| {
        !t.contains("kube_secret_info") && t.contains("kube_configmap_created{")
    })
    .await?;
    let t2 = telemetry(&ksm.telemetry).await?;
    assert_eq!(sample_value(&t2, &ok), Some(1.0), "{t2}");
    Ok(())
}

#[tokio::test]
async fn custom_resource_config_edits_apply_without_restart() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-crs-reload").await?;
    let client = cluster.client().await?;
    let crd = TestCrd::new(cluster, &ns.name)?;
    crd.create_with_widget(
        &client,
        &ns.name,
        "w1",
        serde_json::json!({ "replicas": 2, "owner": "o" }),
        serde_json::json!({ "phase": "Ready" }),
    )
    .await?;
    let dir = temp_dir()?;
    let config = dir.join("crs.yaml");
    replace_file(&config, &widget_crs_config(&crd.group, "widget_replicas"))?;
    let ksm = start_ksm(
        cluster,
        &[
            "--resources=configmaps".to_string(),
            format!("--namespaces={}", ns.name),
            format!("--custom-resource-state-config-file={}", config.display()),
        ],
    )
    .await?;
    wait_for_scrape("the first name", &ksm.metrics, |t| {
        t.contains("kube_customresource_widget_replicas{")
    })
    .await?;

    // Renaming the gauge: the new family replaces the old one.
    replace_file(&config, &widget_crs_config(&crd.group, "widget_desired"))?;
    let text = wait_for_scrape("the renamed gauge", &ksm.metrics, |t| {
        t.contains("kube_customresource_widget_desired{")
    })
    .await?;
    assert!(
        !text.contains("kube_customresource_widget_replicas"),
        "{text}"
    );
    let file = config.display().to_string();
    let ok = format!(
        "kube_state_metrics_last_config_reload_successful{{filename=\"{file}\",type=\"customresourceconfig\"}}"
    );
    assert_eq!(
        sample_value(&telemetry(&ksm.telemetry).await?, &ok),
        Some(1.0)
    );

    // An invalid edit (a metric without a type) keeps the renamed gauge.
    replace_file(
        &config,
        &format!(
            "spec:\n  resources:\n  - groupVersionKind: {{group: {}, version: v1, kind: Widget}}\n    metrics:\n    - name: broken\n      each: {{}}\n",
            crd.group
        ),
    )?;
    wait_for_telemetry_value(&ksm.telemetry, &ok, 0.0).await?;
    let text = scrape(&ksm.metrics).await?;
    assert!(
        text.contains("kube_customresource_widget_desired{"),
        "{text}"
    );
    assert!(!text.contains("kube_customresource_broken"), "{text}");
    drop(ksm);
    crd.delete(&client).await?;
    Ok(())
}
