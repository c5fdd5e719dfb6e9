//! The chart rendered by `helm template` (only the helm binary needed): the whole suite by
//! default, every toggle, flags each binary accepts, APIServices that verify their CA, and
//! the plain manifests in deploy/ that must match a fresh render.

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{Helm, Manifest, repo_root};
use serde_json::Value;

use crate::rendered::*;

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
