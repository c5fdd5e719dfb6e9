//! `--auth-filter` against the real control plane: `/metrics` of both listeners answers a
//! ServiceAccount token the API server authenticates and RBAC allows (`get` on the
//! non-resource URL `/metrics`), 401 without a token or with a bogus one, 403 for a
//! ServiceAccount without the grant; health paths stay open.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use ferrocrane_e2e::ksm::start_ksm;
use ferrocrane_e2e::{Cluster, http_client, wait_until};

/// Deletes the test's cluster-scoped RBAC objects.
struct ClusterRbacGuard {
    kubectl: std::process::Command,
}

impl Drop for ClusterRbacGuard {
    fn drop(&mut self) {
        let _ = self
            .kubectl
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn kubectl_out(cluster: &Cluster, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut cmd = cluster.kubectl()?;
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    if let Some(text) = stdin {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .context("kubectl stdin")?
            .write_all(text.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[tokio::test]
async fn metrics_need_an_allowed_service_account_token() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-auth").await?;
    let n = &ns.name;
    let role = format!("ksm-e2e-metrics-reader-{n}");
    let mut delete = cluster.kubectl()?;
    delete.args([
        "delete",
        "clusterrole,clusterrolebinding",
        &role,
        "--ignore-not-found",
        "--wait=false",
    ]);
    let _rbac = ClusterRbacGuard { kubectl: delete };
    kubectl_out(
        cluster,
        &["apply", "-f", "-"],
        Some(&format!(
            "apiVersion: v1
kind: ServiceAccount
metadata: {{name: scraper, namespace: {n}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: stranger, namespace: {n}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {role}}}
rules:
  - nonResourceURLs: [/metrics]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {role}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}
subjects:
  - {{kind: ServiceAccount, name: scraper, namespace: {n}}}
"
        )),
    )?;
    let token = |sa: &str| kubectl_out(cluster, &["create", "token", sa, "-n", n], None);
    let (scraper, stranger) = (token("scraper")?, token("stranger")?);

    // Readiness is not behind the filter, so the helper's wait works.
    let mut ksm = start_ksm(
        cluster,
        &["--resources=namespaces".into(), "--auth-filter".into()],
    )
    .await?;

    let http = http_client()?;
    let get = |url: String, token: Option<String>| {
        let http = http.clone();
        async move {
            let mut req = http.get(url);
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let res = req.send().await?;
            let status = res.status().as_u16();
            Ok::<_, anyhow::Error>((status, res.text().await?))
        }
    };
    let metrics = format!("http://{}/metrics", ksm.metrics);
    let telemetry = format!("http://{}/metrics", ksm.telemetry);

    let want = format!("kube_namespace_created{{namespace=\"{n}\"}}");
    wait_until(
        "metrics for the allowed token",
        Duration::from_secs(30),
        || {
            let (get, url, token, want) = (&get, metrics.clone(), scraper.clone(), want.clone());
            async move {
                let (status, body) = get(url, Some(token)).await?;
                Ok((status == 200 && body.contains(&want)).then_some(()))
            }
        },
    )
    .await
    .with_context(|| ksm.process.logs())?;
    let (status, body) = get(telemetry.clone(), Some(scraper.clone())).await?;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("kube_state_metrics_total_shards"), "{body}");

    for url in [&metrics, &telemetry] {
        assert_eq!(
            get(url.clone(), None).await?,
            (401, "Unauthorized\n".to_string()),
            "{url} without a token"
        );
        assert_eq!(
            get(url.clone(), Some("not-a-token".into())).await?.0,
            401,
            "{url} with a bogus token"
        );
        let (status, body) = get(url.clone(), Some(stranger.clone())).await?;
        assert_eq!(
            status, 403,
            "{url} for a ServiceAccount without the grant: {body}"
        );
        assert!(
            body.contains(&format!("system:serviceaccount:{n}:stranger")),
            "{body}"
        );
    }
    let (status, _) = get(format!("http://{}/healthz", ksm.metrics), None).await?;
    assert_eq!(status, 200);
    ksm.process.ensure_running()?;
    Ok(())
}
