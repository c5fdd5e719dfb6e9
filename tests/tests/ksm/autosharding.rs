//! Auto-sharding against the real control plane: ksm started as `--pod=<sts>-0` takes its
//! shard total from the StatefulSet's replicas, and follows a scale-up without a restart,
//! exporting exactly what a statically sharded instance with the new total exports.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;
use ferrocrane_e2e::{Cluster, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};

use ferrocrane_e2e::ksm::{get, sample_lines, sample_value, scrape, start_ksm};

fn configmap_lines(text: &str) -> BTreeSet<String> {
    sample_lines(text)
        .into_iter()
        .filter(|l| l.starts_with("kube_configmap_info{"))
        .collect()
}

#[tokio::test]
async fn shard_total_follows_statefulset_replicas() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-autoshard").await?;
    let client = cluster.client().await?;
    let n = &ns.name;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), n);
    // Jump hash moves each object of shard 0 of 2 to shard 2 of 3 with probability 1/3, so
    // with 24 objects the two static shards were equal in ~1 run of 150 (seen in CI); with
    // 64 that is ~(2/3)^32, about 2 in a million.
    for i in 0..64 {
        configmaps
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    serde_json::json!({"metadata": {"name": format!("cm-{i}")}}),
                )?,
            )
            .await?;
    }
    // The StatefulSet controller creates the pods (they stay Pending: they do not tolerate
    // the kwok nodes' taint).
    let sts: StatefulSet = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "ksm" },
        "spec": {
            "replicas": 2,
            "podManagementPolicy": "Parallel",
            "serviceName": "ksm",
            "selector": { "matchLabels": { "app": "ksm" } },
            "template": { "metadata": { "labels": { "app": "ksm" } },
                          "spec": { "containers": [{ "name": "ksm", "image": "registry.invalid/ksm:0" }] } }
        }
    }))?;
    let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), n);
    statefulsets.create(&PostParams::default(), &sts).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    wait_until("pod ksm-0", Duration::from_secs(60), || async {
        Ok(pods.get_opt("ksm-0").await?.map(|_| ()))
    })
    .await?;

    let base = [
        "--resources=configmaps".to_string(),
        format!("--namespaces={n}"),
    ];
    let mut auto_args = base.to_vec();
    auto_args.extend(["--pod=ksm-0".to_string(), format!("--pod-namespace={n}")]);
    let auto = start_ksm(cluster, &auto_args).await?;
    let static_of = |total: i32| {
        let mut a = base.to_vec();
        a.extend(["--shard=0".to_string(), format!("--total-shards={total}")]);
        a
    };
    let of_two = start_ksm(cluster, &static_of(2)).await?;
    let of_three = start_ksm(cluster, &static_of(3)).await?;
    // Ready is not "listed everything" for every exporter at the same instant: wait until
    // the two static shards show their shares.
    let (want2, want3) = wait_until(
        "the static shards' configmaps",
        Duration::from_secs(30),
        || async {
            let both = || async {
                anyhow::Ok((
                    configmap_lines(&scrape(&of_two.metrics).await?),
                    configmap_lines(&scrape(&of_three.metrics).await?),
                ))
            };
            let first = both().await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (want2, want3) = both().await?;
            // Settled: the same a second later, and non-empty.
            let settled = first == (want2.clone(), want3.clone());
            Ok((settled && !want2.is_empty()).then_some((want2, want3)))
        },
    )
    .await?;

    assert_ne!(
        want2, want3,
        "shard 0 of 2 and of 3 must differ, or the scale-up below proves nothing"
    );

    let telemetry = get(&format!("http://{}/metrics", auto.telemetry)).await?;
    assert_eq!(
        sample_value(&telemetry, "kube_state_metrics_total_shards"),
        Some(2.0),
        "{telemetry}"
    );
    assert_eq!(
        sample_value(
            &telemetry,
            "kube_state_metrics_shard_ordinal{shard_ordinal=\"0\"}"
        ),
        Some(0.0),
        "{telemetry}"
    );
    assert_eq!(configmap_lines(&scrape(&auto.metrics).await?), want2);

    // Scale up: the running instance re-shards to 0 of 3.
    statefulsets
        .patch(
            "ksm",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "replicas": 3 } })),
        )
        .await?;
    wait_until("re-sharded to 3", Duration::from_secs(60), || async {
        let t = get(&format!("http://{}/metrics", auto.telemetry)).await?;
        let lines = configmap_lines(&scrape(&auto.metrics).await?);
        Ok(
            (sample_value(&t, "kube_state_metrics_total_shards") == Some(3.0) && lines == want3)
                .then_some(()),
        )
    })
    .await?;
    Ok(())
}
