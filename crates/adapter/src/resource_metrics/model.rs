//! The metrics.k8s.io v1beta1 objects and the pure assembly of them from query results: what
//! prometheus-adapter's `resourceprovider` and metrics-server's API storage do together, without
//! any I/O so every rule is unit-tested.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use ferrocrane_core::duration::GoDuration;
use ferrocrane_core::prometheus::InstantSample;
use ferrocrane_core::quantity::{QuantityFormat, format_milli};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::quantity::milli_of;
use crate::status::{Status, StatusDetails};

/// The `apiVersion`s served, preferred first: kubectl 1.37 reads v1 when it is listed, the HPA
/// controller still reads v1beta1. Their objects are the same, field for field.
pub const API_VERSIONS: [&str; 2] = ["metrics.k8s.io/v1", "metrics.k8s.io/v1beta1"];

/// What is known of a listed pod or node: its identity and labels (copied into the answer).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectInfo {
    /// Object name.
    pub name: String,
    /// Namespace; empty for nodes.
    pub namespace: String,
    /// The object's labels.
    pub labels: BTreeMap<String, String>,
}

/// Samples of one query keyed by the value of the object's label (pod or node name).
pub type SamplesByObject = HashMap<String, Vec<InstantSample>>;

/// The CPU and memory query results for one set of objects (one namespace of pods, or nodes).
#[derive(Debug, Clone, Default)]
pub struct QueryResults {
    /// CPU usage samples, in cores.
    pub cpu: SamplesByObject,
    /// Memory usage samples, in bytes.
    pub memory: SamplesByObject,
}

/// Groups an instant vector by `object_label`. NaN and negative values become 0, as upstream
/// does (a counter reset can make `irate` briefly negative; a NaN would not serialise).
pub fn index_samples(samples: Vec<InstantSample>, object_label: &str) -> SamplesByObject {
    let mut out: SamplesByObject = HashMap::with_capacity(samples.len());
    for mut s in samples {
        if s.sample.value.is_nan() || s.sample.value < 0.0 {
            s.sample.value = 0.0;
        }
        let key = s.labels.get(object_label).cloned().unwrap_or_default();
        out.entry(key).or_default().push(s);
    }
    out
}

/// A `ResourceList` with the two resources the API reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// CPU in cores, DecimalSI (`250m`).
    pub cpu: String,
    /// Memory in bytes, BinarySI (`64Mi`).
    pub memory: String,
}

/// The `metadata` of a NodeMetrics/PodMetrics, in Go's ObjectMeta field order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemMeta {
    /// The pod's or node's name.
    pub name: String,
    /// The pod's namespace; absent for nodes.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The time of the answer (upstream stamps `metav1.Now()`).
    pub creation_timestamp: Time,
    /// The pod's or node's labels; absent when it has none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// One container of a PodMetrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerMetrics {
    /// Container name (the value of `containerLabel`).
    pub name: String,
    /// Its usage.
    pub usage: Usage,
}

/// `PodMetrics`. `kind`/`apiVersion` are written on a single object and left out of list items,
/// as the Kubernetes API server's encoder does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMetrics {
    /// `PodMetrics` on a single object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// `metrics.k8s.io/v1` or `v1beta1` on a single object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<&'static str>,
    /// Name, namespace, labels.
    pub metadata: ItemMeta,
    /// The earliest sample time of all the pod's containers.
    pub timestamp: Time,
    /// The configured `window`, as a Go duration (`5m0s`).
    pub window: String,
    /// One entry per container, sorted by name.
    pub containers: Vec<ContainerMetrics>,
}

/// `NodeMetrics`; `kind`/`apiVersion` as for [`PodMetrics`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeMetrics {
    /// `NodeMetrics` on a single object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// `metrics.k8s.io/v1` or `v1beta1` on a single object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<&'static str>,
    /// Name and labels.
    pub metadata: ItemMeta,
    /// The earlier of the CPU and memory sample times.
    pub timestamp: Time,
    /// The configured `window`, as a Go duration.
    pub window: String,
    /// The node's usage.
    pub usage: Usage,
}

impl PodMetrics {
    /// With `kind`/`apiVersion`, for a single-object answer.
    pub fn with_type_meta(mut self, api_version: &'static str) -> Self {
        self.kind = Some("PodMetrics");
        self.api_version = Some(api_version);
        self
    }
}

impl NodeMetrics {
    /// With `kind`/`apiVersion`, for a single-object answer.
    pub fn with_type_meta(mut self, api_version: &'static str) -> Self {
        self.kind = Some("NodeMetrics");
        self.api_version = Some(api_version);
        self
    }
}

/// `PodMetricsList` / `NodeMetricsList`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsList<T> {
    /// `PodMetricsList` or `NodeMetricsList`.
    pub kind: &'static str,
    /// `metrics.k8s.io/v1` or `v1beta1`.
    pub api_version: &'static str,
    /// Empty ListMeta, written as `{}`.
    pub metadata: BTreeMap<String, String>,
    /// The items, sorted as upstream sorts them.
    pub items: Vec<T>,
}

/// A list answer of `kind` in `api_version`.
pub fn list<T>(kind: &'static str, api_version: &'static str, items: Vec<T>) -> MetricsList<T> {
    MetricsList {
        kind,
        api_version,
        metadata: BTreeMap::new(),
        items,
    }
}

/// apimachinery's `errors.NewNotFound(group-resource, name)`: `<resource>[.<group>] "<name>"
/// not found`, with the details kubectl prints from.
pub fn object_not_found(group: &str, resource: &str, name: &str) -> Status {
    let qualified = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    let mut s = Status::not_found(format!(
        "{qualified} {} not found",
        ferrocrane_core::promql::go_quote(name)
    ));
    s.details = Some(Box::new(StatusDetails {
        name: name.to_owned(),
        group: group.to_owned(),
        kind: resource.to_owned(),
        causes: Vec::new(),
    }));
    s
}

/// A `metav1.Time` from Unix milliseconds (serialised at second precision, as Go does).
pub fn time_ms(ms: i64) -> Time {
    Time(Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// What assembling needs besides the samples: the container labels, the window, and the time
/// of the answer.
#[derive(Debug, Clone)]
pub struct AssembleContext<'a> {
    /// `resourceRules.cpu.containerLabel`.
    pub cpu_container_label: &'a str,
    /// `resourceRules.memory.containerLabel`.
    pub memory_container_label: &'a str,
    /// `resourceRules.window`.
    pub window: Duration,
    /// Unix milliseconds, stamped as each item's creationTimestamp.
    pub now_ms: i64,
}

fn meta(obj: &ObjectInfo, now_ms: i64) -> ItemMeta {
    ItemMeta {
        name: obj.name.clone(),
        namespace: obj.namespace.clone(),
        creation_timestamp: time_ms(now_ms),
        labels: obj.labels.clone(),
    }
}

/// One pod's metrics, or `None` (logged by the caller) when its namespace's queries failed or
/// it has no CPU or no memory sample at all. A container with only one of the two reports 0
/// for the other, as upstream does.
pub fn pod_metrics(
    pod: &ObjectInfo,
    results: Option<&QueryResults>,
    cx: &AssembleContext<'_>,
) -> Option<PodMetrics> {
    let results = results?;
    let cpu = results.cpu.get(&pod.name)?;
    let memory = results.memory.get(&pod.name)?;
    let mut containers: BTreeMap<&str, (Option<i64>, Option<i64>)> = BTreeMap::new();
    let mut earliest = i64::MAX;
    for s in cpu {
        let name = s
            .labels
            .get(cx.cpu_container_label)
            .map_or("", String::as_str);
        containers.entry(name).or_default().0 = Some(milli_of(s.sample.value));
        earliest = earliest.min(s.sample.timestamp_ms);
    }
    for s in memory {
        let name = s
            .labels
            .get(cx.memory_container_label)
            .map_or("", String::as_str);
        containers.entry(name).or_default().1 = Some(milli_of(s.sample.value));
        earliest = earliest.min(s.sample.timestamp_ms);
    }
    Some(PodMetrics {
        kind: None,
        api_version: None,
        metadata: meta(pod, cx.now_ms),
        timestamp: time_ms(earliest),
        window: GoDuration::from_std_saturating(cx.window).to_string(),
        containers: containers
            .into_iter()
            .map(|(name, (cpu, memory))| ContainerMetrics {
                name: name.to_owned(),
                usage: Usage {
                    cpu: format_milli(cpu.unwrap_or(0), QuantityFormat::DecimalSi),
                    memory: format_milli(memory.unwrap_or(0), QuantityFormat::BinarySi),
                },
            })
            .collect(),
    })
}

/// One node's metrics from the first CPU and first memory sample of its name, or `None` when
/// either is missing.
pub fn node_metrics(
    node: &ObjectInfo,
    results: &QueryResults,
    cx: &AssembleContext<'_>,
) -> Option<NodeMetrics> {
    let cpu = results.cpu.get(&node.name)?.first()?;
    let memory = results.memory.get(&node.name)?.first()?;
    Some(NodeMetrics {
        kind: None,
        api_version: None,
        metadata: meta(node, cx.now_ms),
        timestamp: time_ms(cpu.sample.timestamp_ms.min(memory.sample.timestamp_ms)),
        window: GoDuration::from_std_saturating(cx.window).to_string(),
        usage: Usage {
            cpu: format_milli(milli_of(cpu.sample.value), QuantityFormat::DecimalSi),
            memory: format_milli(milli_of(memory.sample.value), QuantityFormat::BinarySi),
        },
    })
}

/// Metrics of every pod that has them, sorted by namespace then name. `by_namespace` holds the
/// results of each namespace whose queries succeeded.
pub fn pod_metrics_list(
    pods: &[ObjectInfo],
    by_namespace: &HashMap<String, QueryResults>,
    cx: &AssembleContext<'_>,
) -> Vec<PodMetrics> {
    let mut out: Vec<PodMetrics> = pods
        .iter()
        .filter_map(|p| {
            let m = pod_metrics(p, by_namespace.get(&p.namespace), cx);
            if m.is_none() {
                tracing::debug!(namespace = %p.namespace, pod = %p.name, "no CPU or memory metrics for pod, skipping");
            }
            m
        })
        .collect();
    out.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    out
}

/// Metrics of every node that has them, sorted by name; none at all when the node queries
/// failed (`results` is `None`), as upstream answers then.
pub fn node_metrics_list(
    nodes: &[ObjectInfo],
    results: Option<&QueryResults>,
    cx: &AssembleContext<'_>,
) -> Vec<NodeMetrics> {
    let Some(results) = results else {
        return Vec::new();
    };
    let mut out: Vec<NodeMetrics> = nodes
        .iter()
        .filter_map(|n| {
            let m = node_metrics(n, results, cx);
            if m.is_none() {
                tracing::debug!(node = %n.name, "missing CPU or memory for node, skipping");
            }
            m
        })
        .collect();
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    out
}
