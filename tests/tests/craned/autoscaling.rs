//! craned's EHPA controller with metrics-adapter and the real kube-controller-manager: an
//! EHPA with crons gets an `autoscaling/v2` HPA `ehpa-<name>` whose cron metric the adapter
//! serves, so the HPA controller scales the kwok Deployment to the largest open target and
//! back to minReplicas when the window closes; in Preview the workload is left alone while a
//! Substitute and the status show what would happen; deleting the EHPA deletes its HPA and
//! its series (validation.rs has the objects the API server refuses).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, METRICS_APISERVICES_LOCK, install_craned_crds, repo_root,
    wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

fn ehpa(name: &str, strategy: &str, crons: Value) -> Value {
    json!({
        "apiVersion": "autoscaling.crane.io/v1alpha1",
        "kind": "EffectiveHorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1, "maxReplicas": 10, "scaleStrategy": strategy, "crons": crons,
            "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0},
                         "scaleDown": {"stabilizationWindowSeconds": 0,
                                       "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
        }
    })
}

async fn replicas(
    deployments: &Api<Deployment>,
    name: &str,
    want: i32,
    within: Duration,
) -> Result<()> {
    wait_until(&format!("{name} at {want} replicas"), within, || async {
        Ok((deployments.get(name).await?.spec.replicas == Some(want)).then_some(()))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn cron_ehpas_scale_through_the_hpa_preview_only_says_and_deletion_cleans_up() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(900)).await?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned-ehpa").await?;
    let n = ns.name.clone();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    for (name, count) in [("web", 1), ("db", 2)] {
        deployments
            .create(
                &PostParams::default(),
                &cluster.kwok_deployment(name, count, json!({}))?,
            )
            .await?;
    }
    let adapter =
        AdapterLaunch::config_file(&repo_root().join("config/adapter/default-config.yaml"))
            .behind_aggregator(cluster, &n)
            .await?;
    let config = write_config_file("0.15")?;
    let launch = CranedLaunch::new(cluster, cluster.env.var("PROMETHEUS_URL")?, &config, &n)?;
    let metrics_addr = launch.metrics_addr();
    let craned = launch.start().await?;
    let logs = || {
        format!(
            "craned log:\n{}\nadapter log:\n{}",
            craned.logs(),
            adapter.process.logs()
        )
    };

    // Two open windows (4 and 3) and one later today (9).
    let ehpas = ehpa_api(&client, &n);
    let cron = |name: &str, (start, end): (String, String), target: i32| json!({"name": name, "start": start, "end": end, "targetReplicas": target});
    // The open windows close 30 to 90 s from now: time to scale up first, little to wait.
    let close = if Timestamp::now().as_second() % 60 < 30 {
        1
    } else {
        2
    };
    let web_crons = json!([
        cron("a", daily_window("UTC", -5, close)?, 4),
        cron("b", daily_window("UTC", -5, close)?, 3),
        cron("c", daily_window("UTC", 120, 180)?, 9),
    ]);
    ehpas
        .create(
            &PostParams::default(),
            &serde_json::from_value(ehpa("web", "Auto", web_crons))?,
        )
        .await?;
    ehpas
        .create(
            &PostParams::default(),
            &serde_json::from_value(ehpa(
                "db",
                "Preview",
                json!([cron("open", daily_window("UTC", -5, 30)?, 5)]),
            ))?,
        )
        .await?;

    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), &n);
    let hpa = wait_until("the HPA ehpa-web", Duration::from_secs(60), || async {
        Ok(hpas.get_opt("ehpa-web").await?)
    })
    .await
    .with_context(logs)?;
    let spec = hpa.spec;
    let metrics = spec.metrics.unwrap_or_default();
    ensure!(metrics.len() == 1, "one cron metric: {metrics:?}");
    let external = metrics[0].external.as_ref().context("an External metric")?;
    ensure!(external.metric.name == "crane_autoscaling_cron");
    ensure!(
        hpa.metadata
            .owner_references
            .unwrap_or_default()
            .iter()
            .any(|o| o.kind == "EffectiveHorizontalPodAutoscaler" && o.name == "web"),
        "the HPA is owned by its EHPA"
    );
    replicas(&deployments, "web", 4, Duration::from_secs(120))
        .await
        .with_context(logs)?;

    let status = wait_until("ehpa web's status", Duration::from_secs(60), || async {
        let e = ehpas.get("web").await?;
        let s = e.data["status"].clone();
        let ready = s["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        // The cron that sets the replicas is named (a's 4 over b's 3).
        let source = json!({"type": "Cron", "name": "a", "replicas": 4});
        Ok((ready && s["expectReplicas"] == 4 && s["replicasSource"] == source).then_some(s))
    })
    .await
    .with_context(logs)?;
    ensure!(
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "AbleToScale"),
        "the HPA's conditions are copied: {status:#}"
    );
    // The exports read their own watches, which may list a moment after the controller's.
    let web = format!("targetName=\"web\",targetNamespace=\"{n}\"");
    wait_until("the EHPA's series", Duration::from_secs(30), || async {
        let text = scrape(&metrics_addr).await?;
        Ok(
            (gauge(&text, "crane_autoscaling_cron", &[&web]) == Some(4.0)
                && gauge(
                    &text,
                    "crane_autoscaling_effective_hpa_replicas",
                    &["name=\"web\""],
                ) == Some(4.0)
                && gauge(
                    &text,
                    "crane_autoscaling_hpa_replicas",
                    &["name=\"ehpa-web\""],
                ) == Some(4.0))
            .then_some(()),
        )
    })
    .await
    .with_context(logs)?;

    // Preview: the workload stays at 2, the Substitute and the status say 5.
    let subs = substitute_api(&client, &n);
    wait_until(
        "Substitute ehpa-db with the HPA's 5",
        Duration::from_secs(120),
        || async {
            let s = subs.get_opt("ehpa-db").await?;
            Ok(s.filter(|s| s.data["status"]["replicas"] == 5).map(|_| ()))
        },
    )
    .await
    .with_context(logs)?;
    // The EHPA reads the HPA's evaluation a moment after the Substitute gets it.
    wait_until(
        "Preview says what it would do and why",
        Duration::from_secs(60),
        || async {
            let db = ehpas.get("db").await?.data["status"].clone();
            Ok((db["expectReplicas"] == 5
                && db["replicasSource"] == json!({"type": "Cron", "name": "open", "replicas": 5}))
            .then_some(()))
        },
    )
    .await
    .with_context(logs)?;
    ensure!(
        deployments.get("db").await?.spec.replicas == Some(2),
        "Preview scaled the workload"
    );

    // The windows close: back to minReplicas.
    replicas(&deployments, "web", 1, Duration::from_secs(240))
        .await
        .with_context(logs)?;
    wait_until(
        "ehpa web at minReplicas",
        Duration::from_secs(60),
        || async {
            let s = ehpas.get("web").await?.data["status"]["replicasSource"].clone();
            Ok((s == json!({"type": "MinReplicas", "replicas": 1})).then_some(()))
        },
    )
    .await
    .with_context(logs)?;

    // Deletion: what each EHPA owns goes (garbage collection), and its series with it.
    ehpas.delete("web", &DeleteParams::foreground()).await?;
    ehpas.delete("db", &DeleteParams::foreground()).await?;
    wait_until(
        "the HPAs and the Substitute deleted",
        Duration::from_secs(60),
        || async {
            let gone = hpas.get_opt("ehpa-web").await?.is_none()
                && hpas.get_opt("ehpa-db").await?.is_none()
                && subs.get_opt("ehpa-db").await?.is_none();
            Ok(gone.then_some(()))
        },
    )
    .await?;
    wait_until(
        "the EHPA's series gone",
        Duration::from_secs(30),
        || async {
            let text = scrape(&metrics_addr).await?;
            Ok((gauge(&text, "crane_autoscaling_cron", &[&web]).is_none()
                && gauge(
                    &text,
                    "crane_autoscaling_effective_hpa_replicas",
                    &["name=\"web\""],
                )
                .is_none())
            .then_some(()))
        },
    )
    .await?;

    Ok(())
}
