//! The helm chart (charts/ferrocrane) and the plain manifests rendered from it (deploy/).
//!
//! Rendering tests need only the helm binary; the install test drives a real `helm install`,
//! `helm upgrade` and `helm uninstall` against the local control plane. The chart's pods do
//! not tolerate the kwok nodes' taint, so they stay Pending: the test checks that the API
//! server accepted every object, that CRDs are Established and APIServices created, never
//! that pods run.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ferrocrane_e2e::{
    Cluster, ClusterLock, Helm, METRICS_APISERVICES_LOCK, Manifest, repo_root, wait_until,
};
use serde_json::Value;

const COMPONENTS: [&str; 3] = ["ksm", "adapter", "craned"];
const APISERVICES: [&str; 5] = [
    "v1beta1.custom.metrics.k8s.io",
    "v1beta2.custom.metrics.k8s.io",
    "v1beta1.external.metrics.k8s.io",
    "v1beta1.metrics.k8s.io",
    "v1.metrics.k8s.io",
];

fn render(extra: &[&str]) -> Result<Manifest> {
    Helm::locate()?.template("fc", "fc-system", extra)
}

fn names(m: &Manifest, kind: &str) -> BTreeSet<String> {
    m.of_kind(kind)
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Every (apiGroup, resource, verb) a ClusterRole grants.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_array().into_iter().flatten() {
        for g in strings(&rule["apiGroups"]) {
            for r in strings(&rule["resources"]) {
                for v in strings(&rule["verbs"]) {
                    out.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    out
}

fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

fn args(deployment: &Value) -> Vec<String> {
    strings(&container(deployment)["args"])
}

#[test]
fn chart_lints_clean() -> Result<()> {
    let helm = Helm::locate()?;
    let chart = Helm::chart();
    let chart = chart.to_str().context("chart path")?;
    helm.run(&["lint", "--strict", chart])?;
    // Every optional object on at once lints too.
    helm.run(&[
        "lint",
        "--strict",
        chart,
        "--set",
        "adapter.tls.mode=certManager,monitoring.serviceMonitor.enabled=true,\
         monitoring.podMonitor.enabled=true,dashboards.enabled=true,craned.autoAdoption=true,\
         ksm.customResourceState.enabled=true",
    ])?;
    Ok(())
}

#[test]
fn default_values_render_the_whole_suite() -> Result<()> {
    let m = render(&[])?;
    for c in COMPONENTS {
        let name = format!("fc-ferrocrane-{c}");
        for kind in [
            "Deployment",
            "Service",
            "ServiceAccount",
            "PodDisruptionBudget",
        ] {
            ensure!(
                m.get(kind, &name).is_some(),
                "no {kind}/{name} in {:?}",
                m.summary()
            );
        }
    }
    ensure!(
        names(&m, "APIService") == APISERVICES.iter().map(|s| s.to_string()).collect(),
        "APIServices: {:?}",
        names(&m, "APIService")
    );
    // Optional objects are off by default (their CRDs may not exist).
    for kind in ["ServiceMonitor", "PodMonitor", "Certificate", "Issuer"] {
        ensure!(
            m.of_kind(kind).next().is_none(),
            "{kind} rendered by default"
        );
    }
    ensure!(
        !m.of_kind("ConfigMap")
            .any(|o| o["metadata"]["labels"]["grafana_dashboard"] == "1"),
        "dashboards rendered by default"
    );

    // Images, ports and hardening.
    for (c, binary) in [
        ("ksm", "ksm"),
        ("adapter", "metrics-adapter"),
        ("craned", "craned"),
    ] {
        let d = m
            .get("Deployment", &format!("fc-ferrocrane-{c}"))
            .context("deployment")?;
        let ctr = container(d);
        ensure!(
            ctr["image"] == format!("ghcr.io/ferrocrane/{binary}:0.1.0"),
            "{c} image {}",
            ctr["image"]
        );
        let sc = &ctr["securityContext"];
        ensure!(sc["readOnlyRootFilesystem"] == true, "{c}: {sc}");
        ensure!(sc["runAsNonRoot"] == true, "{c}: {sc}");
        ensure!(sc["allowPrivilegeEscalation"] == false, "{c}: {sc}");
        ensure!(strings(&sc["capabilities"]["drop"]) == ["ALL"], "{c}: {sc}");
        ensure!(
            sc["seccompProfile"]["type"] == "RuntimeDefault",
            "{c}: {sc}"
        );
        let pod_sc = &d["spec"]["template"]["spec"]["securityContext"];
        ensure!(pod_sc["runAsNonRoot"] == true, "{c}: {pod_sc}");
        for probe in ["livenessProbe", "readinessProbe"] {
            ensure!(ctr[probe]["httpGet"].is_object(), "{c} has no {probe}");
        }
        ensure!(
            ctr["resources"]["requests"].is_object(),
            "{c} has no resource requests"
        );
    }
    let ksm = args(m.get("Deployment", "fc-ferrocrane-ksm").context("ksm")?);
    ensure!(
        ksm.contains(&"--port=8080".into()) && ksm.contains(&"--telemetry-port=8081".into()),
        "{ksm:?}"
    );
    let adapter = args(
        m.get("Deployment", "fc-ferrocrane-adapter")
            .context("adapter")?,
    );
    for flag in [
        "--secure-port=6443",
        "--config=/etc/adapter/config.yaml",
        "--tls-cert-file=/var/run/serving-cert/tls.crt",
        "--tls-private-key-file=/var/run/serving-cert/tls.key",
    ] {
        ensure!(
            adapter.contains(&flag.to_string()),
            "{flag} not in {adapter:?}"
        );
    }
    ensure!(
        adapter
            .iter()
            .any(|a| a.starts_with("--prometheus-url=http")),
        "{adapter:?}"
    );
    let craned = args(
        m.get("Deployment", "fc-ferrocrane-craned")
            .context("craned")?,
    );
    for flag in [
        "--leader-elect=true",
        "--metrics-bind-address=:8080",
        "--health-probe-bind-address=:8081",
        "--recommendation-configuration-file=/etc/craned/config.yaml",
        "--oom-record-max-number=10000",
    ] {
        ensure!(
            craned.contains(&flag.to_string()),
            "{flag} not in {craned:?}"
        );
    }
    Ok(())
}

/// Every flag the chart passes is one the binary knows, with a value it accepts (a typo in a
/// template would otherwise only show as a crash-looping pod).
#[test]
fn chart_flags_are_accepted_by_the_binaries() -> Result<()> {
    use clap::Parser;
    let variants: [&[&str]; 3] = [
        &[],
        &["--set", "craned.autoAdoption=true,craned.leaderElect=false"],
        &[
            "--set",
            "ksm.collectors={pods,roles,serviceaccounts},ksm.authFilter=true",
        ],
    ];
    for extra in variants {
        let m = render(extra)?;
        let argv = |name: &str, bin: &str| -> Result<Vec<String>> {
            let d = m.get("Deployment", name).context(name.to_string())?;
            Ok(std::iter::once(bin.to_string()).chain(args(d)).collect())
        };
        let ksm = ferrocrane_ksm::Args::try_parse_from(argv("fc-ferrocrane-ksm", "ksm")?)
            .map_err(|e| anyhow::anyhow!("ksm ({extra:?}): {e}"))?;
        let ksm_options = ferrocrane_ksm::options::resolve(&ksm)
            .map_err(|e| anyhow::anyhow!("ksm ({extra:?}): {e}"))?;
        let auth_filter = extra.iter().any(|a| a.contains("authFilter=true"));
        ensure!(
            ksm_options.auth_filter == auth_filter,
            "ksm --auth-filter does not follow ksm.authFilter ({extra:?})"
        );
        let rules = serde_json::to_string(
            &m.get("ClusterRole", "fc-ferrocrane-ksm")
                .context("ksm ClusterRole")?["rules"],
        )?;
        ensure!(
            rules.contains("tokenreviews") == auth_filter
                && rules.contains("subjectaccessreviews") == auth_filter,
            "ksm RBAC for --auth-filter does not follow ksm.authFilter ({extra:?}): {rules}"
        );
        let adapter = ferrocrane_adapter::Args::try_parse_from(argv(
            "fc-ferrocrane-adapter",
            "metrics-adapter",
        )?)
        .map_err(|e| anyhow::anyhow!("metrics-adapter ({extra:?}): {e}"))?;
        adapter
            .validate()
            .map_err(|e| anyhow::anyhow!("metrics-adapter ({extra:?}): {e}"))?;
        let craned =
            ferrocrane_craned::Args::try_parse_from(argv("fc-ferrocrane-craned", "craned")?)
                .map_err(|e| anyhow::anyhow!("craned ({extra:?}): {e}"))?;
        let settings = craned
            .manager
            .resolve("craned-0")
            .map_err(|e| anyhow::anyhow!("craned ({extra:?}): {e}"))?;
        ensure!(
            settings.auto_adoption == extra.iter().any(|a| a.contains("autoAdoption=true")),
            "craned --auto-adoption does not follow craned.autoAdoption ({extra:?})"
        );
    }
    Ok(())
}

#[test]
fn apiservices_trust_the_generated_ca_and_never_skip_verification() -> Result<()> {
    let m = render(&[])?;
    let secret = m
        .get("Secret", "fc-ferrocrane-adapter-tls")
        .context("no serving-cert Secret")?;
    let ca = secret["data"]["ca.crt"].as_str().context("ca.crt")?;
    ensure!(secret["data"]["tls.key"].is_string(), "no tls.key");
    for api in m.of_kind("APIService") {
        let spec = &api["spec"];
        ensure!(
            spec["caBundle"] == ca,
            "{} caBundle differs from the Secret's CA",
            api["metadata"]["name"]
        );
        ensure!(
            spec["insecureSkipTLSVerify"].is_null(),
            "{}: {spec}",
            api["metadata"]["name"]
        );
        ensure!(
            spec["service"]["name"] == "fc-ferrocrane-adapter"
                && spec["service"]["namespace"] == "fc-system",
            "{spec}"
        );
    }
    // cert-manager mode: no helm-made key, caBundle injected by cert-manager.
    let m = render(&["--set", "adapter.tls.mode=certManager"])?;
    ensure!(m.of_kind("Secret").next().is_none(), "{:?}", m.summary());
    ensure!(
        m.get("Certificate", "fc-ferrocrane-adapter-serving")
            .is_some()
    );
    for api in m.of_kind("APIService") {
        ensure!(
            api["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
                == "fc-system/fc-ferrocrane-adapter-serving",
            "{api}"
        );
    }
    // A user Secret: its name is mounted, its CA is the caBundle.
    let m = render(&[
        "--set",
        "adapter.tls.mode=secret,adapter.tls.secretName=my-tls,adapter.tls.caBundle=PEM",
    ])?;
    ensure!(m.of_kind("Secret").next().is_none(), "{:?}", m.summary());
    for api in m.of_kind("APIService") {
        ensure!(api["spec"]["caBundle"] == "UEVN", "{api}");
    }
    let out = Helm::locate()?.output(&[
        "template",
        "fc",
        Helm::chart().to_str().context("chart")?,
        "--set",
        "adapter.tls.mode=secret",
    ])?;
    ensure!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("adapter.tls.secretName"),
        "secret mode without a secretName must fail"
    );
    Ok(())
}

#[test]
fn each_service_can_be_disabled() -> Result<()> {
    for c in COMPONENTS {
        let m = render(&["--set", &format!("{c}.enabled=false")])?;
        let left: Vec<String> = m
            .of_component(c)
            .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
            .collect();
        ensure!(left.is_empty(), "{c} disabled but rendered: {left:?}");
        for other in COMPONENTS.iter().filter(|o| **o != c) {
            ensure!(
                m.get("Deployment", &format!("fc-ferrocrane-{other}"))
                    .is_some(),
                "disabling {c} removed {other}"
            );
        }
    }
    // Without the adapter: no APIServices, no binding in kube-system, no HPA grants.
    let m = render(&["--set", "adapter.enabled=false"])?;
    ensure!(m.of_kind("APIService").next().is_none());
    ensure!(
        !m.objects
            .iter()
            .any(|o| o["metadata"]["namespace"] == "kube-system"),
        "{:?}",
        m.summary()
    );
    ensure!(
        !m.objects.iter().any(|o| o["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["name"] == "horizontal-pod-autoscaler")),
        "HPA bindings without the adapter"
    );
    // All three off renders nothing.
    let m = render(&[
        "--set",
        "ksm.enabled=false,adapter.enabled=false,craned.enabled=false",
    ])?;
    ensure!(m.objects.is_empty(), "{:?}", m.summary());
    Ok(())
}

#[test]
fn apiservices_toggle_one_by_one() -> Result<()> {
    let keys = [
        "customMetricsV1beta1",
        "customMetricsV1beta2",
        "externalMetricsV1beta1",
        "metricsV1beta1",
        "metricsV1",
    ];
    for (key, name) in keys.iter().zip(APISERVICES) {
        let m = render(&["--set", &format!("adapter.apiServices.{key}.enabled=false")])?;
        let got = names(&m, "APIService");
        ensure!(!got.contains(name) && got.len() == 4, "{key} off: {got:?}");
    }
    // With metrics.k8s.io off (metrics-server owns it) its reader roles go too.
    let m = render(&[
        "--set",
        "adapter.apiServices.metricsV1beta1.enabled=false,adapter.apiServices.metricsV1.enabled=false",
    ])?;
    ensure!(
        !m.of_kind("ClusterRole")
            .any(|r| grants(r).iter().any(|(g, _, _)| g == "metrics.k8s.io")),
        "metrics.k8s.io roles without its APIService"
    );
    // v1beta2 is preferred over v1beta1, as upstream.
    let m = render(&[])?;
    let prio = |n: &str| {
        m.get("APIService", n)
            .map(|a| a["spec"]["versionPriority"].clone())
    };
    ensure!(
        prio("v1beta2.custom.metrics.k8s.io").and_then(|v| v.as_i64())
            > prio("v1beta1.custom.metrics.k8s.io").and_then(|v| v.as_i64())
    );
    // metrics.k8s.io/v1 is preferred over v1beta1 in the aggregated discovery.
    ensure!(
        prio("v1.metrics.k8s.io").and_then(|v| v.as_i64())
            > prio("v1beta1.metrics.k8s.io").and_then(|v| v.as_i64())
    );
    Ok(())
}

#[test]
fn rbac_is_least_privilege() -> Result<()> {
    let m = render(&[])?;
    // ksm: list/watch of exactly the exported resources, nothing else.
    let ksm = grants(
        m.get("ClusterRole", "fc-ferrocrane-ksm")
            .context("ksm role")?,
    );
    ensure!(
        ksm.iter().all(|(_, _, v)| v == "list" || v == "watch"),
        "ksm verbs: {ksm:?}"
    );
    let resources: BTreeSet<&str> = ksm.iter().map(|(_, r, _)| r.as_str()).collect();
    ensure!(resources.len() == 32, "ksm resources: {resources:?}");
    ensure!(
        !resources.contains("roles") && !resources.contains("serviceaccounts"),
        "optional resources granted by default"
    );
    let ksm_args = args(m.get("Deployment", "fc-ferrocrane-ksm").context("ksm")?);
    let flag = ksm_args
        .iter()
        .find_map(|a| a.strip_prefix("--resources="))
        .context("--resources")?;
    ensure!(
        flag.split(',').collect::<BTreeSet<_>>() == resources,
        "--resources={flag} differs from RBAC"
    );
    // An optional resource enabled in values is granted (and only then).
    let m2 = render(&["--set", "ksm.collectors={pods,roles,serviceaccounts}"])?;
    let ksm2 = grants(
        m2.get("ClusterRole", "fc-ferrocrane-ksm")
            .context("ksm role")?,
    );
    let expect: BTreeSet<(String, String, String)> = [
        ("", "pods"),
        ("rbac.authorization.k8s.io", "roles"),
        ("", "serviceaccounts"),
    ]
    .into_iter()
    .flat_map(|(g, r)| ["list", "watch"].map(|v| (g.to_string(), r.to_string(), v.to_string())))
    .collect();
    ensure!(ksm2 == expect, "{ksm2:?}");

    // adapter: delegated auth, the authentication reader in kube-system, read-only on rules'
    // resources, and the HPA controller allowed to read the metrics APIs.
    let bindings: Vec<&Value> = m.of_kind("ClusterRoleBinding").collect();
    ensure!(
        bindings
            .iter()
            .any(|b| b["roleRef"]["name"] == "system:auth-delegator"
                && b["subjects"][0]["name"] == "fc-ferrocrane-adapter"),
        "no auth-delegator binding"
    );
    let reader = m
        .of_kind("RoleBinding")
        .find(|b| b["metadata"]["namespace"] == "kube-system")
        .context("no RoleBinding in kube-system")?;
    ensure!(reader["roleRef"]["name"] == "extension-apiserver-authentication-reader");
    let rr = grants(
        m.get("ClusterRole", "fc-ferrocrane-adapter-resource-reader")
            .context("adapter reader")?,
    );
    ensure!(
        rr.iter()
            .all(|(_, _, v)| ["get", "list", "watch"].contains(&v.as_str())),
        "{rr:?}"
    );
    for api in [
        "custom.metrics.k8s.io",
        "external.metrics.k8s.io",
        "metrics.k8s.io",
    ] {
        ensure!(
            bindings.iter().any(|b| {
                b["subjects"][0]["name"] == "horizontal-pod-autoscaler"
                    && b["subjects"][0]["namespace"] == "kube-system"
                    && m.get("ClusterRole", b["roleRef"]["name"].as_str().unwrap_or(""))
                        .is_some_and(|r| grants(r).iter().any(|(g, _, _)| g == api))
            }),
            "HPA controller cannot read {api}"
        );
    }
    let reader_role = m
        .get(
            "ClusterRole",
            "fc-ferrocrane-adapter-aggregated-metrics-reader",
        )
        .context("aggregated reader")?;
    ensure!(
        reader_role["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    );

    // craned: no write on workloads unless asked: annotations (StatusAndAnnotation) with
    // craned.rbac.annotateWorkloads or autoAdoption, the scale subresource only with
    // autoAdoption; never a whole-object update.
    let craned_grants = |m: &Manifest| -> Result<BTreeSet<(String, String, String)>> {
        Ok(grants(
            m.get("ClusterRole", "fc-ferrocrane-craned")
                .context("craned role")?,
        ))
    };
    let annotate = render(&["--set", "craned.rbac.annotateWorkloads=true"])?;
    let auto = render(&["--set", "craned.autoAdoption=true"])?;
    for (m, patches, scales, auto_on) in [
        (&m, false, false, false),
        (&annotate, true, false, false),
        (&auto, true, true, true),
    ] {
        let g = craned_grants(m)?;
        let writes = |r: &str| {
            g.iter()
                .any(|(gr, res, v)| gr == "apps" && res == r && v == "patch")
        };
        ensure!(
            writes("deployments") == patches && writes("daemonsets") == patches,
            "patch on workloads should be {patches}: {g:?}"
        );
        ensure!(
            writes("deployments/scale") == scales,
            "patch on deployments/scale should be {scales}"
        );
        ensure!(
            g.iter()
                .filter(|(_, _, v)| v == "update")
                .all(|(gr, _, _)| gr == "analysis.crane.io"),
            "craned updates more than its own objects: {g:?}"
        );
        let flag = format!("--auto-adoption={auto_on}");
        ensure!(
            args(
                m.get("Deployment", "fc-ferrocrane-craned")
                    .context("craned")?
            )
            .contains(&flag),
            "craned Deployment lacks {flag}"
        );
    }
    let craned = grants(
        m.get("ClusterRole", "fc-ferrocrane-craned")
            .context("craned")?,
    );
    for (g, r, v) in [
        ("analysis.crane.io", "recommendations", "create"),
        ("analysis.crane.io", "recommendations/status", "update"),
        ("analysis.crane.io", "recommendationrules", "watch"),
        ("", "pods", "watch"),
        ("", "events", "create"),
    ] {
        ensure!(
            craned.contains(&(g.into(), r.into(), v.into())),
            "craned cannot {v} {g}/{r}"
        );
    }
    let role = m
        .get("Role", "fc-ferrocrane-craned")
        .context("craned Role")?;
    let role_grants = grants(role);
    ensure!(role_grants.contains(&(
        "coordination.k8s.io".into(),
        "leases".into(),
        "update".into()
    )));
    ensure!(
        role["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| strings(&r["resourceNames"]) == ["oom-record"]),
        "oom-record not limited by name"
    );
    Ok(())
}

#[test]
fn optional_objects_render_when_enabled() -> Result<()> {
    let m = render(&[
        "--set",
        "monitoring.serviceMonitor.enabled=true,monitoring.podMonitor.enabled=true,\
         dashboards.enabled=true",
    ])?;
    ensure!(
        m.of_kind("ServiceMonitor").count() == 3,
        "{:?}",
        m.summary()
    );
    ensure!(m.of_kind("PodMonitor").count() == 3, "{:?}", m.summary());
    let dashboards: Vec<&Value> = m
        .of_kind("ConfigMap")
        .filter(|o| o["metadata"]["labels"]["grafana_dashboard"] == "1")
        .collect();
    ensure!(dashboards.len() == 3, "{:?}", m.summary());
    for d in dashboards {
        let data = d["data"].as_object().context("dashboard data")?;
        for (key, json) in data {
            let parsed: Value = serde_json::from_str(json.as_str().unwrap_or(""))
                .with_context(|| format!("{key} is not JSON"))?;
            ensure!(
                parsed["panels"].as_array().is_some_and(|p| !p.is_empty()),
                "{key} has no panels"
            );
        }
    }
    // Disabled services get no monitors or dashboards.
    let m = render(&[
        "--set",
        "monitoring.serviceMonitor.enabled=true,dashboards.enabled=true,ksm.enabled=false",
    ])?;
    ensure!(m.of_kind("ServiceMonitor").count() == 2);
    ensure!(m.of_component("ksm").next().is_none());
    Ok(())
}

#[test]
fn a_typo_in_values_fails_the_install() -> Result<()> {
    let helm = Helm::locate()?;
    let chart = Helm::chart();
    let chart = chart.to_str().context("chart")?;
    for (set, needle) in [
        ("ksm.enabeld=false", "enabeld"),
        ("adapter.tls.mod=helm", "mod"),
        ("craned.autoAdoptoin=true", "autoAdoptoin"),
        ("promethues.url=http://x", "promethues"),
        ("adapter.tls.mode=selfsigned", "mode"),
        ("ksm.collectors={pods,widgets}", "collectors"),
    ] {
        let out = helm.output(&["template", "fc", chart, "--set", set])?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        ensure!(!out.status.success(), "--set {set} was accepted");
        ensure!(
            stderr.contains(needle),
            "--set {set}: error does not name {needle}: {stderr}"
        );
    }
    Ok(())
}

#[test]
fn deploy_manifests_match_a_fresh_render() -> Result<()> {
    let helm = Helm::locate()?;
    let out = std::process::Command::new(repo_root().join("hack/render-deploy.sh"))
        .arg("--check")
        .env("HELM", &helm.bin)
        .output()?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // And they are what users get: no generated private key, no skipped TLS verification.
    let text = std::fs::read_to_string(repo_root().join("deploy/ferrocrane.yaml"))?;
    let m = Manifest::parse(&text)?;
    ensure!(m.of_kind("Secret").next().is_none(), "a key in deploy/");
    ensure!(m.of_kind("APIService").count() == APISERVICES.len());
    ensure!(!text.contains("insecureSkipTLSVerify"));
    ensure!(m.get("Namespace", "ferrocrane").is_some());
    Ok(())
}

/// `kubectl get -o json` of one object, None when it does not exist.
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
