//! The suite as the chart installs it, under the chart's own identities: for each service the
//! chart's ServiceAccount, Roles and bindings are applied to the real API server, the binary
//! runs with a token of that ServiceAccount (TokenRequest), the chart's rendered args and its
//! ConfigMaps and Secrets written to files where the Deployment mounts them, and it must become
//! ready and do its job. No kubelet runs the chart's images here, so only what a kubelet would
//! do is done by hand: mounts become files, in-cluster addresses become loopback ones.
//!
//! A verb missing from the chart's RBAC fails these tests: every API error a service logs
//! (`forbidden`) fails them, and the ksm test shows it by taking a resource away from its role.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, Helm, Kubectl, METRICS_APISERVICES_LOCK, Manifest,
    ServiceProcess, craned::CranedLaunch, free_port, http_client, repo_root, two_ports, wait_until,
};
use k8s_openapi::ByteString;
use serde_json::{Value, json};

/// The chart's identities of one release, applied to the cluster; its cluster-scoped objects
/// (and its RoleBinding in kube-system) are deleted on drop, the namespace with the test.
struct Identities {
    release: String,
    namespace: String,
    manifest: Manifest,
    dir: PathBuf,
    kubectl: Kubectl,
}

impl Drop for Identities {
    fn drop(&mut self) {
        let selector = format!("app.kubernetes.io/instance={}", self.release);
        for (kind, ns) in [
            ("clusterrole,clusterrolebinding", None),
            ("rolebinding,role", Some("kube-system")),
        ] {
            let mut args = vec![kind, "-l", &selector];
            if let Some(ns) = ns {
                args.extend(["-n", ns]);
            }
            self.kubectl.delete_without_waiting(&args);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs kubectl (admin) with `args` and `stdin`, returning stdout.
fn kubectl(cluster: &Cluster, args: &[&str], stdin: Option<&str>) -> Result<String> {
    use std::io::Write as _;
    let mut cmd = cluster.kubectl()?;
    cmd.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn()?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        input.write_all(text.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    ensure!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// Renders the chart for `release` in `namespace` (Prometheus at the cluster's) and applies
/// its ServiceAccounts, Roles, ClusterRoles and bindings, nothing else.
fn install(cluster: &Cluster, namespace: &str, release: &str) -> Result<Identities> {
    let prometheus = format!("prometheus.url={}", cluster.env.var("PROMETHEUS_URL")?);
    let manifest = Helm::locate()?.template(release, namespace, &["--set", &prometheus])?;
    let identities = Identities {
        release: release.to_owned(),
        namespace: namespace.to_owned(),
        dir: std::env::temp_dir().join(format!("ferrocrane-identities-{release}")),
        kubectl: cluster.kubectl_handle()?,
        manifest,
    };
    let items: Vec<&Value> = [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ]
    .iter()
    .flat_map(|kind| identities.manifest.of_kind(kind))
    .collect();
    ensure!(
        items.len() >= 9,
        "the chart rendered {} RBAC objects",
        items.len()
    );
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    kubectl(cluster, &["apply", "-f", "-"], Some(&list.to_string()))?;
    std::fs::create_dir_all(&identities.dir)?;
    Ok(identities)
}

impl Identities {
    fn component_name(&self, component: &str) -> String {
        format!("{}-ferrocrane-{component}", self.release)
    }

    fn deployment(&self, component: &str) -> Result<&Value> {
        let name = self.component_name(component);
        self.manifest
            .get("Deployment", &name)
            .with_context(|| format!("Deployment {name} not rendered"))
    }

    /// A kubeconfig holding a token of the component's ServiceAccount (TokenRequest).
    fn kubeconfig(&self, cluster: &Cluster, component: &str) -> Result<PathBuf> {
        let sa = self.component_name(component);
        let token = kubectl(
            cluster,
            &[
                "create",
                "token",
                &sa,
                "-n",
                &self.namespace,
                "--duration",
                "1h",
            ],
            None,
        )?;
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": {
                "server": cluster.env.var("APISERVER_URL")?,
                "certificate-authority": cluster.env.path("CLUSTER_CA")?,
            }}],
            "users": [{"name": sa, "user": {"token": token.trim()}}],
            "contexts": [{"name": "chart", "context": {
                "cluster": "local", "user": sa, "namespace": self.namespace,
            }}],
            "current-context": "chart",
        });
        let path = self.dir.join(format!("{component}.kubeconfig"));
        std::fs::write(&path, config.to_string())?;
        Ok(path)
    }

    /// A rendered Secret's key, decoded.
    fn secret(&self, name: &str, key: &str) -> Result<Vec<u8>> {
        let secret = self
            .manifest
            .get("Secret", name)
            .with_context(|| format!("Secret {name} not rendered"))?;
        let value: ByteString = serde_json::from_value(secret["data"][key].clone())
            .with_context(|| format!("Secret {name} key {key}"))?;
        Ok(value.0)
    }

    /// Writes every mounted volume of the component's Deployment under the test's directory
    /// (ConfigMaps and Secrets from the rendered chart, emptyDirs empty) and returns its args
    /// with those paths and the `overrides` (flag → value) put in.
    fn local_args(&self, component: &str, overrides: &[(&str, String)]) -> Result<Vec<String>> {
        let deployment = self.deployment(component)?;
        let pod = &deployment["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        let volumes: BTreeMap<&str, &Value> = pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| Some((v["name"].as_str()?, v)))
            .collect();
        let mut mounts: Vec<(String, PathBuf)> = Vec::new();
        for mount in container["volumeMounts"].as_array().into_iter().flatten() {
            let (Some(path), Some(name)) = (mount["mountPath"].as_str(), mount["name"].as_str())
            else {
                bail!("volume mount without path or name: {mount}");
            };
            let volume = volumes
                .get(name)
                .with_context(|| format!("volume {name} not declared"))?;
            let local = self.dir.join(component).join(name);
            std::fs::create_dir_all(&local)?;
            self.write_volume(volume, &local)?;
            mounts.push((path.to_owned(), local));
        }
        let overridden: BTreeMap<&str, &String> = overrides.iter().map(|(k, v)| (*k, v)).collect();
        container["args"]
            .as_array()
            .context("container args")?
            .iter()
            .map(|arg| {
                let arg = arg.as_str().context("arg is not a string")?;
                let Some((flag, value)) = arg.split_once('=') else {
                    return Ok(arg.to_owned());
                };
                if let Some(v) = overridden.get(flag) {
                    return Ok(format!("{flag}={v}"));
                }
                let local = mounts.iter().find_map(|(path, local)| {
                    let rest = value.strip_prefix(path.as_str())?;
                    Some(format!("{}{rest}", local.display()))
                });
                Ok(format!("{flag}={}", local.as_deref().unwrap_or(value)))
            })
            .collect()
    }

    fn write_volume(&self, volume: &Value, dir: &Path) -> Result<()> {
        if let Some(name) = volume["configMap"]["name"].as_str() {
            let cm = self
                .manifest
                .get("ConfigMap", name)
                .with_context(|| format!("ConfigMap {name} not rendered"))?;
            for (key, text) in cm["data"].as_object().into_iter().flatten() {
                std::fs::write(dir.join(key), text.as_str().unwrap_or_default())?;
            }
        } else if let Some(name) = volume["secret"]["secretName"].as_str() {
            let secret = self
                .manifest
                .get("Secret", name)
                .with_context(|| format!("Secret {name} not rendered"))?;
            for key in secret["data"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                std::fs::write(dir.join(key), self.secret(name, key)?)?;
            }
        } else if volume.get("emptyDir").is_none() {
            bail!("volume kind not handled here: {volume}");
        }
        Ok(())
    }
}

/// Fails on any API call the service's log says was forbidden.
fn no_forbidden(process: &ServiceProcess) -> Result<()> {
    let logs = process.logs();
    let forbidden: Vec<&str> = logs
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("forbidden"))
        .collect();
    ensure!(
        forbidden.is_empty(),
        "{} was refused by the API server under the chart's identity:\n{}",
        process.name,
        forbidden.join("\n")
    );
    Ok(())
}

/// `kube_state_metrics_list_total` samples as (resource, result) → value.
fn list_totals(text: &str) -> BTreeMap<(String, String), f64> {
    let label = |labels: &str, key: &str| {
        let start = labels.find(&format!("{key}=\""))? + key.len() + 2;
        let end = labels[start..].find('"')?;
        Some(labels[start..start + end].to_owned())
    };
    text.lines()
        .filter_map(|l| l.strip_prefix("kube_state_metrics_list_total{"))
        .filter_map(|l| {
            let (labels, value) = l.split_once("} ")?;
            Some((
                (label(labels, "resource")?, label(labels, "result")?),
                value.trim().parse().ok()?,
            ))
        })
        .collect()
}

/// Waits until ksm has listed `expected` resources successfully; fails as soon as a list
/// failed, naming the resources.
async fn ksm_lists_all(telemetry: &str, expected: usize, ksm: &mut ServiceProcess) -> Result<()> {
    let http = http_client()?;
    wait_until(
        &format!("ksm to list all {expected} resources"),
        Duration::from_secs(60),
        || {
            let http = http.clone();
            let alive = ksm.ensure_running();
            async move {
                alive?;
                let Ok(resp) = http.get(telemetry).send().await else {
                    return Ok(None);
                };
                let totals = list_totals(&resp.text().await?);
                let failed: BTreeSet<&str> = totals
                    .iter()
                    .filter(|((_, result), v)| result == "error" && **v > 0.0)
                    .map(|((resource, _), _)| resource.as_str())
                    .collect();
                if !failed.is_empty() {
                    bail!("lists failed for {failed:?}");
                }
                let listed = totals
                    .iter()
                    .filter(|((_, result), v)| result == "success" && **v > 0.0)
                    .count();
                Ok((listed == expected).then_some(()))
            }
        },
    )
    .await
}

#[tokio::test]
async fn ksm_lists_everything_it_exports_under_the_charts_identity() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("chart-ksm").await?;
    let ids = install(cluster, &ns.name, &ns.name)?;
    let kubeconfig = ids.kubeconfig(cluster, "ksm")?;
    let (port, telemetry_port) = two_ports()?;
    let mut args = ids.local_args(
        "ksm",
        &[
            ("--port", port.to_string()),
            ("--telemetry-port", telemetry_port.to_string()),
        ],
    )?;
    args.extend([
        format!("--kubeconfig={}", kubeconfig.display()),
        "--host=127.0.0.1".into(),
        "--telemetry-host=127.0.0.1".into(),
    ]);
    let resources = args
        .iter()
        .find_map(|a| a.strip_prefix("--resources="))
        .context("the chart passes --resources")?
        .split(',')
        .count();
    let telemetry = format!("http://127.0.0.1:{telemetry_port}/metrics");

    let mut ksm = ServiceProcess::start("ksm", &args)?;
    ksm_lists_all(&telemetry, resources, &mut ksm)
        .await
        .with_context(|| format!("ksm log:\n{}", ksm.logs()))?;
    no_forbidden(&ksm)?;
    let metrics = http_client()?
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    ensure!(
        metrics.contains(&format!(
            "kube_namespace_created{{namespace=\"{}\"}}",
            ns.name
        )),
        "ksm does not export the test's namespace"
    );
    drop(ksm);

    // Without secrets in its role, the same run must fail: this test sees a missing verb.
    let role_name = ids.component_name("ksm");
    let mut role = ids
        .manifest
        .get("ClusterRole", &role_name)
        .context("ksm ClusterRole")?
        .clone();
    for rule in role["rules"].as_array_mut().into_iter().flatten() {
        if let Some(list) = rule["resources"].as_array_mut() {
            list.retain(|r| r != "secrets");
        }
    }
    kubectl(cluster, &["apply", "-f", "-"], Some(&role.to_string()))?;
    let mut ksm = ServiceProcess::start("ksm", &args)?;
    let refused = ksm_lists_all(&telemetry, resources, &mut ksm).await;
    let message = format!(
        "{:#}",
        refused
            .err()
            .context("ksm listed secrets without the verb")?
    );
    // Self-metrics name the resource by its Go type, as upstream (`*v1.Secret`).
    ensure!(message.contains("*v1.Secret"), "{message}");
    ensure!(
        no_forbidden(&ksm).is_err(),
        "the refusal is not in ksm's log"
    );
    Ok(())
}

#[tokio::test]
async fn adapter_serves_every_apiservice_under_the_charts_identity() -> Result<()> {
    let cluster = Cluster::get()?;
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(900)).await?;
    let ns = cluster.namespace("chart-adapter").await?;
    let ids = install(cluster, &ns.name, &ns.name)?;
    let kubeconfig = ids.kubeconfig(cluster, "adapter")?;
    let port = free_port()?;
    let mut args = ids.local_args(
        "adapter",
        &[
            (
                "--prometheus-url",
                cluster.env.var("PROMETHEUS_URL")?.to_owned(),
            ),
            ("--secure-port", port.to_string()),
        ],
    )?;
    args.extend([
        format!("--kubeconfig={}", kubeconfig.display()),
        "--bind-address=127.0.0.1".into(),
    ]);
    let service = ids.component_name("adapter");
    let ca = String::from_utf8(ids.secret(&format!("{service}-tls"), "ca.crt")?)?;
    // Registers the five APIServices and waits until the aggregator finds each Available.
    let adapter = AdapterLaunch::flags(args, port, ca, service)
        .behind_aggregator(cluster, &ns.name)
        .await?;

    let get = |path: &str| -> Result<Value> {
        Ok(serde_json::from_str(&kubectl(
            cluster,
            &["get", "--raw", path],
            None,
        )?)?)
    };
    for gv in [
        "custom.metrics.k8s.io/v1beta1",
        "custom.metrics.k8s.io/v1beta2",
        "external.metrics.k8s.io/v1beta1",
        "metrics.k8s.io/v1beta1",
        "metrics.k8s.io/v1",
    ] {
        let list = get(&format!("/apis/{gv}"))?;
        ensure!(list["groupVersion"] == gv, "{gv}: {list}");
    }
    // Resource metrics need the pods and nodes it watches with its own identity.
    let nodes = wait_until(
        "metrics.k8s.io/v1 nodes through the aggregator",
        Duration::from_secs(60),
        || async {
            let list = get("/apis/metrics.k8s.io/v1/nodes")?;
            let names: Vec<String> = list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned))
                .collect();
            let kwok = cluster.kwok_nodes()?;
            Ok(names.iter().any(|n| kwok.contains(n)).then_some(names))
        },
    )
    .await
    .with_context(|| format!("adapter log:\n{}", adapter.process.logs()))?;
    // kwok reports a node's usage once it runs pods; one of its nodes is enough here.
    let kwok_nodes = cluster.kwok_nodes()?;
    ensure!(
        nodes.iter().any(|n| kwok_nodes.contains(n)),
        "no kwok node in {nodes:?}"
    );
    no_forbidden(&adapter.process)?;
    Ok(())
}

#[tokio::test]
async fn craned_writes_recommendations_under_the_charts_identity() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("chart-craned").await?;
    // The chart installs the CRDs (as cluster admin); the rest is craned's own doing.
    kubectl(
        cluster,
        &[
            "apply",
            "--server-side",
            "-f",
            &repo_root().join("deploy/crds").display().to_string(),
        ],
        None,
    )?;
    kubectl(
        cluster,
        &[
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd/recommendations.analysis.crane.io",
            "crd/recommendationrules.analysis.crane.io",
        ],
        None,
    )?;
    let ids = install(cluster, &ns.name, &ns.name)?;
    let kubeconfig = ids.kubeconfig(cluster, "craned")?;
    let (metrics_port, health_port) = two_ports()?;
    let mut args = ids.local_args(
        "craned",
        &[
            (
                "--prometheus-address",
                cluster.env.var("PROMETHEUS_URL")?.to_owned(),
            ),
            (
                "--metrics-bind-address",
                format!("127.0.0.1:{metrics_port}"),
            ),
            (
                "--health-probe-bind-address",
                format!("127.0.0.1:{health_port}"),
            ),
        ],
    )?;
    args.push(format!("--kubeconfig={}", kubeconfig.display()));
    // The Deployment's downward-API env, as a kubelet would fill it.
    let craned = CranedLaunch::flags(args, metrics_port, health_port)
        .env("POD_NAMESPACE", &ns.name)
        .env("POD_NAME", "craned-0")
        .start()
        .await?;

    let deployment = cluster.kwok_deployment("web", 1, json!({}))?;
    kubectl(
        cluster,
        &["apply", "-n", &ns.name, "-f", "-"],
        Some(&serde_json::to_string(&deployment)?),
    )?;
    let rule = json!({
        "apiVersion": "analysis.crane.io/v1alpha1",
        "kind": "RecommendationRule",
        "metadata": {"name": ns.name},
        "spec": {
            "runInterval": "",
            "namespaceSelector": {"matchNames": [ns.name]},
            "resourceSelectors": [{"kind": "Deployment", "apiVersion": "apps/v1"}],
            "recommenders": [{"name": "Resource"}]
        }
    });
    kubectl(cluster, &["apply", "-f", "-"], Some(&rule.to_string()))?;
    let _rule_guard = RuleGuard {
        kubectl: cluster.kubectl_handle()?,
        name: ns.name.clone(),
    };

    // A Recommendation written with its status (the test's Prometheus has no history for
    // the pod, so the status says why there is no value), and the rule's status after it.
    let written = wait_until(
        "a Recommendation with its status",
        Duration::from_secs(90),
        || async {
            let list: Value = serde_json::from_str(&kubectl(
                cluster,
                &["get", "recommendations", "-n", &ns.name, "-o", "json"],
                None,
            )?)?;
            Ok(list["items"]
                .as_array()
                .and_then(|items| items.first().cloned())
                .filter(|r| r["status"]["conditions"].is_array()))
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", craned.logs()))?;
    ensure!(written["spec"]["targetRef"]["name"] == "web", "{written}");
    wait_until("the rule's status", Duration::from_secs(60), || async {
        let rule: Value = serde_json::from_str(&kubectl(
            cluster,
            &["get", "recommendationrule", &ns.name, "-o", "json"],
            None,
        )?)?;
        Ok(rule["status"]["recommendations"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
            .then_some(()))
    })
    .await?;
    no_forbidden(&craned)?;
    Ok(())
}

/// Deletes the test's cluster-scoped RecommendationRule.
struct RuleGuard {
    kubectl: Kubectl,
    name: String,
}

impl Drop for RuleGuard {
    fn drop(&mut self) {
        self.kubectl
            .delete_without_waiting(&["recommendationrule", &self.name]);
    }
}
