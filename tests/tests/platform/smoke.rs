//! Proof that the test bed is real: the controller-manager reconciles, Prometheus scrapes,
//! and the aggregation layer proxies to an aggregated API server (see aggregation.rs).

use std::time::Duration;

use anyhow::Result;
use ferrocrane_e2e::{Cluster, TEST_IMAGE, Workload, patch_pod_status, running_status, wait_until};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, PostParams};

fn deployment(name: &str, replicas: i32) -> Result<Deployment> {
    Workload::deployment(name)
        .replicas(replicas)
        .bare_container("main", TEST_IMAGE)
        .deployment_object()
}

/// The deployment and replicaset controllers of the real kube-controller-manager run:
/// a Deployment gets a ReplicaSet, and the ReplicaSet gets its Pods. They stay Pending: they
/// do not tolerate the kwok nodes' taint, so kube-scheduler has no node for them (kwok.rs
/// runs pods on kwok).
#[tokio::test]
async fn deployment_gets_replicaset_and_pods_from_the_controller_manager() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("smoke-deploy").await?;
    let client = cluster.client().await?;
    let deployments: kube::Api<Deployment> = kube::Api::namespaced(client.clone(), &ns.name);
    deployments
        .create(&PostParams::default(), &deployment("web", 3)?)
        .await?;

    let replicasets: kube::Api<ReplicaSet> = kube::Api::namespaced(client.clone(), &ns.name);
    let rs = wait_until(
        "a ReplicaSet owned by deployment web",
        Duration::from_secs(60),
        || async {
            let list = replicasets.list(&ListParams::default()).await?;
            Ok(list.items.into_iter().find(|rs| {
                rs.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.kind == "Deployment" && o.name == "web")
            }))
        },
    )
    .await?;
    assert_eq!(rs.spec.replicas, Some(3));

    let pods: kube::Api<Pod> = kube::Api::namespaced(client, &ns.name);
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    let owned = wait_until(
        "3 pods owned by the ReplicaSet",
        Duration::from_secs(60),
        || async {
            let list = pods.list(&ListParams::default().labels("app=web")).await?;
            let owned: Vec<Pod> = list
                .items
                .into_iter()
                .filter(|p| {
                    p.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.name == rs_name)
                })
                .collect();
            Ok((owned.len() == 3).then_some(owned))
        },
    )
    .await?;
    assert!(
        owned
            .iter()
            .all(|p| p.spec.as_ref().map(|s| s.containers[0].name.as_str()) == Some("main"))
    );

    // Nothing runs them; the harness writes the status a kubelet would, and the API keeps it.
    let first = owned[0].metadata.name.clone().unwrap_or_default();
    let patched = patch_pod_status(
        &pods,
        &first,
        running_status(&["main"], "2026-01-02T03:04:05Z"),
    )
    .await?;
    let status = patched.status.unwrap_or_default();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let restarts: Vec<i32> = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.restart_count)
        .collect();
    assert_eq!(restarts, [0]);
    wait_until(
        "the ReplicaSet to count the Running pod as ready",
        Duration::from_secs(60),
        || async {
            let rs = replicasets.get(&rs_name).await?;
            Ok((rs.status.and_then(|s| s.ready_replicas) == Some(1)).then_some(()))
        },
    )
    .await?;
    Ok(())
}

/// Prometheus scrapes a target the test serves, and the scraped value is queried back.
#[tokio::test]
async fn prometheus_scrapes_a_test_target() -> Result<()> {
    let cluster = Cluster::get()?;
    let prometheus = cluster.prometheus()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let marker = format!("t{}", std::process::id());
    let body = format!(
        "# HELP ferrocrane_e2e_smoke_value A value the smoke test serves.\n# TYPE ferrocrane_e2e_smoke_value gauge\nferrocrane_e2e_smoke_value{{marker=\"{marker}\"}} 42.5\n"
    );
    let app =
        axum::Router::new().route("/metrics", axum::routing::get(move || async move { body }));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let _target = prometheus.add_scrape_target("smoke", &addr.to_string(), "/metrics")?;
    let query = format!("ferrocrane_e2e_smoke_value{{job=\"smoke\",marker=\"{marker}\"}}");
    let samples = prometheus
        .wait_for_samples(&query, Duration::from_secs(60))
        .await?;
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].value, 42.5);
    assert_eq!(
        samples[0].labels.get("instance").map(String::as_str),
        Some(addr.to_string().as_str())
    );
    server.abort();
    Ok(())
}
