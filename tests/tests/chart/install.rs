//! A real `helm install`, `helm upgrade` and `helm uninstall` against the local control plane.
//! The chart's pods do not tolerate the kwok nodes' taint, so they stay Pending: the test
//! checks that the API server accepted every object, that CRDs are Established and
//! APIServices created, never that pods run.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ferrocrane_e2e::{Cluster, ClusterLock, Helm, METRICS_APISERVICES_LOCK, Manifest, wait_until};
use serde_json::Value;

use crate::rendered::*;

fn kubectl_get(
    cluster: &Cluster,
    kind: &str,
    name: &str,
    ns: Option<&str>,
) -> Result<Option<Value>> {
    let mut cmd = cluster.kubectl()?;
    cmd.args(["get", kind, name, "-o", "json", "--ignore-not-found"]);
    if let Some(ns) = ns {
        cmd.args(["-n", ns]);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        bail!(
            "kubectl get {kind} {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    Ok(Some(serde_json::from_slice(&out.stdout)?))
}

/// Names of objects of `kind` labelled with the release, cluster-wide or in `ns`.
fn labelled(cluster: &Cluster, kind: &str, release: &str, ns: Option<&str>) -> Result<Vec<String>> {
    let mut cmd = cluster.kubectl()?;
    cmd.args([
        "get",
        kind,
        "-l",
        &format!("app.kubernetes.io/instance={release}"),
        "-o",
        "name",
    ]);
    match ns {
        Some(ns) => cmd.args(["-n", ns]),
        None => cmd.arg("--all-namespaces"),
    };
    let out = cmd.output()?;
    if !out.status.success() {
        bail!(
            "kubectl get {kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// Every object of a release's manifest exists in the cluster.
fn assert_all_exist(cluster: &Cluster, m: &Manifest, ns: &str) -> Result<()> {
    for o in &m.objects {
        let kind = o["kind"].as_str().context("kind")?;
        let api = o["apiVersion"].as_str().context("apiVersion")?;
        let name = o["metadata"]["name"].as_str().context("name")?;
        let group = api.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let resource = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let obj_ns = o["metadata"]["namespace"].as_str().unwrap_or(ns);
        let namespaced = kind != "APIService" && !kind.starts_with("Cluster");
        let got = kubectl_get(cluster, &resource, name, namespaced.then_some(obj_ns))?;
        ensure!(got.is_some(), "{kind}/{name} was not created");
    }
    Ok(())
}

#[tokio::test]
async fn install_upgrade_uninstall_against_the_real_api_server() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("helm").await?;
    // APIService names are fixed by their groups: one owner at a time in the shared cluster.
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(300)).await?;
    for name in APISERVICES {
        if let Some(existing) = kubectl_get(cluster, "apiservice", name, None)? {
            bail!(
                "APIService {name} already exists in the test cluster (owner: {}); \
                 a test registering it must hold the {METRICS_APISERVICES_LOCK} lock",
                existing["metadata"]["labels"]
            );
        }
    }
    let helm = Helm::for_cluster(cluster)?;
    let chart = Helm::chart();
    let chart = chart.to_str().context("chart")?;
    // The namespace's random suffix makes every cluster-scoped name (ClusterRoles, bindings)
    // unique to this run.
    let release = ns.name.clone();
    let mut installed = Some(release.clone());
    let result = async {
        helm.run(&[
            "install",
            &release,
            chart,
            "--namespace",
            &ns.name,
            "--timeout",
            "2m",
        ])?;
        let manifest = Manifest::parse(&helm.run(&["get", "manifest", &release, "-n", &ns.name])?)?;
        ensure!(manifest.objects.len() > 30, "{:?}", manifest.summary());
        assert_all_exist(cluster, &manifest, &ns.name)?;

        // CRDs shipped in the chart's crds/ directory are Established.
        let crd_dir = Helm::chart().join("crds");
        let mut crds = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&crd_dir) {
            for entry in entries.flatten() {
                let text = std::fs::read_to_string(entry.path())?;
                for o in Manifest::parse(&text)?.of_kind("CustomResourceDefinition") {
                    crds.push(
                        o["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    );
                }
            }
        }
        for crd in &crds {
            wait_until(
                &format!("CRD {crd} Established"),
                Duration::from_secs(60),
                || async {
                    let got = kubectl_get(cluster, "crd", crd, None)?;
                    Ok(got.filter(|c| {
                        c["status"]["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    }))
                },
            )
            .await?;
        }

        // APIServices registered for the adapter's Service, with the CA of its Secret.
        let secret = kubectl_get(
            cluster,
            "secret",
            &format!("{release}-ferrocrane-adapter-tls"),
            Some(&ns.name),
        )?
        .context("serving-cert Secret")?;
        for name in APISERVICES {
            let api = kubectl_get(cluster, "apiservice", name, None)?
                .with_context(|| format!("APIService {name} not created"))?;
            ensure!(
                api["spec"]["service"]["namespace"] == ns.name.as_str(),
                "{api}"
            );
            ensure!(
                api["spec"]["caBundle"] == secret["data"]["ca.crt"],
                "{name} caBundle"
            );
        }

        // Upgrade: autoAdoption adds workload patch rights, metrics.k8s.io handed back, the
        // serving CA is kept (running clients keep trusting it).
        helm.run(&[
            "upgrade",
            &release,
            chart,
            "--namespace",
            &ns.name,
            "--set",
            "craned.autoAdoption=true,adapter.apiServices.metricsV1beta1.enabled=false,adapter.apiServices.metricsV1.enabled=false",
        ])?;
        let status: Value =
            serde_json::from_str(&helm.run(&["status", &release, "-n", &ns.name, "-o", "json"])?)?;
        ensure!(
            status["version"] == 2,
            "revision after upgrade: {}",
            status["version"]
        );
        for name in ["v1beta1.metrics.k8s.io", "v1.metrics.k8s.io"] {
            ensure!(
                kubectl_get(cluster, "apiservice", name, None)?.is_none(),
                "{name} APIService left after turning it off"
            );
        }
        let role = kubectl_get(
            cluster,
            "clusterrole",
            &format!("{release}-ferrocrane-craned"),
            None,
        )?
        .context("craned ClusterRole")?;
        ensure!(
            grants(&role).contains(&("apps".into(), "deployments".into(), "patch".into())),
            "autoAdoption did not grant patch"
        );
        let secret2 = kubectl_get(
            cluster,
            "secret",
            &format!("{release}-ferrocrane-adapter-tls"),
            Some(&ns.name),
        )?
        .context("serving-cert Secret after upgrade")?;
        ensure!(
            secret2["data"]["ca.crt"] == secret["data"]["ca.crt"],
            "CA rotated on upgrade"
        );
        let api = kubectl_get(cluster, "apiservice", "v1beta1.custom.metrics.k8s.io", None)?
            .context("custom metrics APIService")?;
        ensure!(api["spec"]["caBundle"] == secret["data"]["ca.crt"]);

        // Uninstall leaves nothing labelled with the release, cluster-scoped or in kube-system.
        helm.run(&["uninstall", &release, "--namespace", &ns.name])?;
        installed = None;
        for kind in ["apiservices", "clusterroles", "clusterrolebindings"] {
            let left = labelled(cluster, kind, &release, None)?;
            ensure!(left.is_empty(), "left after uninstall: {left:?}");
        }
        for kind in ["rolebindings", "roles"] {
            let left = labelled(cluster, kind, &release, Some("kube-system"))?;
            ensure!(left.is_empty(), "left in kube-system: {left:?}");
        }
        let kinds = "deployments,services,serviceaccounts,configmaps,secrets,\
                     poddisruptionbudgets,roles,rolebindings";
        let left = labelled(cluster, kinds, &release, Some(&ns.name))?;
        ensure!(left.is_empty(), "left in {}: {left:?}", ns.name);
        Ok(())
    }
    .await;
    if let Some(release) = installed {
        // Do not leave unavailable APIServices behind for the other tests.
        let _ = helm.output(&["uninstall", &release, "--namespace", &ns.name]);
    }
    result
}
