//! An OOM kill raises a container's memory target: a pod of web (created by the controller
//! manager's ReplicaSet) reports its app container OOMKilled, the recorder writes it to the
//! oom-record ConfigMap, and the next round raises app's memory to
//! max(request + 100Mi, request × 1.2). The record survives a restart of craned even when the
//! pod is gone: it comes from the ConfigMap, not from the pod watch.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{patch_pod_status, running_status, wait_until};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::{Value, json};

use crate::bed::Bed;

#[tokio::test(flavor = "multi_thread")]
async fn an_oom_kill_raises_memory_and_the_record_survives_a_restart() -> Result<()> {
    let mut bed = Bed::start("craned-oom-round", "0.15").await?;
    wait_ready_recommendation(&bed.recs, &mut bed.craned, "web", Duration::from_secs(90)).await?;

    let pods: Api<Pod> = Api::namespaced(bed.client.clone(), &bed.ns.name);
    let pod = wait_until("web's pods", Duration::from_secs(60), || {
        let pods = pods.clone();
        async move {
            Ok(pods
                .list(&ListParams::default().labels("app=web"))
                .await?
                .items
                .into_iter()
                .next())
        }
    })
    .await?;
    let pod_name = pod.metadata.name.clone().context("pod name")?;
    let oom_at = SystemTime::now() - Duration::from_secs(600);
    let oom_at = k8s_openapi::jiff::Timestamp::from_second(
        oom_at.duration_since(UNIX_EPOCH)?.as_secs() as i64,
    )?
    .to_string();
    let mut status = running_status(&["app", "sidecar"], &oom_at);
    status["containerStatuses"][0]["restartCount"] = json!(1);
    status["containerStatuses"][0]["lastState"] = json!({"terminated": {
        "reason": "OOMKilled", "exitCode": 137, "startedAt": oom_at, "finishedAt": oom_at,
    }});
    patch_pod_status(&pods, &pod_name, status).await?;
    let cms: Api<ConfigMap> = Api::namespaced(bed.client.clone(), &bed.ns.name);
    wait_until("the oom-record ConfigMap", Duration::from_secs(60), || {
        let cms = cms.clone();
        let pod_name = pod_name.clone();
        async move {
            let Some(cm) = cms.get_opt("oom-record").await? else {
                return Ok(None);
            };
            let data = cm
                .data
                .unwrap_or_default()
                .remove("data")
                .unwrap_or_default();
            let records: Value = serde_json::from_str(&data)?;
            Ok(records
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["Pod"] == pod_name && r["Container"] == "app" && r["Memory"] == "1Gi")
                .then_some(()))
        }
    })
    .await
    .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;

    let gib: i64 = 1 << 30;
    let bumped = (gib + 100 * (1 << 20)).max((gib as f64 * 1.2) as i64);
    let (usage_cpu, usage_mem) = bed.web_app_targets(0.15);
    assert!(
        bumped > usage_mem,
        "the test needs the bump above the usage estimate"
    );
    bed.next_round("oom", "a round after the OOM kill").await?;
    bed.wait_web_app(
        "web's app memory bumped after the OOM kill",
        (usage_cpu, bumped),
    )
    .await
    .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;

    pods.delete(&pod_name, &DeleteParams::default()).await?;
    bed.restart_craned().await?;
    bed.next_round("after-restart", "a round after the restart")
        .await
        .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;
    bed.wait_web_app(
        "web's app memory still bumped after a restart",
        (usage_cpu, bumped),
    )
    .await
    .with_context(|| format!("craned log:\n{}", bed.craned.logs()))
}
