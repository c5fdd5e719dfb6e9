//! The adapter's object cache (issue 15): custom-metrics `pods/*` requests answered from a
//! metadata-only watch instead of a LIST per request. Two adapters on the same cluster and
//! Prometheus, ours as shipped and ours with `--object-cache=false` (upstream's LIST per
//! request), must give the same answers for every selector, before and after pods are
//! created, relabelled and deleted; the cached one must send the API server no pod LIST per
//! request (counted by kube-apiserver's own `apiserver_request_total`), the other one per
//! request; a selector only the API server can judge gets the API server's own 400 from both.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{AdapterLaunch, Cluster, Exporter, FrontProxiedAdapter, wait_until};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const METRIC: &str = "e2e_cache_load";

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

/// Selectors an HPA (or a person) may send, each answered by both adapters.
const SELECTORS: [&str; 7] = [
    "app=web",
    "app!=web",
    "app in (web,db)",
    "app notin (web)",
    "rank>1",
    "tier",
    "",
];

async fn create_pod(pods: &Api<Pod>, name: &str, labels: Value) -> Result<()> {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        // Never scheduled (no such node): a pod object is all a `*` request needs.
        "spec": {"nodeName": "ferrocrane-no-such-node",
                 "containers": [{"name": "c", "image": "registry.invalid/none"}]}
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    Ok(())
}

/// `pods/*` for `selector`: status and the (pod, value) pairs in answer order.
async fn pods_answer(
    adapter: &FrontProxiedAdapter,
    ns: &str,
    selector: &str,
) -> Result<(u16, Value)> {
    let path = format!(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/pods/*/{METRIC}?labelSelector={}",
        urlencode(selector)
    );
    let (status, body) = adapter.get(&path).await?;
    if status != 200 {
        return Ok((status, body));
    }
    let items = body["items"]
        .as_array()
        .context("no items")?
        .iter()
        .map(|i| json!([i["describedObject"]["name"], i["value"]]))
        .collect();
    Ok((status, Value::Array(items)))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every selector answered the same by both adapters; the answers, for the caller to check.
async fn same_answers(
    cached: &FrontProxiedAdapter,
    listing: &FrontProxiedAdapter,
    ns: &str,
) -> Result<Vec<(u16, Value)>> {
    let mut answers = Vec::new();
    for selector in SELECTORS {
        let ours = pods_answer(cached, ns, selector).await?;
        let listed = pods_answer(listing, ns, selector).await?;
        ensure!(
            ours == listed,
            "{selector:?}: cached {ours:?} but listed {listed:?}"
        );
        answers.push(ours);
    }
    Ok(answers)
}

/// Waits until both adapters agree and `check` holds for the cached answers (a watch event
/// takes a moment to arrive; a LIST sees the change at once).
async fn agree_when(
    what: &str,
    cached: &FrontProxiedAdapter,
    listing: &FrontProxiedAdapter,
    ns: &str,
    check: impl Fn(&[(u16, Value)]) -> bool,
) -> Result<()> {
    wait_until(what, Duration::from_secs(30), || async {
        Ok(same_answers(cached, listing, ns)
            .await
            .ok()
            .filter(|a| check(a))
            .map(|_| ()))
    })
    .await?;
    // Once settled, a disagreement is an error, not a wait.
    same_answers(cached, listing, ns).await.map(|_| ())
}

fn names(answer: &(u16, Value)) -> Vec<String> {
    answer
        .1
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| pair[0].as_str().map(str::to_owned))
        .collect()
}

/// kube-apiserver's count of namespace-scoped pod LISTs served so far.
async fn namespaced_pod_lists(client: &kube::Client) -> Result<f64> {
    let text = client
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?;
    Ok(text
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains("resource=\"pods\"")
                && l.contains("scope=\"namespace\"")
                && l.contains("subresource=\"\"")
                && l.contains("verb=\"LIST\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Sends `n` `pods/*` requests; the pod LISTs the API server served meanwhile.
async fn lists_during(
    client: &kube::Client,
    adapter: &FrontProxiedAdapter,
    ns: &str,
    n: usize,
) -> Result<f64> {
    let before = namespaced_pod_lists(client).await?;
    for _ in 0..n {
        let (status, _) = pods_answer(adapter, ns, "app=web").await?;
        ensure!(status == 200, "pods/* answered {status}");
    }
    Ok(namespaced_pod_lists(client).await? - before)
}

#[tokio::test]
async fn pods_star_requests_are_answered_from_the_watch_as_a_list_would() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("adapter-object-cache").await?;
    let n = ns.name.as_str();
    let client = cluster.client().await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);

    let exporter = Exporter::start().await?;
    let initial = [
        ("web-0", json!({"app": "web", "rank": "1"})),
        ("web-1", json!({"app": "web", "rank": "2", "tier": "front"})),
        ("web-2", json!({"app": "web", "rank": "3"})),
        ("db-0", json!({"app": "db", "rank": "5", "tier": "back"})),
        ("lone", json!({})),
    ];
    for (i, (pod, labels)) in initial.iter().enumerate() {
        create_pod(&pods, pod, labels.clone()).await?;
        exporter.set(METRIC, &[("namespace", n), ("pod", pod)], i as f64 + 1.0);
    }
    // Series for pods that come later: values exist before their objects do.
    exporter.set(METRIC, &[("namespace", n), ("pod", "web-3")], 10.0);
    let prometheus = cluster.prometheus()?;
    let _target = exporter.register(&prometheus, n)?;
    prometheus
        .wait_for_samples(
            &format!("{METRIC}{{namespace=\"{n}\",pod=\"web-3\"}}"),
            Duration::from_secs(60),
        )
        .await?;

    let cached = AdapterLaunch::new(&config())
        .relist("2s", "1h")
        .front_proxied(cluster)
        .await?;
    let listing = AdapterLaunch::new(&config())
        .relist("2s", "1h")
        .arg("--object-cache=false")
        .front_proxied(cluster)
        .await?;
    let logs = || {
        format!(
            "cached adapter log:\n{}\nlisting adapter log:\n{}",
            cached.process.logs(),
            listing.process.logs()
        )
    };

    agree_when("both adapters serve every pod", &cached, &listing, n, |a| {
        names(&a[6]) == ["db-0", "lone", "web-0", "web-1", "web-2"]
    })
    .await
    .with_context(logs)?;
    wait_until(
        "the cached adapter's watch synced",
        Duration::from_secs(30),
        || async {
            Ok(cached
                .process
                .logs()
                .contains("object cache synced")
                .then_some(()))
        },
    )
    .await
    .with_context(logs)?;
    let answers = same_answers(&cached, &listing, n)
        .await
        .with_context(logs)?;
    let expected: [&[&str]; 7] = [
        &["web-0", "web-1", "web-2"],
        &["db-0", "lone"],
        &["db-0", "web-0", "web-1", "web-2"],
        &["db-0", "lone"],
        &["db-0", "web-1", "web-2"],
        &["db-0", "web-1"],
        &["db-0", "lone", "web-0", "web-1", "web-2"],
    ];
    for ((selector, answer), want) in SELECTORS.iter().zip(&answers).zip(expected) {
        ensure!(
            answer.0 == 200 && names(answer) == want,
            "{selector:?}: {answer:?}, expected {want:?}"
        );
    }
    eprintln!("{} selectors: cached == listed", SELECTORS.len());

    // Changes reach the cache: a new pod, a relabelled one, a deleted one.
    create_pod(&pods, "web-3", json!({"app": "web", "rank": "4"})).await?;
    agree_when("the new pod is served", &cached, &listing, n, |a| {
        names(&a[0]) == ["web-0", "web-1", "web-2", "web-3"]
    })
    .await
    .with_context(logs)?;
    pods.patch(
        "web-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})),
    )
    .await?;
    agree_when("the relabelled pod moves", &cached, &listing, n, |a| {
        names(&a[0]) == ["web-1", "web-2", "web-3"]
    })
    .await
    .with_context(logs)?;
    pods.delete("web-1", &DeleteParams::default().grace_period(0))
        .await?;
    agree_when("the deleted pod is gone", &cached, &listing, n, |a| {
        names(&a[0]) == ["web-2", "web-3"]
    })
    .await
    .with_context(logs)?;
    eprintln!("create, relabel, delete: cached == listed");

    // A selector only the API server judges: its own 400, from both.
    let bad = pods_answer(&cached, n, "app in (web").await?;
    ensure!(
        bad.0 == 400 && bad == pods_answer(&listing, n, "app in (web").await?,
        "unparsable selector: {bad:?}"
    );

    // The point of it: no LIST per request.
    const REQUESTS: usize = 40;
    let listed = lists_during(&client, &listing, n, REQUESTS).await?;
    let cached_lists = lists_during(&client, &cached, n, REQUESTS).await?;
    eprintln!(
        "pod LISTs served by the API server for {REQUESTS} pods/* requests: \
         --object-cache=false {listed}, cached {cached_lists}"
    );
    ensure!(
        listed >= REQUESTS as f64,
        "the listing adapter should LIST per request: {listed} LISTs for {REQUESTS} requests"
    );
    ensure!(
        cached_lists < 2.0,
        "the cached adapter sent {cached_lists} pod LISTs for {REQUESTS} requests"
    );
    Ok(())
}
