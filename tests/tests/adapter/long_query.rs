//! A `pods/*` request over a thousand pods (issue 15, prometheus-adapter #668): the adapter
//! names every selected pod in its query (`pod=~"a|b|…"`), tens of KiB of selector, and
//! proxies in front of Prometheus refuse such URLs (414). With a fault proxy that refuses
//! request targets over 16 KiB between the adapter and the real Prometheus, ours as shipped
//! sends the long query as POST and answers all thousand values; forced to GET (a
//! `--prometheus-max-get-length` above the query's length, what upstream always does) the same
//! request fails, and the proxy counted the refusals — so the first answer is the POST's doing.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{AdapterLaunch, Cluster, Exporter, Fault, FaultProxy, wait_until};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;

const METRIC: &str = "e2e_long_query_load";
const PODS: usize = 1000;
/// What nginx and many gateways allow for a request line, give or take.
const PROXY_URI_LIMIT: usize = 16 * 1024;

fn config() -> String {
    format!(
        r#"
rules:
- seriesQuery: '{METRIC}{{namespace!="",pod!=""}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
"#
    )
}

/// Names as a ReplicaSet gives them, long enough that a thousand make ~30 KiB of selector.
fn pod_name(i: usize) -> String {
    format!("checkout-frontend-7d9f8c6b5-{i:05}")
}

#[tokio::test]
async fn a_thousand_pod_query_goes_as_post_past_a_uri_limit() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("adapter-long-query").await?;
    let n = ns.name.as_str();
    let client = cluster.client().await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);

    let exporter = Exporter::start().await?;
    for i in 0..PODS {
        exporter.set(METRIC, &[("namespace", n), ("pod", &pod_name(i))], i as f64);
    }
    // 16 creators at a time, each taking every 16th pod.
    let mut creators = tokio::task::JoinSet::new();
    for first in 0..16 {
        let pods = pods.clone();
        creators.spawn(async move {
            for i in (first..PODS).step_by(16) {
                let pod: Pod = serde_json::from_value(json!({
                    "metadata": {"name": pod_name(i), "labels": {"app": "checkout"}},
                    // Never scheduled: a pod object is all a `*` request needs.
                    "spec": {"nodeName": "ferrocrane-no-such-node",
                             "containers": [{"name": "c", "image": "registry.invalid/none"}]}
                }))?;
                pods.create(&PostParams::default(), &pod).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(created) = creators.join_next().await {
        created??;
    }
    let prometheus = cluster.prometheus()?;
    let _target = exporter.register(&prometheus, n)?;
    wait_until(
        "Prometheus has every pod's series",
        Duration::from_secs(60),
        || async {
            let count = prometheus
                .query(&format!("count({METRIC}{{namespace=\"{n}\"}})"))
                .await?;
            Ok((count.first().map(|s| s.value) == Some(PODS as f64)).then_some(()))
        },
    )
    .await?;

    let proxy = FaultProxy::start(cluster.env.var("PROMETHEUS_URL")?).await?;
    proxy.set(Fault::UriLimit(PROXY_URI_LIMIT)).await?;
    let launch = || {
        AdapterLaunch::new(&config())
            .prometheus(&proxy.url())
            .relist("2s", "1h")
    };
    let shipped = launch().front_proxied(cluster).await?;
    let always_get = launch()
        .arg("--prometheus-max-get-length=1000000")
        .front_proxied(cluster)
        .await?;

    let path = format!(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{n}/pods/*/{METRIC}?labelSelector=app%3Dcheckout"
    );
    let answer = wait_until(
        "every pod's value through the adapter",
        Duration::from_secs(60),
        || async {
            let (status, body) = shipped.get(&path).await?;
            let items = body["items"].as_array().map_or(0, Vec::len);
            Ok((status == 200 && items == PODS).then_some(body))
        },
    )
    .await
    .with_context(|| format!("adapter log:\n{}", shipped.process.logs()))?;
    for item in answer["items"].as_array().context("items")? {
        let name = item["describedObject"]["name"].as_str().context("name")?;
        let i: usize = name.rsplit('-').next().context("index")?.parse()?;
        ensure!(
            item["value"] == json!(i.to_string()),
            "{name}: {item}, expected the value {i}"
        );
    }
    let refused_by_then = proxy.refused_uris();
    ensure!(
        refused_by_then == 0,
        "the shipped adapter sent {refused_by_then} request(s) the proxy refused for length"
    );
    eprintln!(
        "{PODS} pods: {PODS} values through a proxy that refuses URIs over {PROXY_URI_LIMIT} bytes"
    );

    // The same request as GET: the proxy's 414, the adapter's 500 naming it.
    let (status, body) = wait_until(
        "the always-GET adapter to discover the metric",
        Duration::from_secs(60),
        || async {
            let (status, body) = always_get.get(&path).await?;
            Ok((status != 404).then_some((status, body)))
        },
    )
    .await?;
    ensure!(
        status == 500,
        "a {status} from the always-GET adapter, expected the proxy's refusal as a 500: {body}"
    );
    ensure!(
        proxy.refused_uris() > 0,
        "the proxy refused nothing: the GET was not over {PROXY_URI_LIMIT} bytes"
    );
    let log = always_get.process.logs();
    ensure!(log.contains("414"), "the log does not name the 414:\n{log}");
    Ok(())
}
