//! metrics-adapter when its Prometheus fails (issue 13): with a fault proxy between the adapter
//! and the real Prometheus, every fault — Prometheus down, slow past the query timeout,
//! answering 500 or 503, an HTML page instead of JSON, a body over
//! `--prometheus-max-response-size` — is answered with upstream's 500 `InternalError` while the
//! log names the cause, discovery keeps the metrics the last good relist found, and the same
//! process serves the real value again as soon as Prometheus is back. Then SIGTERM with requests
//! in flight: each is answered, new connections are refused, and the process exits 0.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, Exporter, Fault, FaultProxy, FrontProxiedAdapter as Adapter,
    adapter_https_client, adapter_https_client_presenting, wait_until,
};
use serde_json::Value;

const METRIC: &str = "e2e_fault_queue_depth";

fn config() -> String {
    format!(
        r#"
externalRules:
- seriesQuery: '{METRIC}{{namespace!=""}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (queue)'
"#
    )
}

/// Waits until the adapter serves the exporter's value (7) for the queue `jobs`.
async fn served(adapter: &Adapter, path: &str) -> Result<()> {
    wait_until("the real value served", Duration::from_secs(30), || async {
        let (status, body) = adapter.get(path).await?;
        Ok((status == 200 && queue_value(&body).as_deref() == Some("7")).then_some(()))
    })
    .await
}

fn queue_value(body: &Value) -> Option<String> {
    body["items"].as_array()?.iter().find_map(|i| {
        (i["metricLabels"]["queue"] == "jobs").then(|| i["value"].as_str().map(str::to_owned))?
    })
}

fn discovered(body: &Value) -> bool {
    body["resources"]
        .as_array()
        .is_some_and(|r| r.iter().any(|e| e["name"].as_str() == Some(METRIC)))
}

async fn start_adapter(cluster: &Cluster, prometheus: &str) -> Result<Adapter> {
    // A fast relist, and the bounds the faults run into.
    AdapterLaunch::new(&config())
        .prometheus(prometheus)
        .relist("2s", "1h")
        .arg("--prometheus-query-timeout=2s")
        .arg("--prometheus-max-response-size=1Mi")
        .front_proxied(cluster)
        .await
}

#[tokio::test]
async fn prometheus_faults_are_answered_clearly_and_recovered_from() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("faults-adapter").await?;
    let n = ns.name.as_str();
    let exporter = Exporter::start().await?;
    exporter.set(METRIC, &[("namespace", n), ("queue", "jobs")], 7.0);
    let prometheus = cluster.prometheus()?;
    let _target = exporter.register(&prometheus, n)?;
    prometheus
        .wait_for_samples(
            &format!("{METRIC}{{namespace=\"{n}\"}}"),
            Duration::from_secs(60),
        )
        .await?;

    let proxy = FaultProxy::start(cluster.env.var("PROMETHEUS_URL")?).await?;
    let mut adapter = start_adapter(cluster, &proxy.url()).await?;
    let pid = adapter.process.pid();
    let value_path = format!("/apis/external.metrics.k8s.io/v1beta1/namespaces/{n}/{METRIC}");
    let discovery_path = "/apis/external.metrics.k8s.io/v1beta1";

    served(&adapter, &value_path)
        .await
        .with_context(|| adapter.process.logs())?;

    // What the log must name for each fault (the API answer, like upstream's, does not).
    let faults = [
        (Fault::Down, "Connection refused"),
        (Fault::Slow(Duration::from_secs(5)), "timed out"),
        (Fault::Status(500), "500"),
        (Fault::Status(503), "503"),
        (Fault::Garbage, "decod"),
        (Fault::Oversized(4 << 20), "--prometheus-max-response-size"),
    ];
    for (fault, cause) in faults {
        let log_offset = adapter.process.logs().len();
        proxy.set(fault.clone()).await?;
        let (status, body) = adapter.get(&value_path).await?;
        ensure!(
            status == 500 && body["reason"] == "InternalError",
            "{fault:?}: expected upstream's 500 InternalError, got {status} {body}"
        );
        ensure!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.contains("unable to fetch metrics")),
            "{fault:?}: {body}"
        );
        let log = adapter.lines_after(log_offset);
        ensure!(
            log.contains("unable to fetch metrics from prometheus") && log.contains(cause),
            "{fault:?}: the log does not name the cause ({cause:?}):\n{log}"
        );
        // Relists fail as well (every 2 s); discovery keeps what the last good one found.
        wait_until("a failed relist", Duration::from_secs(30), || {
            let failed = adapter
                .lines_after(log_offset)
                .contains("series query failed");
            async move { Ok(failed.then_some(())) }
        })
        .await
        .with_context(|| format!("{fault:?}: a failed relist is not logged"))?;
        let (status, list) = adapter.get(discovery_path).await?;
        ensure!(
            status == 200 && discovered(&list),
            "{fault:?}: discovery lost the metric while Prometheus failed: {status} {list}"
        );
        ensure!(
            adapter
                .lines_after(log_offset)
                .contains("series query failed"),
            "{fault:?}: a failed relist is not logged:\n{}",
            adapter.lines_after(log_offset)
        );
        proxy.set(Fault::None).await?;
        served(&adapter, &value_path)
            .await
            .with_context(|| format!("after {fault:?}:\n{}", adapter.process.logs()))?;
        adapter.process.ensure_running()?;
        ensure!(adapter.process.pid() == pid, "the adapter was restarted");
        eprintln!("{fault:?}: 500 InternalError, log names {cause:?}, discovery kept, recovered");
    }

    // X-Remote-* headers claiming cluster-admin authenticate nobody without the front proxy's
    // verified certificate: not without a certificate (anonymous: refused), and not with a
    // self-signed one carrying the proxy's name (the handshake or the request is refused).
    let ca = std::fs::read_to_string(cluster.env.path("AGGREGATED_SERVING_CA")?)?;
    let (forged_chain, forged_key) = ferrocrane_core::server::generate_self_signed(
        "front-proxy-client",
        &[],
        &["front-proxy-client".to_owned()],
    )?;
    let forged_leaf = forged_chain
        .split_inclusive("-----END CERTIFICATE-----\n")
        .next()
        .context("generated chain is empty")?
        .to_owned();
    for (who, client) in [
        ("no certificate", adapter_https_client(cluster, &ca, false)?),
        (
            "a forged front-proxy certificate",
            adapter_https_client_presenting(&ca, &forged_leaf, &forged_key)?,
        ),
    ] {
        let answer = client
            .get(format!("{}{value_path}", adapter.base))
            .header("X-Remote-User", "system:admin")
            .header("X-Remote-Group", "system:masters")
            .send()
            .await;
        match answer {
            Ok(resp) => ensure!(
                matches!(resp.status().as_u16(), 401 | 403),
                "{who} with X-Remote-* headers was answered {}",
                resp.status()
            ),
            Err(e) => ensure!(
                e.is_connect() || e.is_request(),
                "{who}: unexpected failure {e:?}"
            ),
        }
    }

    // SIGTERM with requests in flight (Prometheus answering after 1.5 s, within the 2 s query
    // timeout; SIGTERM after 0.5 s): every one is
    // answered with the value, a new connection is refused, and the process exits 0.
    proxy.set(Fault::Slow(Duration::from_millis(1500))).await?;
    let in_flight: Vec<_> = (0..4)
        .map(|_| {
            let http = adapter.http.clone();
            let url = format!("{}{value_path}", adapter.base);
            tokio::spawn(async move {
                let resp = http
                    .get(&url)
                    .header("X-Remote-User", "ferrocrane-faults")
                    .header("X-Remote-Group", "system:masters")
                    .timeout(Duration::from_secs(30))
                    .send()
                    .await?;
                let status = resp.status().as_u16();
                let body: Value = serde_json::from_slice(&resp.bytes().await?)?;
                anyhow::Ok((status, queue_value(&body)))
            })
        })
        .collect();
    // SIGTERM once all four are held at Prometheus, i.e. in flight in the adapter.
    wait_until("four queries in flight", Duration::from_secs(30), || {
        let n = proxy.queries_in_flight();
        async move { Ok((n >= 4).then_some(())) }
    })
    .await?;
    adapter.process.signal("TERM")?;
    // The listener closes as the drain starts: wait for a fresh connection to be refused.
    wait_until("the listener closed", Duration::from_secs(10), || {
        let url = format!("{}/readyz", adapter.base);
        async move {
            let refused = reqwest::Client::builder()
                .danger_accept_invalid_certs(true)
                .timeout(Duration::from_secs(2))
                .build()?
                .get(url)
                .send()
                .await
                .is_err_and(|e| e.is_connect());
            Ok(refused.then_some(()))
        }
    })
    .await?;
    let fresh = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(5))
        .build()?
        .get(format!("{}/readyz", adapter.base))
        .send()
        .await;
    ensure!(
        fresh.as_ref().is_err_and(reqwest::Error::is_connect),
        "a new connection after SIGTERM was not refused: {fresh:?}"
    );
    for request in in_flight {
        let (status, value) = request.await??;
        ensure!(
            status == 200 && value.as_deref() == Some("7"),
            "an in-flight request was not answered during the drain: {status} {value:?}"
        );
    }
    let exit = adapter.process.wait_exit(Duration::from_secs(30)).await?;
    if !exit.success() {
        bail!("exit after SIGTERM: {exit}\n{}", adapter.process.logs());
    }
    Ok(())
}
