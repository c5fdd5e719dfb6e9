//! The chart's RBAC: each service gets exactly what it uses, nothing cluster-wide it does not.

use std::collections::BTreeSet;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::Manifest;
use serde_json::Value;

use crate::rendered::*;

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
