//! The PromQL craned sends, one builder for the controller and `craned recommend`: a
//! workload's usage, a node's utilization ratios, a set of pods' traffic. The selectors are
//! Crane's (`pkg/utils/expression_prom_default.go`, the IdleNode and Service recommenders), so
//! the same Prometheus answers both; a workload's pods are matched by [`crate::workload::pods`].

use ferrocrane_core::prometheus::remote_read::{MatchOp, RawMatcher};
use ferrocrane_core::promql::{label_eq, label_matches, label_neq, label_not_matches};

use crate::workload::{exact_pods_regex, pod_name_regex};

/// The `irate` window Crane uses for CPU.
pub const CPU_RATE_WINDOW: &str = "3m";
/// [`CPU_RATE_WINDOW`] in milliseconds, for the remote-read path.
pub const CPU_RATE_WINDOW_MS: i64 = 3 * 60 * 1000;

/// The two range queries that read a workload's usage: every container of every pod, grouped
/// `by (container, pod)` (Crane issues one query per container and resource instead, tens of
/// thousands a round at 20,000 containers, Crane #898).
///
/// `max`, not `sum`: the same container is often scraped twice (the kubelet's cAdvisor and a
/// standalone cAdvisor, under two jobs), and its usage is that of one container, not the
/// total of its copies. Crane reads every copy as a separate series of the same values, which
/// leaves its percentiles where one copy would put them; `max` gives the same answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageQueries {
    /// CPU cores.
    pub cpu: String,
    /// Working-set bytes.
    pub memory: String,
    /// The containers both select, for a remote read of the raw series (the metric name is
    /// added per series: [`CPU_METRIC`], [`MEMORY_METRIC`]).
    pub containers: Vec<RawMatcher>,
}

/// The CPU counter the CPU query takes the `irate` of.
pub const CPU_METRIC: &str = "container_cpu_usage_seconds_total";
/// The gauge the memory query reads.
pub const MEMORY_METRIC: &str = "container_memory_working_set_bytes";

impl UsageQueries {
    pub fn of(namespace: &str, workload: &str, kind: &str) -> Self {
        UsageQueries {
            cpu: workload_cpu_query(namespace, workload, kind),
            memory: workload_memory_query(namespace, workload, kind),
            containers: container_matchers(namespace, &pod_name_regex(workload, kind)),
        }
    }
}

/// Crane's container selector, one matcher per label.
fn container_matchers(namespace: &str, pod_regex: &str) -> Vec<RawMatcher> {
    vec![
        RawMatcher::new("container", MatchOp::NotEqual, "POD"),
        RawMatcher::new("container", MatchOp::NotEqual, ""),
        RawMatcher::new("namespace", MatchOp::Equal, namespace),
        RawMatcher::new("pod", MatchOp::Regex, pod_regex),
    ]
}

/// [`container_matchers`] as PromQL.
fn container_selector(namespace: &str, pod_regex: &str) -> String {
    container_matchers(namespace, pod_regex)
        .iter()
        .map(|m| match m.op {
            MatchOp::Equal => label_eq(&m.name, &m.value),
            MatchOp::NotEqual => label_neq(&m.name, &m.value),
            MatchOp::Regex => label_matches(&m.name, &m.value),
            MatchOp::NotRegex => label_not_matches(&m.name, &m.value),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// CPU cores of every container of every pod of the workload.
pub fn workload_cpu_query(namespace: &str, workload: &str, kind: &str) -> String {
    format!(
        "max by (container, pod) (irate({CPU_METRIC}{{{}}}[{CPU_RATE_WINDOW}]))",
        container_selector(namespace, &pod_name_regex(workload, kind))
    )
}

/// Working-set bytes of every container of every pod of the workload.
pub fn workload_memory_query(namespace: &str, workload: &str, kind: &str) -> String {
    format!(
        "max by (container, pod) ({MEMORY_METRIC}{{{}}})",
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
    format!(
        "sum(rate({metric}{{{},{},{}}}[{CPU_RATE_WINDOW}]))",
        label_eq("namespace", namespace),
        label_matches("pod", &exact_pods_regex(pods)),
        label_neq("container", ""),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::pod_name_regex;

    #[test]
    fn the_rate_window_is_one_value_in_two_units() {
        assert_eq!(CPU_RATE_WINDOW, "3m");
        assert_eq!(CPU_RATE_WINDOW_MS, 180_000);
    }

    #[test]
    fn queries_use_cranes_selectors_grouped_by_container_and_pod() {
        assert_eq!(
            workload_cpu_query("prod", "web", "Deployment"),
            r#"max by (container, pod) (irate(container_cpu_usage_seconds_total{container!="POD",container!="",namespace="prod",pod=~"^web-[a-z0-9]+-[a-z0-9]{5}$"}[3m]))"#
        );
        assert_eq!(
            workload_memory_query("prod", "db", "StatefulSet"),
            r#"max by (container, pod) (container_memory_working_set_bytes{container!="POD",container!="",namespace="prod",pod=~"^db-[0-9]+$"})"#
        );
        assert_eq!(pod_name_regex("a.b", "DaemonSet"), r"^a\.b-[a-z0-9]{5}$");
        assert_eq!(pod_name_regex("x", "Rollout"), "^x-.*");
        let q = UsageQueries::of("prod", "web", "Deployment");
        assert_eq!(
            (q.cpu.as_str(), q.memory.as_str()),
            (
                workload_cpu_query("prod", "web", "Deployment").as_str(),
                workload_memory_query("prod", "web", "Deployment").as_str()
            )
        );
        // The remote-read matchers are the queries' selector, one for one.
        let selector = |m: &RawMatcher| {
            let op = match m.op {
                MatchOp::Equal => "=",
                MatchOp::NotEqual => "!=",
                MatchOp::Regex => "=~",
                MatchOp::NotRegex => "!~",
            };
            format!("{}{op}{:?}", m.name, m.value)
        };
        let joined: Vec<String> = q.containers.iter().map(selector).collect();
        assert!(
            q.cpu.contains(&format!("{{{}}}", joined.join(","))),
            "{joined:?}"
        );
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
}
