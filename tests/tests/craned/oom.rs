//! craned's OOM recorder against the real control plane: a Deployment's pod (owned by a
//! ReplicaSet the controller-manager created) gets an OOMKilled last state through the status
//! subresource; the recorder, started in-process through the library, writes the ConfigMap
//! record in Crane's shape, attributes it to the Deployment by owner references (not to the
//! look-alike `web-canary`), keeps it across a restart with the pods gone, and writes a trim to
//! `--oom-record-max-number` back.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use ferrocrane_craned::oom::{self, OomRecorderHandle};
use ferrocrane_e2e::{Cluster, Workload, patch_pod_status, wait_until};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const MI: i64 = 1024 * 1024;

fn deployment(name: &str, memory: &str) -> Result<Deployment> {
    Workload::deployment(name)
        .container("app", "100m", memory)
        .deployment_object()
}

/// The first pod of the Deployment, once the ReplicaSet controller has created it.
async fn pod_of(pods: &Api<Pod>, app: &str) -> Result<Pod> {
    let lp = ListParams::default().labels(&format!("app={app}"));
    wait_until(
        &format!("a pod of deployment {app}"),
        Duration::from_secs(60),
        || {
            let pods = pods.clone();
            let lp = lp.clone();
            async move { Ok(pods.list(&lp).await?.items.into_iter().next()) }
        },
    )
    .await
}

/// Writes what a kubelet writes after restarting a container killed by the OOM killer.
async fn oom_kill(pods: &Api<Pod>, pod: &str, finished_at: &str) -> Result<()> {
    patch_pod_status(
        pods,
        pod,
        json!({
            "phase": "Running",
            "containerStatuses": [{
                "name": "app", "ready": true, "started": true, "restartCount": 1,
                "image": "registry.invalid/app:1", "imageID": "",
                "state": {"running": {"startedAt": finished_at}},
                "lastState": {"terminated": {
                    "exitCode": 137, "reason": "OOMKilled",
                    "startedAt": "2020-01-01T00:00:00Z", "finishedAt": finished_at
                }}
            }]
        }),
    )
    .await?;
    Ok(())
}

struct Running {
    handle: OomRecorderHandle,
    stop: oneshot::Sender<()>,
}

async fn start(client: &Client, namespace: &str, max: usize) -> Result<Running> {
    let (stop, rx) = oneshot::channel::<()>();
    let handle = oom::spawn(client.clone(), namespace.to_string(), max, async move {
        let _ = rx.await;
    });
    if !handle.loaded().await {
        bail!("the recorder stopped before loading");
    }
    Ok(Running { handle, stop })
}

async fn stop(r: Running) {
    let _ = r.stop.send(());
    r.handle.join().await;
}

/// The ConfigMap's records of pods in `namespace` as JSON, once `ready` accepts them. The
/// recorder records every OOM kill in the cluster, and other tests kill pods of their own.
async fn stored(
    cms: &Api<ConfigMap>,
    namespace: &str,
    what: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> Result<Vec<Value>> {
    let all = stored_all(cms, what, |all| {
        ready(&of_namespace(all, namespace).cloned().collect::<Vec<_>>())
    })
    .await?;
    Ok(of_namespace(&all, namespace).cloned().collect())
}

fn of_namespace<'a>(records: &'a [Value], namespace: &'a str) -> impl Iterator<Item = &'a Value> {
    records.iter().filter(move |r| r["Namespace"] == namespace)
}

/// Every record in the ConfigMap, whoever's pod, once `ready` accepts them.
async fn stored_all(
    cms: &Api<ConfigMap>,
    what: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> Result<Vec<Value>> {
    wait_until(what, Duration::from_secs(30), || {
        let cms = cms.clone();
        let ready = &ready;
        async move {
            let Some(cm) = cms.get_opt("oom-record").await? else {
                return Ok(None);
            };
            let text = cm
                .data
                .and_then(|d| d.get("data").cloned())
                .unwrap_or_default();
            let records: Vec<Value> = serde_json::from_str(&text)?;
            Ok(ready(&records).then_some(records))
        }
    })
    .await
}

fn record_of<'a>(records: &'a [Value], pod: &str) -> Option<&'a Value> {
    records.iter().find(|r| r["Pod"] == pod)
}

#[tokio::test]
async fn oom_kills_are_recorded_attributed_kept_and_trimmed() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("craned-oom").await?;
    // craned's own namespace, where the ConfigMap lives.
    let system = cluster.namespace("craned-oom-system").await?;
    let client = cluster.client().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &system.name);

    for (name, memory) in [("web", "256Mi"), ("web-canary", "1Gi")] {
        deployments
            .create(&PostParams::default(), &deployment(name, memory)?)
            .await?;
    }
    let web = pod_of(&pods, "web").await?;
    let canary = pod_of(&pods, "web-canary").await?;
    // Both pods start with `web-`: Crane's prefix match would give web the canary's 1Gi.
    assert!(canary.name_any().starts_with("web-"));

    let now = Timestamp::now().as_second();
    let web_at = oom::format_time(now - 600);
    let canary_at = oom::format_time(now - 300);
    let recorder = start(&client, &system.name, 100).await?;
    oom_kill(&pods, &web.name_any(), &web_at).await?;
    oom_kill(&pods, &canary.name_any(), &canary_at).await?;

    let records = stored(&cms, &ns.name, "both OOM records in the ConfigMap", |r| {
        r.len() == 2
    })
    .await?;
    let w = record_of(&records, &web.name_any()).context("web's record")?;
    assert_eq!(
        *w,
        json!({
            "Namespace": ns.name, "Pod": web.name_any(), "Container": "app",
            "Memory": "256Mi", "OOMAt": web_at,
            "Workload": {"APIVersion": "apps/v1", "Kind": "Deployment", "Name": "web"}
        })
    );
    let c = record_of(&records, &canary.name_any()).context("canary's record")?;
    assert_eq!(c["Workload"]["Name"], "web-canary");
    assert_eq!(c["Memory"], "1Gi");

    let store = recorder.handle.store();
    let since = now - 3600;
    assert_eq!(
        store.max_oom_memory(&ns.name, "Deployment", "web", "app", since),
        Some((256 * MI, now - 600))
    );
    assert_eq!(
        store.max_oom_memory(&ns.name, "Deployment", "web-canary", "app", since),
        Some((1024 * MI, now - 300))
    );
    // Outside the window: nothing.
    assert_eq!(
        store.max_oom_memory(&ns.name, "Deployment", "web", "app", now - 60),
        None
    );
    stop(recorder).await;

    // The pods go away: whatever the next recorder knows comes from the ConfigMap.
    for name in ["web", "web-canary"] {
        deployments.delete(name, &DeleteParams::default()).await?;
    }
    for pod in [&web, &canary] {
        let _ = pods.delete(&pod.name_any(), &DeleteParams::default()).await;
    }
    let restarted = start(&client, &system.name, 100).await?;
    let store = restarted.handle.store();
    assert_eq!(
        store.max_oom_memory(&ns.name, "Deployment", "web", "app", since),
        Some((256 * MI, now - 600))
    );
    for workload in ["web", "web-canary"] {
        assert_eq!(
            store
                .records_for_workload(&ns.name, "Deployment", workload, since)
                .len(),
            1,
            "{workload}'s record after the restart"
        );
    }
    stop(restarted).await;

    // Three older records written by someone else (Crane's shape, no workload), then a
    // recorder allowed two: the two newest stay, in the ConfigMap too.
    let mut cm = cms.get("oom-record").await?;
    let mut records: Vec<Value> = serde_json::from_str(&cm.data.as_ref().context("data")?["data"])?;
    for (i, age) in [(1, 86_400), (2, 2 * 86_400), (3, 3 * 86_400)] {
        records.push(json!({
            "Namespace": ns.name, "Pod": format!("old-{i}"), "Container": "app",
            "Memory": "128Mi", "OOMAt": oom::format_time(now - age)
        }));
    }
    cm.data
        .get_or_insert_default()
        .insert("data".into(), serde_json::to_string(&records)?);
    cms.replace("oom-record", &PostParams::default(), &cm)
        .await?;
    assert_eq!(
        stored(&cms, &ns.name, "five records", |r| r.len() == 5)
            .await?
            .len(),
        5
    );

    // The two newest stay. A kill another test made meanwhile is newer than ours and may take a
    // place; the three old records never do.
    let trimming = start(&client, &system.name, 2).await?;
    assert_eq!(trimming.handle.store().len(), 2);
    let kept = stored_all(&cms, "the trim written back", |r| r.len() == 2).await?;
    let mut ours: Vec<&str> = of_namespace(&kept, &ns.name)
        .filter_map(|r| r["Pod"].as_str())
        .collect();
    ours.sort();
    let mut expected = vec![web.name_any(), canary.name_any()];
    expected.sort();
    if ours.len() == kept.len() {
        assert_eq!(ours, expected);
    } else {
        assert!(
            ours.iter().all(|p| expected.iter().any(|e| e == p)),
            "kept {kept:?}"
        );
    }
    stop(trimming).await;
    Ok(())
}
