//! ferrocrane-core's discovery-backed resource mapping against a real kube-apiserver,
//! including a CRD created after the mapper started (found at the next refresh).

use std::time::Duration;

use anyhow::{Context, Result};
use ferrocrane_core::kube::{ResourceMapper, spawn_refresh};
use ferrocrane_e2e::{Cluster, wait_until};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};

#[tokio::test]
async fn built_in_resources_map_both_ways() -> Result<()> {
    let client = Cluster::get()?.client().await?;
    let mapper = ResourceMapper::discover(&client).await?;
    let pods = mapper.by_resource("", "pod").context("pod by singular")?;
    assert_eq!(
        (pods.kind.as_str(), pods.plural.as_str(), pods.namespaced),
        ("Pod", "pods", true)
    );
    let deploy = mapper
        .by_resource("apps", "deployments")
        .context("deployments.apps")?;
    assert!(deploy.has_scale, "deployments have a scale subresource");
    assert_eq!(deploy.version, "v1");
    let node = mapper.by_kind("", "Node").context("Node kind")?;
    assert!(!node.namespaced);
    assert!(mapper.by_resource("", "no-such-things").is_none());
    Ok(())
}

#[tokio::test]
async fn a_crd_created_later_is_found_by_the_refresh() -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    let suffix = format!("{:x}", std::process::id());
    let group = format!("d{suffix}.e2e.ferrocrane.io");
    let mapper = spawn_refresh(client.clone(), Duration::from_secs(1));
    let first = mapper.ready().await?;
    assert!(first.by_resource(&group, "gadgets").is_none());

    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "metadata": { "name": format!("gadgets.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gdg"] },
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } },
                "subresources": { "scale": { "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas" } }
            }]
        }
    }))?;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    crds.create(&PostParams::default(), &crd).await?;
    let found = wait_until(
        "the new CRD in the mapper",
        Duration::from_secs(60),
        || async { Ok(mapper.current().by_resource(&group, "gdg").cloned()) },
    )
    .await;
    let _ = crds
        .delete(&format!("gadgets.{group}"), &DeleteParams::default())
        .await;
    let found = found?;
    assert_eq!(
        (
            found.kind.as_str(),
            found.plural.as_str(),
            found.singular.as_str()
        ),
        ("Gadget", "gadgets", "gadget")
    );
    assert!(found.has_scale && found.namespaced);
    Ok(())
}
