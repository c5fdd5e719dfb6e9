//! metrics-adapter beside the Go prometheus-adapter v0.12.0: the same flags, the same config
//! and the same Prometheus (history backfilled for objects that exist in the cluster, every
//! instant query answered at one pinned time), each request sent to both directly the way the
//! aggregator sends it (front-proxy client certificate, X-Remote-User/Group). Status codes and
//! JSON bodies are compared (timestamps dropped, lists sorted). A difference fails the test
//! unless docs/migration-prometheus-adapter.md lists it (see [`DOCUMENTED`]).
//!
//! Run over several configs: one exercising every rule kind, upstream's documented sample
//! config, and one whose metricsQuery uses Go template `range`/`if`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::{
    Cluster, HistoryPrometheus, PinnedPrometheus, ServiceProcess, adapter_https_client,
    create_bare_node, free_port, front_proxied_adapter_args, patch_pod_status, repo_root,
    running_status,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const MIGRATION_GUIDE: &str = "docs/migration-prometheus-adapter.md";

/// A difference the migration guide documents: requests whose label contains `request` (is
/// `request` without its `$`, when it ends in one)
/// (and, when set, configs named `config`) may differ as `allowed` says; `doc` is a phrase
/// of the guide's entry.
struct Documented {
    request: &'static str,
    config: Option<&'static str>,
    allowed: Allowed,
    doc: &'static str,
}

enum Allowed {
    /// Only these JSON keys (anywhere in the body) may differ; the status and the rest not.
    Keys(&'static [&'static str]),
    /// The whole answer may differ.
    Answer,
}

const SELECTOR_WORDING: &str = "Label selectors our own parser rejects are explained in our words";

const DOCUMENTED: &[Documented] = &[
    Documented {
        request: "/apis$",
        config: None,
        allowed: Allowed::Keys(&["versions", "preferredVersion"]),
        doc: "The adapter's own discovery documents list every version it serves",
    },
    Documented {
        request: "/apis/custom.metrics.k8s.io$",
        config: None,
        allowed: Allowed::Keys(&["versions", "preferredVersion"]),
        doc: "The adapter's own discovery documents list every version it serves",
    },
    Documented {
        request: "/apis/metrics.k8s.io$",
        config: None,
        allowed: Allowed::Keys(&["versions", "preferredVersion"]),
        doc: "The adapter's own discovery documents list every version it serves",
    },
    Documented {
        request: "/openapi/v",
        config: None,
        allowed: Allowed::Answer,
        doc: "`/openapi/v2` is an empty document",
    },
    // Any path outside the served groups (metrics.k8s.io too, without resourceRules).
    Documented {
        request: "",
        config: None,
        allowed: Allowed::Keys(&["paths"]),
        doc: "a 404 outside the APIs lists the paths this server serves",
    },
    Documented {
        request: "pods/*/http_requests_per_second?labelSelector=app%3D%3D%3D",
        config: Some("upstream-sample-runnable"),
        allowed: Allowed::Answer,
        doc: "a malformed `labelSelector` on a metric the adapter does not have is a 404",
    },
    Documented {
        request: "metricLabelSelector=code%3D%3D%3D",
        config: None,
        allowed: Allowed::Answer,
        doc: "An unparsable `metricLabelSelector` is a 400 BadRequest",
    },
    Documented {
        request: "/po/*/",
        config: None,
        allowed: Allowed::Answer,
        doc: "A `*` request for a resource the cluster does not serve is a 404",
    },
    Documented {
        request: "/widgets/*/",
        config: None,
        allowed: Allowed::Answer,
        doc: "A `*` request for a resource the cluster does not serve is a 404",
    },
    Documented {
        request: "labelSelector=queue%3D%3D%3D",
        config: None,
        allowed: Allowed::Keys(&["message"]),
        doc: SELECTOR_WORDING,
    },
    Documented {
        request: "/pods?labelSelector=app%3D%3D%3D",
        config: None,
        allowed: Allowed::Keys(&["message"]),
        doc: SELECTOR_WORDING,
    },
    Documented {
        request: "startup",
        config: Some("upstream-sample-corrected"),
        allowed: Allowed::Answer,
        doc: "An override naming a resource the cluster does not serve is accepted",
    },
    Documented {
        request: "startup",
        config: Some("range-if"),
        allowed: Allowed::Answer,
        doc: "Go template actions other than field lookups",
    },
];

/// Whether `go` and `ours` differ only as `allowed` permits.
fn only_allowed(go: &Answer, ours: &Answer, allowed: &Allowed) -> bool {
    match allowed {
        Allowed::Answer => true,
        Allowed::Keys(keys) => {
            let strip = |a: &Answer| -> Option<(u16, String, Value)> {
                let mut v: Value = serde_json::from_str(&a.body).ok()?;
                drop_keys(&mut v, keys);
                Some((a.status, a.media_type.clone(), v))
            };
            matches!((strip(go), strip(ours)), (Some(g), Some(o)) if g == o)
        }
    }
}

fn drop_keys(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(map) => {
            for k in keys {
                map.remove(*k);
            }
            map.values_mut().for_each(|x| drop_keys(x, keys));
        }
        Value::Array(items) => items.iter_mut().for_each(|x| drop_keys(x, keys)),
        _ => {}
    }
}

fn documented<'a>(
    label: &'a str,
    config: &'a str,
) -> impl Iterator<Item = &'static Documented> + 'a {
    DOCUMENTED.iter().filter(move |d| {
        let names = match d.request.strip_suffix('$') {
            Some(exact) => label == exact,
            None => label.contains(d.request),
        };
        names && d.config.is_none_or(|c| c == config)
    })
}

/// One request: a label for reports, the path with its query, and the Accept header.
struct Request {
    label: String,
    path: String,
    accept: Option<&'static str>,
}

fn get(path: impl Into<String>) -> Request {
    let path = path.into();
    Request {
        label: path.clone(),
        path,
        accept: None,
    }
}

fn get_as(path: impl Into<String>, accept: &'static str) -> Request {
    let path = path.into();
    Request {
        label: format!("{path} (Accept: {accept})"),
        path,
        accept: Some(accept),
    }
}

/// What an adapter answered: the status, the media type, and the body (JSON normalised).
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    status: u16,
    media_type: String,
    body: String,
}

/// The objects and names a run uses.
struct World {
    ns: String,
    other_ns: String,
    nodes: [String; 2],
}

/// The Go original or ours, started with the same arguments.
struct Side {
    name: &'static str,
    process: ServiceProcess,
    base: String,
}

/// Drops the keys that carry the time of the answer, recursively.
fn drop_times(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("timestamp");
            map.remove("creationTimestamp");
            for x in map.values_mut() {
                drop_times(x);
            }
        }
        Value::Array(items) => {
            for x in items.iter_mut() {
                drop_times(x);
            }
            // Lists of objects are sets here; lists of strings (table cells, paths) keep order.
            if items.iter().all(Value::is_object) {
                items.sort_by_cached_key(|x| x.to_string());
            }
        }
        _ => {}
    }
}

fn normalise(body: &[u8], media_type: &str) -> String {
    if media_type.contains("json")
        && let Ok(mut v) = serde_json::from_slice::<Value>(body)
    {
        drop_times(&mut v);
        return serde_json::to_string_pretty(&v).unwrap_or_default();
    }
    String::from_utf8_lossy(body).into_owned()
}

async fn ask(client: &reqwest::Client, base: &str, request: &Request) -> Result<Answer> {
    let mut builder = client
        .get(format!("{base}{}", request.path))
        .header("X-Remote-User", "ferrocrane-differential")
        .header("X-Remote-Group", "system:masters");
    if let Some(accept) = request.accept {
        builder = builder.header("Accept", accept);
    }
    let response = builder
        .send()
        .await
        .with_context(|| format!("GET {}", request.path))?;
    let status = response.status().as_u16();
    let media_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    let body = response.bytes().await?;
    // Each side names its own port in `/apis` (serverAddressByClientCIDRs).
    let port = base.rsplit(':').next().unwrap_or_default();
    Ok(Answer {
        status,
        body: normalise(&body, &media_type).replace(&format!("\":{port}\""), "\":PORT\""),
        media_type,
    })
}

/// The series in Prometheus, for objects of `world`; values chosen so every rule has
/// something to find. Counters rise at the given rate per second.
fn history(world: &World, end: i64) -> String {
    let (ns, other) = (world.ns.as_str(), world.other_ns.as_str());
    let [node_a, node_b] = &world.nodes;
    // (metric, labels, value at `end`, rate per second)
    let mut series: Vec<(&str, String, f64, f64)> = Vec::new();
    let mut add = |metric: &'static str, labels: String, value: f64, rate: f64| {
        series.push((metric, labels, value, rate))
    };
    for (n, pod, code, rate) in [
        (ns, "web-0", "200", 2.0),
        (ns, "web-0", "500", 0.5),
        (ns, "web-1", "200", 1.0),
        (ns, "db-0", "200", 4.0),
        (other, "other-0", "200", 3.0),
    ] {
        add(
            "http_requests_total",
            format!(r#"namespace="{n}",pod="{pod}",code="{code}""#),
            1e4,
            rate,
        );
    }
    for (n, pod, container, cpu, mem) in [
        (ns, "web-0", "app", 0.25, 64.0),
        (ns, "web-0", "sidecar", 0.05, 16.0),
        (ns, "web-1", "app", 1.2, 200.0),
        (ns, "db-0", "db", 0.5, 1024.5),
        (other, "other-0", "app", 0.001, 1.0),
    ] {
        let labels = format!(r#"namespace="{n}",pod="{pod}",container="{container}""#);
        add(
            "container_cpu_usage_seconds_total",
            labels.clone(),
            1e3,
            cpu,
        );
        add(
            "container_memory_working_set_bytes",
            labels,
            mem * 1024.0 * 1024.0,
            0.0,
        );
    }
    // cAdvisor's pod-level series.
    add(
        "container_memory_working_set_bytes",
        format!(r#"namespace="{ns}",pod="web-0",container="""#),
        999.0 * 1024.0 * 1024.0,
        0.0,
    );
    for (node, cpu, mem, temp) in [(node_a, 1.5, 2048.0, 55.5), (node_b, 0.1, 512.0, 61.0)] {
        add(
            "node_cpu_usage_seconds_total",
            format!(r#"node="{node}""#),
            5e4,
            cpu,
        );
        add(
            "node_memory_working_set_bytes",
            format!(r#"node="{node}""#),
            mem * 1024.0 * 1024.0,
            0.0,
        );
        add(
            "node_temperature_celsius",
            format!(r#"node="{node}""#),
            temp,
            0.0,
        );
    }
    for (service, v) in [("web", 12.0), ("db", 0.25)] {
        add(
            "queue_length",
            format!(r#"namespace="{ns}",service="{service}""#),
            v,
            0.0,
        );
    }
    for (n, v) in [(ns, 0.75), (other, 1.5)] {
        add(
            "namespace_budget_ratio",
            format!(r#"namespace="{n}""#),
            v,
            0.0,
        );
    }
    add(
        "deployment_queue_seconds",
        format!(r#"namespace="{ns}",deployment="web""#),
        3.0,
        0.0,
    );
    for (n, queue, topic, v) in [
        (ns, "orders", "t1", 100.0),
        (ns, "billing", "t2", 7.0),
        (other, "orders", "t1", 5.0),
    ] {
        add(
            "queue_messages_ready",
            format!(r#"namespace="{n}",queue="{queue}",topic="{topic}""#),
            v,
            0.0,
        );
    }
    for (team, v) in [("a", 42.0), ("b", 1e9)] {
        add("cluster_backlog", format!(r#"team="{team}""#), v, 0.0);
    }
    // Upstream's sample config names these.
    add(
        "queue_consumer_lag",
        format!(r#"name="orders",namespace="{ns}""#),
        17.0,
        0.0,
    );
    add(
        "queue_depth",
        format!(r#"name="orders",topic="t1",namespace="{ns}""#),
        9.0,
        0.0,
    );

    let mut om = String::new();
    let mut by_metric: BTreeMap<&str, Vec<(String, f64, f64)>> = BTreeMap::new();
    for (m, l, v, r) in series {
        by_metric.entry(m).or_default().push((l, v, r));
    }
    let step = 15;
    let span = 30 * 60;
    for (metric, rows) in by_metric {
        let counter = metric.ends_with("_total");
        let family = metric.strip_suffix("_total").unwrap_or(metric);
        let _ = writeln!(
            om,
            "# TYPE {family} {}",
            if counter { "counter" } else { "gauge" }
        );
        for (labels, value, rate) in rows {
            for t in (end - span..=end).step_by(step) {
                let v = value - rate * (end - t) as f64;
                let _ = writeln!(om, "{metric}{{{labels}}} {v} {t}");
            }
        }
    }
    om.push_str("# EOF\n");
    om
}

/// The config exercising every rule kind.
fn main_config() -> &'static str {
    r#"rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'queue_length{namespace!="",service!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      service: {resource: service}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'namespace_budget_ratio{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'node_temperature_celsius{node!=""}'
  resources:
    overrides:
      node: {resource: node}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'deployment_queue_seconds{namespace!="",deployment!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      deployment: {group: apps, resource: deployment}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{namespace!="",queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue, topic)'
- seriesQuery: 'cluster_backlog{team!=""}'
  resources:
    namespaced: false
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (team)'
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!="",pod!=""}[2m]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[2m]))'
    resources:
      overrides:
        namespace: {resource: namespace}
        node: {resource: node}
        pod: {resource: pod}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,container!="",pod!=""})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>})'
    resources:
      overrides:
        namespace: {resource: namespace}
        node: {resource: node}
        pod: {resource: pod}
    containerLabel: container
  window: 2m
"#
}

/// The rules of upstream's docs/sample-config.yaml (its comments left out), quirks included:
/// trailing commas after flow mappings and the misspelt `metricQuery` key.
fn upstream_sample_config() -> &'static str {
    r#"rules:
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: "namespace"},
      pod: {resource: "pod"},
  name:
    matches: "^container_(.*)_seconds_total$"
  metricsQuery: "sum(rate(<<.Series>>{<<.LabelMatchers>>,container!=\"POD\"}[2m])) by (<<.GroupBy>>)"
- seriesQuery: '{__name__=~"^container_.*_total",container!="POD",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: "namespace"},
      pod: {resource: "pod"},
  seriesFilters:
  - isNot: "^container_.*_seconds_total$"
  name: {matches: "^container_(.*)_total$"}
  metricsQuery: "sum(rate(<<.Series>>{<<.LabelMatchers>>,container!=\"POD\"}[2m])) by (<<.GroupBy>>)"
- seriesQuery: '{namespace!="",__name__!="^container_.*"}'
  name: {matches: "^(.*)_total$"}
  resources:
    template: "<<.Resource>>"
  metricsQuery: "sum(rate(<<.Series>>{<<.LabelMatchers>>,container!=\"POD\"}[2m])) by (<<.GroupBy>>)"
- seriesQuery: 'cheddar{sharp="true"}'
  name: {as: "cheesy_goodness"}
  resources:
    overrides:
      brand: {group: "cheese.io", resource: "brand"}
  metricQuery: 'count(cheddar{sharp="true"})'
externalRules:
- seriesQuery: '{__name__="queue_consumer_lag",name!=""}'
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (name)
- seriesQuery: '{__name__="queue_depth",topic!=""}'
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (name)
  resources:
    namespaced: false
"#
}

/// The sample config's rule for a resource of a made-up group.
const CHEDDAR_RULE: &str = r#"- seriesQuery: 'cheddar{sharp="true"}'
  name: {as: "cheesy_goodness"}
  resources:
    overrides:
      brand: {group: "cheese.io", resource: "brand"}
  metricQuery: 'count(cheddar{sharp="true"})'
"#;

/// A metricsQuery built with Go template `range` and `if`.
fn range_if_config() -> &'static str {
    r#"rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<if .LabelMatchers>><<.LabelMatchers>><<end>>}[2m])) by (<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>><<$l>><<end>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{namespace!="",queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<range .GroupBySlice>><<.>>,<<end>>queue)'
"#
}

/// The requests sent to both, for `world`.
fn requests(world: &World) -> Vec<Request> {
    let ns = &world.ns;
    let other = &world.other_ns;
    let [node_a, _] = &world.nodes;
    let cm = "/apis/custom.metrics.k8s.io";
    let em = "/apis/external.metrics.k8s.io/v1beta1";
    let rm = "/apis/metrics.k8s.io/v1beta1";
    let mut r = vec![
        get("/apis"),
        get("/apis/custom.metrics.k8s.io"),
        get("/apis/external.metrics.k8s.io"),
        get("/apis/metrics.k8s.io"),
        get(format!("{cm}/v1beta1")),
        get(format!("{cm}/v1beta2")),
        get(em),
        get(rm),
        get("/openapi/v2"),
        get("/openapi/v3"),
        get("/no/such/route"),
        get("/apis/custom.metrics.k8s.io/v1beta3"),
    ];
    for v in ["v1beta1", "v1beta2"] {
        let base = format!("{cm}/{v}/namespaces/{ns}");
        let pods = format!("{base}/pods/*/http_requests_per_second");
        r.extend([
            get(format!("{base}/pods/web-0/http_requests_per_second")),
            get(pods.clone()),
            get(format!("{pods}?labelSelector=app%3Dweb")),
            get(format!("{pods}?labelSelector=app%21%3Dweb")),
            get(format!("{pods}?labelSelector=app+in+%28web%2Cdb%29")),
            get(format!("{pods}?labelSelector=app+notin+%28web%29")),
            get(format!("{pods}?labelSelector=tier")),
            get(format!("{pods}?labelSelector=%21tier")),
            get(format!("{pods}?labelSelector=app%3Dweb%2Ctier%3Dfront")),
            get(format!("{pods}?labelSelector=rank%3E1")),
            get(format!("{pods}?labelSelector=app%3D%3D%3D")),
            get(format!("{pods}?metricLabelSelector=code%3D200")),
            get(format!("{pods}?metricLabelSelector=code+in+%28500%29")),
            get(format!("{pods}?metricLabelSelector=code%3D%3D%3D")),
            get(format!("{pods}?fieldSelector=metadata.name%3Dweb-0")),
            get(format!(
                "{base}/pods/web-0/http_requests_per_second?fieldSelector=metadata.name%3Dweb-1"
            )),
            get(format!(
                "{base}/pods/web-0/http_requests_per_second?metricLabelSelector=code%3D500"
            )),
            get(format!("{base}/po/web-0/http_requests_per_second")),
            get(format!("{base}/po/*/http_requests_per_second")),
            get(format!("{base}/pod/web-0/http_requests_per_second")),
            get(format!("{base}/Pods/*/http_requests_per_second")),
            get(format!("{base}/pods/web-0")),
            get(format!("{base}/pods/missing/http_requests_per_second")),
            get(format!("{base}/pods/web-0/no_such_metric")),
            get(format!("{base}/pods/*/no_such_metric")),
            get(format!("{base}/widgets/x/http_requests_per_second")),
            get(format!("{base}/widgets/*/http_requests_per_second")),
            get(format!("{base}/services/web/queue_length")),
            get(format!("{base}/services/*/queue_length")),
            get(format!("{base}/metrics/namespace_budget_ratio")),
            get(format!("{base}/metrics/no_such_metric")),
            get(format!(
                "{base}/deployments.apps/web/deployment_queue_seconds"
            )),
            get(format!(
                "{base}/deployments.apps/*/deployment_queue_seconds"
            )),
            get(format!("{base}/deployments/web/deployment_queue_seconds")),
            get(format!(
                "{cm}/{v}/namespaces/{other}/pods/*/http_requests_per_second"
            )),
            get(format!("{cm}/{v}/nodes/{node_a}/node_temperature_celsius")),
            get(format!("{cm}/{v}/nodes/*/node_temperature_celsius")),
            get(format!(
                "{cm}/{v}/nodes/*/node_temperature_celsius?labelSelector=ferrocrane.io%2Fe2e%3D{ns}"
            )),
            get(format!("{cm}/{v}/nodes/missing/node_temperature_celsius")),
            get(format!("{cm}/{v}/pods/*/http_requests_per_second")),
            // Upstream's sample config names these.
            get(format!("{base}/pods/*/cpu_usage")),
            get(format!("{base}/pods/*/http_requests")),
            get(format!("{base}/metrics/http_requests")),
        ]);
    }
    for (n, metric, query) in [
        (ns, "queue_messages_ready", ""),
        (ns, "queue_messages_ready", "?labelSelector=queue%3Dorders"),
        (
            ns,
            "queue_messages_ready",
            "?labelSelector=queue+in+%28orders%2Cbilling%29",
        ),
        (
            ns,
            "queue_messages_ready",
            "?labelSelector=queue%21%3Dorders",
        ),
        (ns, "queue_messages_ready", "?labelSelector=queue%3D%3D%3D"),
        (other, "queue_messages_ready", ""),
        (ns, "cluster_backlog", ""),
        (ns, "cluster_backlog", "?labelSelector=team%3Da"),
        (ns, "no_such_metric", ""),
        (ns, "queue_consumer_lag", ""),
        (ns, "queue_depth", ""),
        (other, "queue_depth", ""),
    ] {
        r.push(get(format!("{em}/namespaces/{n}/{metric}{query}")));
    }
    r.push(get(format!("{em}/queue_messages_ready")));
    let e2e_nodes = format!("labelSelector=ferrocrane.io%2Fe2e%3D{ns}");
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    r.extend([
        get(format!("{rm}/nodes?{e2e_nodes}")),
        get(format!("{rm}/nodes/{node_a}")),
        get(format!("{rm}/nodes/missing")),
        get(format!("{rm}/nodes?labelSelector=rank%3E1")),
        get(format!("{rm}/namespaces/{ns}/pods")),
        get(format!("{rm}/namespaces/{ns}/pods/web-0")),
        get(format!("{rm}/namespaces/{ns}/pods/idle-0")),
        get(format!("{rm}/namespaces/{ns}/pods/missing")),
        get(format!("{rm}/namespaces/{ns}/pods?labelSelector=app%3Dweb")),
        get(format!(
            "{rm}/namespaces/{ns}/pods?labelSelector=app+in+%28web%2Cdb%29"
        )),
        get(format!("{rm}/namespaces/{ns}/pods?labelSelector=rank%3E1")),
        get(format!("{rm}/namespaces/{ns}/pods?labelSelector=rank%3C2")),
        get(format!(
            "{rm}/namespaces/{ns}/pods?labelSelector=app%3D%3D%3D"
        )),
        get(format!(
            "{rm}/namespaces/{ns}/pods?fieldSelector=metadata.name%3Dweb-1"
        )),
        get(format!(
            "{rm}/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3Dx"
        )),
        get(format!("{rm}/namespaces/{other}/pods")),
        get(format!("{rm}/namespaces/{ns}/po")),
        get(format!("{rm}/namespaces/{ns}/widgets")),
        get_as(format!("{rm}/namespaces/{ns}/pods"), table),
        get_as(format!("{rm}/nodes?{e2e_nodes}"), table),
    ]);
    r
}

/// Creates the objects the history names: pods (Running, labelled), a pod without series,
/// services, a Deployment and two nodes.
async fn create_world(cluster: &Cluster, ns: &str, other_ns: &str) -> Result<World> {
    let client = cluster.client().await?;
    let started = "2024-01-01T00:00:00Z";
    for (n, name, labels, containers) in [
        (
            ns,
            "web-0",
            json!({"app": "web", "tier": "front", "rank": "1"}),
            vec!["app", "sidecar"],
        ),
        (
            ns,
            "web-1",
            json!({"app": "web", "tier": "back", "rank": "2"}),
            vec!["app"],
        ),
        (ns, "db-0", json!({"app": "db", "rank": "3"}), vec!["db"]),
        (ns, "idle-0", json!({"app": "idle"}), vec!["app"]),
        (other_ns, "other-0", json!({"app": "web"}), vec!["app"]),
    ] {
        let pods: Api<Pod> = Api::namespaced(client.clone(), n);
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": containers.iter().map(|c| json!({"name": c, "image": "registry.invalid/none:1"})).collect::<Vec<_>>()}
        }))?;
        pods.create(&PostParams::default(), &pod).await?;
        patch_pod_status(&pods, name, running_status(&containers, started)).await?;
    }
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    for name in ["web", "db"] {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"ports": [{"port": 80}], "selector": {"app": name}}
        }))?;
        services.create(&PostParams::default(), &svc).await?;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web-deployment"}},
            "template": {
                "metadata": {"labels": {"app": "web-deployment"}},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/none:1"}]}
            }
        }
    }))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await?;
    let nodes_api: Api<Node> = Api::all(client.clone());
    let nodes = [format!("{ns}-node-a"), format!("{ns}-node-b")];
    for (n, rank) in nodes.iter().zip(["1", "2"]) {
        create_bare_node(
            &nodes_api,
            n,
            json!({"ferrocrane.io/e2e": ns, "rank": rank}),
        )
        .await?;
    }
    Ok(World {
        ns: ns.to_owned(),
        other_ns: other_ns.to_owned(),
        nodes,
    })
}

/// Waits until `side` answers discovery with a non-empty, settled resource list (two
/// relists agree), or fails with its log.
async fn wait_settled(client: &reqwest::Client, side: &mut Side) -> Result<()> {
    let discovery = [
        get("/apis/custom.metrics.k8s.io/v1beta1"),
        get("/apis/external.metrics.k8s.io/v1beta1"),
    ];
    let mut last: Option<Vec<Answer>> = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        side.process
            .ensure_running()
            .with_context(|| format!("{} exited", side.name))?;
        let mut now = Vec::new();
        for r in &discovery {
            match ask(client, &side.base, r).await {
                Ok(a) if a.status == 200 => now.push(a),
                _ => break,
            }
        }
        if now.len() == discovery.len() {
            if last.as_ref() == Some(&now) {
                return Ok(());
            }
            last = Some(now);
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "{} did not settle in 120 s; log:\n{}",
                side.name,
                side.process.logs()
            );
        }
        tokio::time::sleep(Duration::from_secs(6)).await;
    }
}

/// Compares both adapters under `config`; returns (requests compared, undocumented
/// differences as printable reports).
async fn compare_config(
    cluster: &Cluster,
    world: &World,
    prometheus: &str,
    name: &str,
    config: &str,
) -> Result<(usize, Vec<String>, usize)> {
    let dir = std::env::temp_dir().join(format!("ferrocrane-adapter-diff-{}-{name}", world.ns));
    std::fs::create_dir_all(&dir)?;
    let config_file = dir.join("config.yaml");
    std::fs::write(&config_file, config)?;
    let config_path = config_file.display().to_string();
    let ca = std::fs::read_to_string(cluster.env.path("AGGREGATED_SERVING_CA")?)?;
    let client = adapter_https_client(cluster, &ca, true)?;
    let mut sides = Vec::new();
    for (side, bin) in [
        (
            "prometheus-adapter",
            cluster.original("prometheus-adapter")?,
        ),
        (
            "metrics-adapter",
            ferrocrane_e2e::binary("metrics-adapter")?,
        ),
    ] {
        let port = free_port()?;
        let mut args = front_proxied_adapter_args(cluster, port, prometheus, &config_path)?;
        args.extend([
            "--metrics-relist-interval=5s".into(),
            "--metrics-max-age=2h".into(),
        ]);
        let process = ServiceProcess::start_program(side, &bin, &args, &[])?;
        sides.push(Side {
            name: side,
            process,
            base: format!("https://127.0.0.1:{port}"),
        });
    }
    let mut compared = 1;
    let mut undocumented = Vec::new();
    let go_started = wait_settled(&client, &mut sides[0]).await;
    let ours_started = wait_settled(&client, &mut sides[1]).await;
    match (go_started, ours_started) {
        (Ok(()), Ok(())) => {}
        (Err(go), Err(ours)) => {
            println!(
                "config {name}: both refuse it\n  prometheus-adapter: {go:#}\n  metrics-adapter: {ours:#}"
            );
            return Ok((compared, undocumented, 0));
        }
        (go, ours) => {
            if documented("startup", name).any(|d| d.request == "startup") {
                println!("config {name}: documented startup difference");
                return Ok((compared, undocumented, 1));
            }
            undocumented.push(format!(
                "[{name}] startup: prometheus-adapter {}; metrics-adapter {}",
                go.map_or_else(
                    |e| format!("refuses the config: {e:#}"),
                    |()| "accepts the config".into()
                ),
                ours.map_or_else(
                    |e| format!("refuses the config: {e:#}"),
                    |()| "accepts the config".into()
                ),
            ));
            return Ok((compared, undocumented, 0));
        }
    }
    let mut documented_count = 0;
    for request in requests(world) {
        let go = ask(&client, &sides[0].base, &request).await?;
        let ours = ask(&client, &sides[1].base, &request).await?;
        compared += 1;
        if go == ours {
            continue;
        }
        if documented_difference(&request.label, name, &go, &ours) {
            documented_count += 1;
            continue;
        }
        undocumented.push(format!(
            "[{name}] GET {}\n  prometheus-adapter: {} {}\n{}\n  metrics-adapter: {} {}\n{}",
            request.label,
            go.status,
            go.media_type,
            indent(&go.body),
            ours.status,
            ours.media_type,
            indent(&ours.body)
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((compared, undocumented, documented_count))
}

fn documented_difference(label: &str, config: &str, go: &Answer, ours: &Answer) -> bool {
    documented(label, config).any(|d| only_allowed(go, ours, &d.allowed))
}

fn indent(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let shown: Vec<String> = lines.iter().take(400).map(|l| format!("    {l}")).collect();
    let more = if lines.len() > 400 {
        format!("\n    ... {} more lines", lines.len() - 400)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join("\n"))
}

#[tokio::test]
async fn metrics_adapter_answers_like_prometheus_adapter() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("adapter-diff").await?;
    let other = cluster.namespace("adapter-diff-other").await?;
    let world = create_world(cluster, &ns.name, &other.name).await?;
    let _nodes = NodeGuard {
        kubectl: cluster.kubectl_handle()?,
        names: world.nodes.clone(),
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end = now - now % 15 - 15;
    let history = HistoryPrometheus::start(&history(&world, end)).await?;
    let pinned = PinnedPrometheus::start(&history.handle.url, end).await?;

    let guide = std::fs::read_to_string(repo_root().join(MIGRATION_GUIDE))?;
    for d in DOCUMENTED {
        if !guide.contains(d.doc) {
            bail!("{MIGRATION_GUIDE} does not contain {:?}", d.doc);
        }
    }

    let mut total = 0;
    let mut total_documented = 0;
    let mut undocumented = Vec::new();
    for (name, config) in [
        ("main", main_config()),
        ("upstream-sample", upstream_sample_config()),
        (
            "upstream-sample-parsable",
            &upstream_sample_config().replace("\"},\n", "\"}\n"),
        ),
        (
            "upstream-sample-corrected",
            &upstream_sample_config()
                .replace("\"},\n", "\"}\n")
                .replace("metricQuery:", "metricsQuery:"),
        ),
        // Without the rule for `brand.cheese.io`, which no cluster serves.
        (
            "upstream-sample-runnable",
            &upstream_sample_config()
                .replace("\"},\n", "\"}\n")
                .replace(CHEDDAR_RULE, ""),
        ),
        ("range-if", range_if_config()),
    ] {
        let (compared, diffs, documented) =
            compare_config(cluster, &world, &pinned.url, name, config)
                .await
                .with_context(|| format!("config {name}"))?;
        println!(
            "config {name}: {compared} requests compared, {} differing ({documented} documented)",
            diffs.len() + documented
        );
        total += compared;
        total_documented += documented;
        undocumented.extend(diffs);
    }
    println!(
        "adapter differential: {total} requests compared, {} differing, {} undocumented",
        undocumented.len() + total_documented,
        undocumented.len()
    );
    if !undocumented.is_empty() {
        bail!(
            "{} undocumented differences from prometheus-adapter v0.12.0 (fix them or list them in {MIGRATION_GUIDE}):\n\n{}",
            undocumented.len(),
            undocumented.join("\n\n")
        );
    }
    Ok(())
}

/// Deletes the test's nodes when dropped (nodes are not namespaced).
struct NodeGuard {
    kubectl: ferrocrane_e2e::Kubectl,
    names: [String; 2],
}

impl Drop for NodeGuard {
    fn drop(&mut self) {
        self.kubectl
            .delete_without_waiting(&["node", &self.names[0], &self.names[1]]);
    }
}
