//! Both cranes on the test's control plane: CRDs applied and checked, rules made, the
//! Recommendations each writes read back as what a user would adopt, OOM records, and the
//! cleanup between the two runs.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::differential::json;
use ferrocrane_e2e::{ServiceProcess, repo_root, wait_until};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams};
use serde_json::{Value, json};

pub fn crane_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("analysis.crane.io", "v1alpha1", kind),
        plural,
    )
}

/// (target, recommender) → what a user adopts or acts on, or `failed: <message>`.
pub type Outcomes = BTreeMap<(String, String), String>;

pub fn outcome(rec: &DynamicObject) -> Option<((String, String), String)> {
    let labels = rec.metadata.labels.as_ref()?;
    let target = labels
        .get("analysis.crane.io/recommendation-target-name")?
        .clone();
    let recommender = labels
        .get("analysis.crane.io/recommendation-rule-recommender")?
        .clone();
    let status = &rec.data["status"];
    // Written once the round for it ran.
    status.get("lastUpdateTime")?;
    let field = |k: &str| status[k].as_str().unwrap_or("").to_owned();
    let mut out = String::new();
    for (key, value) in [
        ("recommendedValue", field("recommendedValue")),
        ("action", field("action")),
        ("description", field("description")),
        (
            "recommendedInfo",
            json::canonical(&field("recommendedInfo")),
        ),
        ("currentInfo", json::canonical(&field("currentInfo"))),
    ] {
        if !value.is_empty() {
            out.push_str(&format!("{key}: {value}\n"));
        }
    }
    if field("recommendedValue").is_empty() && field("action").is_empty() {
        let message = rec
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("analysis.crane.io/message"))
            .cloned()
            .unwrap_or_default();
        out = format!("failed: {message}");
    }
    Some(((target, recommender), out))
}

/// Runs `process` until every target of every rule has an outcome; returns them.
pub async fn outcomes_of(
    recs: &Api<DynamicObject>,
    process: &mut ServiceProcess,
    who: &str,
    expected: usize,
) -> Result<Outcomes> {
    let found = wait_until(
        &format!("{expected} Recommendations written by {who}"),
        Duration::from_secs(240),
        || {
            let recs = recs.clone();
            let alive = process.ensure_running();
            async move {
                alive?;
                let list = recs.list(&ListParams::default()).await?;
                let outcomes: Outcomes = list.items.iter().filter_map(outcome).collect();
                Ok((outcomes.len() >= expected).then_some(outcomes))
            }
        },
    )
    .await;
    found.with_context(|| format!("log:\n{}", process.logs()))
}

/// `kubectl <verb> -f dir` for a directory of CRDs, then waits until they are established.
pub async fn crds(
    cluster: &ferrocrane_e2e::Cluster,
    verb: &[&str],
    dir: &std::path::Path,
) -> Result<()> {
    let out = cluster.kubectl()?.args(verb).arg("-f").arg(dir).output()?;
    if !out.status.success() {
        bail!(
            "kubectl {} {}: {}",
            verb.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = cluster
        .kubectl()?
        .args(["wait", "--for=condition=Established", "--timeout=60s", "-f"])
        .arg(dir)
        .output()?;
    if !out.status.success() {
        bail!(
            "CRDs not established: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Whether the Recommendation CRD declares the status subresource.
pub async fn declares_status(client: &Client) -> Result<bool> {
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let crd = crds.get("recommendations.analysis.crane.io").await?;
    Ok(crd.data["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|v| v.pointer("/subresources/status").is_some()))
}

pub fn config_file(dir: &std::path::Path) -> Result<std::path::PathBuf> {
    let path = dir.join("recommendation-configuration.yaml");
    std::fs::copy(
        repo_root().join("config/craned/recommendation-configuration.yaml"),
        &path,
    )?;
    Ok(path)
}

pub fn rule(
    name: &str,
    namespaces: Value,
    kinds: &[(&str, &str)],
    recommenders: &[&str],
    config: Value,
) -> Value {
    json!({
        "apiVersion": "analysis.crane.io/v1alpha1",
        "kind": "RecommendationRule",
        "metadata": {"name": name},
        "spec": {
            "runInterval": "24h",
            "namespaceSelector": namespaces,
            "resourceSelectors": kinds.iter().map(|(kind, api_version)| json!({
                "kind": kind, "apiVersion": api_version,
            })).collect::<Vec<_>>(),
            "recommenders": recommenders.iter().map(|r| json!({"name": r, "config": config}))
                .collect::<Vec<_>>(),
        },
    })
}

/// The OOM records in crane-system's `oom-record` ConfigMap: (pod, container) of each.
pub async fn oom_records(client: &Client) -> Result<Vec<(String, String)>> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "crane-system");
    let Some(cm) = cms.get_opt("oom-record").await? else {
        return Ok(Vec::new());
    };
    let data = cm
        .data
        .unwrap_or_default()
        .remove("data")
        .unwrap_or_default();
    let records: Vec<Value> = serde_json::from_str(&data)?;
    Ok(records
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("Pod"), s("Container"))
        })
        .collect())
}

pub async fn wait_for_oom_records(
    client: &Client,
    killed: &[(String, String)],
    process: &mut ServiceProcess,
    who: &str,
) -> Result<()> {
    let found = wait_until(
        &format!("{who}'s OOM records of {killed:?}"),
        Duration::from_secs(60),
        || {
            let alive = process.ensure_running();
            async move {
                alive?;
                let records = oom_records(client).await?;
                Ok(killed.iter().all(|k| records.contains(k)).then_some(()))
            }
        },
    )
    .await;
    found.with_context(|| format!("log:\n{}", process.logs()))
}

pub fn gone_or_deleted(result: kube::Result<()>) -> Result<()> {
    match result {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        other => Ok(other?),
    }
}

/// Deletes every Recommendation and rule, and the OOM records, so the next craned starts from
/// nothing but the cluster's objects.
pub async fn clean(
    client: &Client,
    rules: &Api<DynamicObject>,
    recs: &Api<DynamicObject>,
    rec_ar: &ApiResource,
) -> Result<()> {
    rules
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    for rec in recs.list(&ListParams::default()).await? {
        let ns = rec.metadata.namespace.clone().unwrap_or_default();
        let name = rec.metadata.name.clone().unwrap_or_default();
        // The garbage collector may be there first: the rules own them.
        gone_or_deleted(
            Api::<DynamicObject>::namespaced_with(client.clone(), &ns, rec_ar)
                .delete(&name, &DeleteParams::default())
                .await
                .map(|_| ()),
        )?;
    }
    gone_or_deleted(
        Api::<ConfigMap>::namespaced(client.clone(), "crane-system")
            .delete("oom-record", &DeleteParams::default())
            .await
            .map(|_| ()),
    )?;
    wait_until(
        "Crane's Recommendations gone",
        Duration::from_secs(30),
        || {
            let recs = recs.clone();
            let rules = rules.clone();
            async move {
                let left = recs.list(&ListParams::default()).await?.items.len()
                    + rules.list(&ListParams::default()).await?.items.len();
                Ok((left == 0).then_some(()))
            }
        },
    )
    .await
}
