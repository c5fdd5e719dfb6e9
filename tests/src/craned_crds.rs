//! craned's CustomResourceDefinitions in a test cluster.

use std::time::Duration;

use anyhow::{Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;

use crate::{Cluster, repo_root, wait_until};

/// Applies craned's CRDs (deploy/crds) and waits until the API server serves them.
pub async fn install_craned_crds(cluster: &Cluster, client: &kube::Client) -> Result<()> {
    let out = cluster
        .kubectl()?
        .args(["apply", "--server-side", "--force-conflicts", "-f"])
        .arg(repo_root().join("deploy/crds"))
        .output()?;
    if !out.status.success() {
        bail!(
            "kubectl apply deploy/crds: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in [
        "recommendations.analysis.crane.io",
        "recommendationrules.analysis.crane.io",
        "effectivehorizontalpodautoscalers.autoscaling.crane.io",
        "substitutes.autoscaling.crane.io",
        "timeseriespredictions.prediction.crane.io",
    ] {
        wait_until(
            &format!("CRD {name} established"),
            Duration::from_secs(30),
            || {
                let crds = crds.clone();
                async move {
                    let crd = crds.get(name).await?;
                    Ok(crd
                        .status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                        .then_some(()))
                }
            },
        )
        .await?;
    }
    Ok(())
}
