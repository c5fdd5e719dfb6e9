//! Usage history from Prometheus, batched per workload.
//!
//! Crane issues one range query per container and resource
//! (`irate(container_cpu_usage_seconds_total{namespace,pod=~"^<workload>-...",container="c"}[3m])`)
//! plus workload-level sums for Replicas and HPA; at 20,000 containers that is tens of thousands
//! of queries per round (Crane #898). Here one query per workload and resource, grouped
//! `by (container, pod)`, returns every series the Resource, Replicas and HPA recommenders need:
//! per-container series directly, workload totals by summing them per timestamp. The selectors
//! and the pod-name regexes are Crane's (`pkg/utils/expression_prom_default.go`), so the same
//! Prometheus answers both.
//!
//! The query builders and the aggregation are pure; [`History`] does the I/O: a per-round
//! concurrency cap, range splitting by max points (core's client), and retries with backoff on
//! transient errors.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrocrane_core::prometheus::{PrometheusClient, PrometheusError, RangeSeries};
use ferrocrane_core::promql::{label_eq, label_matches, label_neq, label_not_matches};
use tokio::sync::Semaphore;

use crate::prediction::Sample;

/// The `irate` window Crane uses for CPU.
pub const CPU_RATE_WINDOW: &str = "3m";

/// Crane's `GetPodNameReg`: the regex that matches a workload's pod names.
pub fn pod_name_regex(workload: &str, kind: &str) -> String {
    let suffix = match kind {
        "DaemonSet" => "[a-z0-9]{5}$",
        "ReplicaSet" => "[a-z0-9]+$",
        "Deployment" => "[a-z0-9]+-[a-z0-9]{5}$",
        "StatefulSet" => "[0-9]+$",
        _ => ".*",
    };
    format!("^{}-{suffix}", regex_escape(workload))
}

/// Object names are DNS labels/subdomains; only `.` is special in a regex among their
/// characters, but escape everything non-alphanumeric to be safe with odd kinds.
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !(c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn container_selector(namespace: &str, pod_regex: &str) -> String {
    [
        label_neq("container", "POD"),
        label_neq("container", ""),
        label_eq("namespace", namespace),
        label_matches("pod", pod_regex),
    ]
    .join(",")
}

/// CPU cores of every container of every pod of the workload.
pub fn workload_cpu_query(namespace: &str, workload: &str, kind: &str) -> String {
    format!(
        "sum by (container, pod) (irate(container_cpu_usage_seconds_total{{{}}}[{CPU_RATE_WINDOW}]))",
        container_selector(namespace, &pod_name_regex(workload, kind))
    )
}

/// Working-set bytes of every container of every pod of the workload.
pub fn workload_memory_query(namespace: &str, workload: &str, kind: &str) -> String {
    format!(
        "sum by (container, pod) (container_memory_working_set_bytes{{{}}})",
        container_selector(namespace, &pod_name_regex(workload, kind))
    )
}

/// Crane's filter on nodes: every node but virtual (`eklet`) ones, as a `* on (node)` factor.
fn real_nodes() -> String {
    format!(
        "on (node) group_left() max(kube_node_labels{{{},{}}}) by (node)",
        label_not_matches("label_beta_kubernetes_io_instance_type", "eklet"),
        label_not_matches("label_node_kubernetes_io_instance_type", "eklet"),
    )
}

/// `kube_node_status_capacity` of one resource of a node, the denominator of every ratio.
fn node_capacity(node: &str, resource: &str, unit: &str) -> String {
    format!(
        "sum(kube_node_status_capacity{{{},{},{}}} * {}) by (node)",
        label_eq("node", node),
        label_eq("resource", resource),
        label_eq("unit", unit),
        real_nodes()
    )
}

/// The four node utilization ratios the IdleNode recommender checks, with Crane's expressions
/// (usage from cAdvisor keyed by `instance`, requests and capacity from kube-state-metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeUtilization {
    CpuUsage,
    MemoryUsage,
    CpuRequest,
    MemoryRequest,
}

impl NodeUtilization {
    pub fn query(self, node: &str) -> String {
        let usage = |expr: String| {
            format!(
                "sum(label_replace({expr}, \"node\", \"$1\", \"instance\", \"(^[^:]+)\") * {}) by (node)",
                real_nodes()
            )
        };
        let requests = |resource: &str, unit: &str, extra: &str| {
            format!(
                "sum(kube_pod_container_resource_requests{{{},{},{}{extra}}} * {}) by (node)",
                label_eq("node", node),
                label_eq("resource", resource),
                label_eq("unit", unit),
                real_nodes()
            )
        };
        let cadvisor = [
            label_eq("instance", node),
            label_neq("container", "POD"),
            label_neq("container", ""),
            label_neq("image", ""),
        ]
        .join(",");
        match self {
            NodeUtilization::CpuUsage => format!(
                "{} / {}",
                usage(format!(
                    "irate(container_cpu_usage_seconds_total{{{cadvisor}}}[1h])"
                )),
                node_capacity(node, "cpu", "core")
            ),
            NodeUtilization::MemoryUsage => format!(
                "{} / {}",
                usage(format!(
                    "container_memory_usage_bytes{{{cadvisor},{}}}",
                    label_neq("namespace", "")
                )),
                node_capacity(node, "memory", "byte")
            ),
            NodeUtilization::CpuRequest => format!(
                "{} / {}",
                requests("cpu", "core", ""),
                node_capacity(node, "cpu", "core")
            ),
            NodeUtilization::MemoryRequest => format!(
                "{} / {}",
                requests(
                    "memory",
                    "byte",
                    &format!(",{}", label_neq("namespace", ""))
                ),
                node_capacity(node, "memory", "byte")
            ),
        }
    }
}

/// Network bytes per second, received or transmitted, summed over a set of pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetDirection {
    Receive,
    Transmit,
}

/// Crane's Service traffic expression over the named pods. Crane matches pods by a regex made
/// from the Service's name; here the regex lists the pods the Service selects, so a Service
/// named unlike its pods is still measured.
pub fn pods_net_query(direction: NetDirection, namespace: &str, pods: &[&str]) -> String {
    let metric = match direction {
        NetDirection::Receive => "container_network_receive_bytes_total",
        NetDirection::Transmit => "container_network_transmit_bytes_total",
    };
    let names: Vec<String> = pods.iter().map(|p| regex_escape(p)).collect();
    format!(
        "sum(rate({metric}{{{},{},{}}}[{CPU_RATE_WINDOW}]))",
        label_eq("namespace", namespace),
        label_matches("pod", &format!("^({})$", names.join("|"))),
        label_neq("container", ""),
    )
}

/// One resource's history of one workload: container → one series per pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerSeries {
    pub containers: BTreeMap<String, Vec<Vec<Sample>>>,
}

impl ContainerSeries {
    /// Groups `sum by (container, pod)` results; series without a container label are dropped.
    pub fn from_range(series: Vec<RangeSeries>) -> Self {
        let mut containers: BTreeMap<String, Vec<Vec<Sample>>> = BTreeMap::new();
        for s in series {
            let Some(container) = s.labels.get("container").filter(|c| !c.is_empty()) else {
                continue;
            };
            let samples: Vec<Sample> = s
                .samples
                .iter()
                .filter(|p| p.value.is_finite())
                .map(|p| Sample::new(p.timestamp_ms.div_euclid(1000), p.value))
                .collect();
            if !samples.is_empty() {
                containers
                    .entry(container.clone())
                    .or_default()
                    .push(samples);
            }
        }
        ContainerSeries { containers }
    }

    /// A container's per-pod series as the recommenders take them.
    pub fn per_pod(&self, container: &str) -> Vec<&[Sample]> {
        self.containers
            .get(container)
            .map(|v| v.iter().map(Vec::as_slice).collect())
            .unwrap_or_default()
    }

    /// Every container of every pod summed per timestamp: the workload total (what Crane's
    /// `sum(...)` workload expressions return).
    pub fn total(&self) -> Vec<Sample> {
        let mut sums: BTreeMap<i64, f64> = BTreeMap::new();
        for s in self.containers.values().flatten().flatten() {
            *sums.entry(s.timestamp).or_default() += s.value;
        }
        sums.into_iter().map(|(t, v)| Sample::new(t, v)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.containers.is_empty()
    }
}

/// Range series summed per timestamp, non-finite values dropped.
pub fn summed(series: &[RangeSeries]) -> Vec<Sample> {
    let mut sums: BTreeMap<i64, f64> = BTreeMap::new();
    for p in series.iter().flat_map(|s| &s.samples) {
        if p.value.is_finite() {
            *sums.entry(p.timestamp_ms.div_euclid(1000)).or_default() += p.value;
        }
    }
    sums.into_iter().map(|(t, v)| Sample::new(t, v)).collect()
}

/// CPU and memory history of one workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadHistory {
    pub cpu: ContainerSeries,
    pub memory: ContainerSeries,
}

/// Why history could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DataSourceError {
    #[error("prometheus: {source} (after {attempts} attempts)")]
    Prometheus {
        #[source]
        source: PrometheusError,
        attempts: u32,
    },
}

impl DataSourceError {
    pub fn is_transient(&self) -> bool {
        match self {
            DataSourceError::Prometheus { source, .. } => source.is_transient(),
        }
    }
}

/// Retry policy for transient Prometheus errors.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

/// The backoff before attempt `n` (1-based retries): doubling, capped.
pub fn backoff(retry: &Retry, n: u32) -> Duration {
    let factor = 1u32 << n.saturating_sub(1).min(16);
    retry
        .initial_backoff
        .saturating_mul(factor)
        .min(retry.max_backoff)
}

/// Reads history from Prometheus.
#[derive(Clone)]
pub struct History {
    client: PrometheusClient,
    /// Workloads fetched at once; each fetch issues two queries (CPU, memory).
    limit: Arc<Semaphore>,
    retry: Retry,
    queries: Arc<std::sync::atomic::AtomicU64>,
}

impl History {
    pub fn new(client: PrometheusClient, concurrency: usize, retry: Retry) -> Self {
        History {
            client,
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
            retry,
            queries: Arc::default(),
        }
    }

    /// Range queries issued so far (each before any chunk split).
    pub fn queries_issued(&self) -> u64 {
        self.queries.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// One range query with retries on transient errors.
    pub async fn range(
        &self,
        promql: &str,
        start: SystemTime,
        end: SystemTime,
        step: Duration,
    ) -> Result<Vec<RangeSeries>, DataSourceError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.queries
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self.client.query_range(promql, start, end, step).await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_transient() && attempt < self.retry.attempts => {
                    let wait = backoff(&self.retry, attempt);
                    tracing::warn!(error = %e, attempt, ?wait, "prometheus query failed, retrying");
                    tokio::time::sleep(wait).await;
                }
                Err(source) => {
                    return Err(DataSourceError::Prometheus {
                        source,
                        attempts: attempt,
                    });
                }
            }
        }
    }

    /// One expression over `history` up to `now`, every `step`, as a single series: what
    /// comes back is summed per timestamp (the expressions aggregate to one series already;
    /// a second one, e.g. from a duplicated scrape job, is not silently dropped).
    pub async fn series(
        &self,
        promql: &str,
        now: SystemTime,
        history: Duration,
        step: Duration,
    ) -> Result<Vec<Sample>, DataSourceError> {
        let _permit = self.limit.acquire().await.ok();
        let start = now.checked_sub(history).unwrap_or(UNIX_EPOCH);
        let series = self.range(promql, start, now, step).await?;
        Ok(summed(&series))
    }

    /// CPU and memory of a workload over `history` up to `now`, every `step`.
    pub async fn workload(
        &self,
        namespace: &str,
        name: &str,
        kind: &str,
        now: SystemTime,
        history: Duration,
        step: Duration,
    ) -> Result<WorkloadHistory, DataSourceError> {
        // The semaphore is never closed, so acquire cannot fail.
        let _permit = self.limit.acquire().await.ok();
        let start = now.checked_sub(history).unwrap_or(UNIX_EPOCH);
        let cpu_q = workload_cpu_query(namespace, name, kind);
        let mem_q = workload_memory_query(namespace, name, kind);
        let (cpu, memory) = tokio::try_join!(
            self.range(&cpu_q, start, now, step),
            self.range(&mem_q, start, now, step)
        )?;
        Ok(WorkloadHistory {
            cpu: ContainerSeries::from_range(cpu),
            memory: ContainerSeries::from_range(memory),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::prometheus::Sample as PSample;

    #[test]
    fn queries_use_cranes_selectors_grouped_by_container_and_pod() {
        assert_eq!(
            workload_cpu_query("prod", "web", "Deployment"),
            r#"sum by (container, pod) (irate(container_cpu_usage_seconds_total{container!="POD",container!="",namespace="prod",pod=~"^web-[a-z0-9]+-[a-z0-9]{5}$"}[3m]))"#
        );
        assert_eq!(
            workload_memory_query("prod", "db", "StatefulSet"),
            r#"sum by (container, pod) (container_memory_working_set_bytes{container!="POD",container!="",namespace="prod",pod=~"^db-[0-9]+$"})"#
        );
        assert_eq!(pod_name_regex("a.b", "DaemonSet"), r"^a\.b-[a-z0-9]{5}$");
        assert_eq!(pod_name_regex("x", "Rollout"), "^x-.*");
    }

    #[test]
    fn node_and_service_queries_follow_crane() {
        let eklet = r#"on (node) group_left() max(kube_node_labels{label_beta_kubernetes_io_instance_type!~"eklet",label_node_kubernetes_io_instance_type!~"eklet"}) by (node)"#;
        let cap = |r: &str, u: &str| {
            format!(
                r#"sum(kube_node_status_capacity{{node="n1",resource="{r}",unit="{u}"}} * {eklet}) by (node)"#
            )
        };
        assert_eq!(
            NodeUtilization::CpuUsage.query("n1"),
            format!(
                r#"sum(label_replace(irate(container_cpu_usage_seconds_total{{instance="n1",container!="POD",container!="",image!=""}}[1h]), "node", "$1", "instance", "(^[^:]+)") * {eklet}) by (node) / {}"#,
                cap("cpu", "core")
            )
        );
        assert_eq!(
            NodeUtilization::MemoryUsage.query("n1"),
            format!(
                r#"sum(label_replace(container_memory_usage_bytes{{instance="n1",container!="POD",container!="",image!="",namespace!=""}}, "node", "$1", "instance", "(^[^:]+)") * {eklet}) by (node) / {}"#,
                cap("memory", "byte")
            )
        );
        assert_eq!(
            NodeUtilization::CpuRequest.query("n1"),
            format!(
                r#"sum(kube_pod_container_resource_requests{{node="n1",resource="cpu",unit="core"}} * {eklet}) by (node) / {}"#,
                cap("cpu", "core")
            )
        );
        assert_eq!(
            NodeUtilization::MemoryRequest.query("n1"),
            format!(
                r#"sum(kube_pod_container_resource_requests{{node="n1",resource="memory",unit="byte",namespace!=""}} * {eklet}) by (node) / {}"#,
                cap("memory", "byte")
            )
        );
        assert_eq!(
            pods_net_query(NetDirection::Receive, "shop", &["web-1", "web.2"]),
            r#"sum(rate(container_network_receive_bytes_total{namespace="shop",pod=~"^(web-1|web\\.2)$",container!=""}[3m]))"#
        );
        assert!(
            pods_net_query(NetDirection::Transmit, "shop", &["a"])
                .starts_with("sum(rate(container_network_transmit_bytes_total{")
        );
        for q in [
            NodeUtilization::CpuUsage,
            NodeUtilization::MemoryUsage,
            NodeUtilization::CpuRequest,
            NodeUtilization::MemoryRequest,
        ]
        .map(|u| u.query("node-\"1"))
        .into_iter()
        .chain([pods_net_query(NetDirection::Receive, "ns", &["p"])])
        {
            ferrocrane_core::promql::validate_query(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
        }
    }

    #[test]
    fn summed_adds_series_per_timestamp() {
        let s = summed(&[
            rs("", "a", &[(60, 1.0), (120, f64::NAN)]),
            rs("", "b", &[(60, 2.0), (180, 4.0)]),
        ]);
        assert_eq!(s, vec![Sample::new(60, 3.0), Sample::new(180, 4.0)]);
    }

    fn rs(container: &str, pod: &str, points: &[(i64, f64)]) -> RangeSeries {
        RangeSeries {
            labels: [
                ("container".to_string(), container.to_string()),
                ("pod".to_string(), pod.to_string()),
            ]
            .into(),
            samples: points
                .iter()
                .map(|&(t, v)| PSample {
                    timestamp_ms: t * 1000,
                    value: v,
                })
                .collect(),
        }
    }

    #[test]
    fn groups_per_container_and_sums_the_workload() {
        let s = ContainerSeries::from_range(vec![
            rs("app", "web-1", &[(60, 1.0), (120, 2.0)]),
            rs("app", "web-2", &[(60, 3.0), (120, f64::NAN)]),
            rs("sidecar", "web-1", &[(60, 0.5)]),
            rs("", "web-1", &[(60, 100.0)]),
        ]);
        assert_eq!(s.per_pod("app").len(), 2);
        assert_eq!(s.per_pod("sidecar"), vec![&[Sample::new(60, 0.5)][..]]);
        assert!(s.per_pod("none").is_empty());
        assert_eq!(s.total(), vec![Sample::new(60, 4.5), Sample::new(120, 2.0)]);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let r = Retry::default();
        assert_eq!(backoff(&r, 1), Duration::from_millis(500));
        assert_eq!(backoff(&r, 2), Duration::from_secs(1));
        assert_eq!(backoff(&r, 10), Duration::from_secs(8));
    }
}
