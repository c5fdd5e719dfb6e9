//! ksm and craned under control-plane faults (issue 13), on a private control plane whose kube-apiserver
//! runs without its watch cache, so a watch resumed after an etcd compaction is answered
//! 410 Gone as on a busy real cluster:
//! - kube-apiserver restarted under ksm, craned and metrics-adapter: changes made afterwards
//!   show, ksm's output equals a freshly started ksm's, craned's watch of its rules sees a
//!   run-once trigger and writes the new Deployment's Recommendation, and the adapter still
//!   serves node metrics and asks the restarted API server who may read them;
//! - ksm frozen (SIGSTOP) while the API server restarts, objects change and etcd is
//!   compacted: on waking its watches get 410 Gone, it relists, and again nothing is stale or
//!   lost against a fresh ksm;
//! - SIGTERM while scrapes are in flight: every answer begun is complete, and ksm exits 0.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ferrocrane_e2e::{
    AdapterLaunch, FrontProxiedAdapter, PrivateCluster, ServiceProcess, Workload,
    craned::CranedLaunch, http_client, install_craned_crds, repo_root, wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use serde_json::{Value, json};

use ferrocrane_e2e::ksm::{Ksm, sample_lines, scrape, start_ksm, wait_for_scrape};

/// Families of objects that change on their own (kwok's heartbeats, the controller manager's
/// status updates) are left out, so two scrapes a moment apart can be equal.
const RESOURCES: &str = "--resources=configmaps,deployments,namespaces,secrets,services";

async fn create_configmap(api: &Api<ConfigMap>, name: &str) -> Result<()> {
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))?,
    )
    .await?;
    Ok(())
}

/// The sample lines of ksm's output, as a set (the order of series is not compared).
async fn samples(ksm: &Ksm) -> Result<BTreeSet<String>> {
    Ok(sample_lines(&scrape(&ksm.metrics).await?))
}

/// Waits until `ksm` and a freshly started ksm (same flags) agree exactly.
async fn equals_a_fresh_ksm(
    cluster: &PrivateCluster,
    ksm: &Ksm,
    flags: &[String],
    what: &str,
) -> Result<()> {
    let fresh = start_ksm(&cluster.cluster, flags).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let (a, b) = (samples(ksm).await?, samples(&fresh).await?);
        if a == b {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            let stale: Vec<_> = a.difference(&b).take(20).collect();
            let missing: Vec<_> = b.difference(&a).take(20).collect();
            bail!(
                "{what}: the long-running ksm differs from a fresh one\nonly in it (stale): {stale:#?}\nonly in the fresh one (lost): {missing:#?}\nits log:\n{}",
                ksm.process.logs()
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn deployment(name: &str) -> Result<Deployment> {
    Workload::deployment(name).deployment_object()
}

fn dynamic_api(
    client: &kube::Client,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("analysis.crane.io", "v1alpha1", kind),
        plural,
    );
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// craned on the private cluster, alone (no leader election), with the repository's example
/// configuration.
async fn start_craned(cluster: &PrivateCluster, namespace: &str) -> Result<ServiceProcess> {
    let client = cluster.cluster.client().await?;
    install_craned_crds(&cluster.cluster, &client).await?;
    CranedLaunch::example(&cluster.cluster, namespace)?
        .start()
        .await
}

/// Waits until craned has written a Recommendation for the Deployment `target`.
async fn recommendation_for(
    recs: &Api<DynamicObject>,
    target: &str,
    craned: &mut ServiceProcess,
) -> Result<()> {
    let selector = format!("analysis.crane.io/recommendation-target-name={target}");
    let found = wait_until(
        &format!("craned's Recommendation for {target}"),
        Duration::from_secs(90),
        || {
            let alive = craned.ensure_running();
            let recs = recs.clone();
            let selector = selector.clone();
            async move {
                alive?;
                let list = recs.list(&ListParams::default().labels(&selector)).await?;
                Ok((!list.items.is_empty()).then_some(()))
            }
        },
    )
    .await;
    found.with_context(|| format!("craned log:\n{}", craned.logs()))
}

struct Adapter {
    front: FrontProxiedAdapter,
    nodes: Vec<String>,
}

impl Adapter {
    async fn get(&self, path: &str, user: &str, group: Option<&str>) -> Result<(u16, Value)> {
        let mut request = self
            .front
            .http
            .get(format!("{}{path}", self.front.base))
            .header("X-Remote-User", user);
        if let Some(g) = group {
            request = request.header("X-Remote-Group", g);
        }
        let resp = request.send().await?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await?;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    /// Waits until `/apis/metrics.k8s.io/v1beta1/nodes` lists every kwok node.
    async fn nodes_served(&self, when: &str) -> Result<()> {
        let served = wait_until(
            &format!("the adapter's node metrics {when}"),
            Duration::from_secs(120),
            || async {
                let (status, body) = self
                    .get(
                        "/apis/metrics.k8s.io/v1beta1/nodes",
                        "faults",
                        Some("system:masters"),
                    )
                    .await?;
                let names: BTreeSet<&str> = body["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i["metadata"]["name"].as_str())
                    .collect();
                Ok(
                    (status == 200 && self.nodes.iter().all(|n| names.contains(n.as_str())))
                        .then_some(()),
                )
            },
        )
        .await;
        served.with_context(|| format!("adapter log:\n{}", self.front.process.logs()))
    }
}

/// metrics-adapter with the repository's default config, called as the aggregator would.
async fn start_adapter(cluster: &PrivateCluster) -> Result<Adapter> {
    let c = &cluster.cluster;
    let front = AdapterLaunch::config_file(&repo_root().join("config/adapter/default-config.yaml"))
        .relist("5s", "1h")
        .front_proxied(c)
        .await?;
    Ok(Adapter {
        front,
        nodes: c.kwok_nodes()?,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn apiserver_restarts_and_410_gone_lose_nothing_and_sigterm_drains() -> Result<()> {
    let cluster = PrivateCluster::start_with_apiserver_args("faults-ksm", "--watch-cache=false")?;
    let client = cluster.cluster.client().await?;
    let n = "faults";
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": n}}))?,
        )
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), n);
    for i in 0..5 {
        create_configmap(&cms, &format!("cm-{i}")).await?;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), n);
    deployments
        .create(&PostParams::default(), &deployment("web")?)
        .await?;

    let flags = vec![RESOURCES.to_owned()];
    let mut ksm = start_ksm(&cluster.cluster, &flags).await?;
    let info = |cm: &str| format!("kube_configmap_info{{namespace=\"{n}\",configmap=\"{cm}\"}} 1");
    wait_for_scrape("ksm lists the config maps", &ksm.metrics, |t| {
        t.contains(&info("cm-4"))
    })
    .await?;

    // craned beside it, one round of a rule over the namespace's Deployments before the
    // restart (Prometheus has no history for them: the Recommendations say so, which is
    // enough to show craned reads and writes).
    let mut craned = start_craned(&cluster, n).await?;
    let rules = dynamic_api(&client, "RecommendationRule", "recommendationrules", None);
    let recs = dynamic_api(&client, "Recommendation", "recommendations", Some(n));
    rules
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "analysis.crane.io/v1alpha1",
                "kind": "RecommendationRule",
                "metadata": {"name": "faults"},
                "spec": {
                    "runInterval": "24h",
                    "namespaceSelector": {"matchNames": [n]},
                    "resourceSelectors": [{"kind": "Deployment", "apiVersion": "apps/v1"}],
                    "recommenders": [{"name": "Resource"}],
                },
            }))?,
        )
        .await?;
    recommendation_for(&recs, "web", &mut craned).await?;

    // metrics-adapter beside them, serving kwok's node usage from the cluster's Prometheus.
    let adapter = start_adapter(&cluster).await?;
    adapter.nodes_served("before the restart").await?;

    // 1. The API server restarts under ksm; what changes afterwards shows.
    cluster.restart_apiserver(|| Ok(()))?;
    create_configmap(&cms, "cm-5").await?;
    cms.delete("cm-0", &DeleteParams::default()).await?;
    wait_for_scrape("changes after the restart", &ksm.metrics, |t| {
        t.contains(&info("cm-5")) && !t.contains(&info("cm-0"))
    })
    .await
    .with_context(|| ksm.process.logs())?;
    equals_a_fresh_ksm(&cluster, &ksm, &flags, "after an API server restart").await?;
    deployments
        .create(&PostParams::default(), &deployment("api")?)
        .await?;
    rules
        .patch(
            "faults",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"analysis.crane.io/run-once": "after-restart"}}})),
        )
        .await?;
    recommendation_for(&recs, "api", &mut craned).await?;
    adapter.nodes_served("after the restart").await?;
    let (status, body) = adapter
        .get("/apis/metrics.k8s.io/v1beta1/nodes", "nobody", None)
        .await?;
    ensure!(
        status == 403,
        "a caller without RBAC was answered {status} after the restart (the SubjectAccessReview must reach the new API server): {body}"
    );
    eprintln!(
        "API server restart: ksm equals a fresh ksm; craned ran the triggered round; the adapter serves and authorizes"
    );

    // 2. 410 Gone: ksm sleeps through a restart, changes and a compaction.
    let log_offset = ksm.process.logs().len();
    ksm.process.signal("STOP")?;
    let frozen = async {
        cluster.restart_apiserver(|| Ok(()))?;
        create_configmap(&cms, "cm-6").await?;
        cms.delete("cm-1", &DeleteParams::default()).await?;
        cms.patch(
            "cm-2",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "changed"}})),
        )
        .await?;
        deployments
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await?;
        cluster.compact_etcd()
    }
    .await;
    ksm.process.signal("CONT")?;
    let revision = frozen?;
    wait_for_scrape("changes made while ksm was frozen", &ksm.metrics, |t| {
        t.contains(&info("cm-6"))
            && !t.contains(&info("cm-1"))
            && t.contains(&format!(
                "kube_deployment_spec_replicas{{namespace=\"{n}\",deployment=\"web\"}} 3"
            ))
    })
    .await
    .with_context(|| ksm.process.logs())?;
    let log = ksm
        .process
        .logs()
        .get(log_offset..)
        .unwrap_or("")
        .to_owned();
    ensure!(
        log.contains("is too old") && log.contains("Expired"),
        "ksm's watches were not answered 410 Gone after the compaction at revision {revision}; its log since:\n{log}"
    );
    equals_a_fresh_ksm(&cluster, &ksm, &flags, "after 410 Gone").await?;
    eprintln!("410 Gone after compaction at revision {revision}: relisted, equals a fresh ksm");

    // 3. SIGTERM with scrapes in flight: an answer begun is an answer finished.
    let http = http_client()?;
    let url = format!("http://{}/metrics", ksm.metrics);
    let scrapes: Vec<_> = (0..16)
        .map(|i| {
            let http = http.clone();
            let url = url.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(i * 5)).await;
                let Ok(resp) = http.get(&url).send().await else {
                    return anyhow::Ok(None); // refused: sent after the listener closed
                };
                ensure!(resp.status() == 200, "status {}", resp.status());
                let body = resp.text().await.context("a begun answer was cut off")?;
                Ok(Some(body))
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(30)).await;
    ksm.process.signal("TERM")?;
    let mut answered = 0;
    for s in scrapes {
        if let Some(body) = s.await?? {
            ensure!(
                body.ends_with('\n') && body.contains(&info("cm-6")),
                "an answer ended early: {} bytes",
                body.len()
            );
            answered += 1;
        }
    }
    let exit = ksm.process.wait_exit(Duration::from_secs(30)).await?;
    ensure!(
        exit.success(),
        "ksm's exit after SIGTERM: {exit}\n{}",
        ksm.process.logs()
    );
    eprintln!(
        "SIGTERM: {answered} of 16 scrapes were in flight or before it, each complete; exit 0"
    );
    Ok(())
}
