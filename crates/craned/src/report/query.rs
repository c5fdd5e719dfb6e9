//! Where the report's inputs come from: workloads and their requests from the API server,
//! usage from Prometheus in one range query per workload and resource (grouped by pod and
//! container), not one per container.
//!
//! The PromQL builders and the result grouping are pure; the rest is thin I/O.
// TODO(dedup): craned's controller builds the same batched per-workload queries in
// `datasource/`; once both are on main the report should call that one.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrocrane_core::prometheus::{PrometheusClient, PrometheusError, RangeSeries};
use ferrocrane_core::promql::go_quote;
use ferrocrane_core::quantity::Quantity;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use kube::{Api, Client, ResourceExt};

use super::model::{ContainerSpec, WorkloadFacts, WorkloadUsage};
use crate::oom::controller_of;
use crate::prediction::Sample;

/// A workload and the regex its pods' names match.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub facts: WorkloadFacts,
    pub pod_regex: String,
}

/// Current requests of a pod template's containers (millicores rounded up, bytes rounded up,
/// as apimachinery's `MilliValue`/`Value`).
pub fn container_requests(spec: Option<&PodSpec>) -> Vec<ContainerSpec> {
    let Some(spec) = spec else { return Vec::new() };
    spec.containers
        .iter()
        .map(|c| {
            let req = c.resources.as_ref().and_then(|r| r.requests.as_ref());
            let get = |k: &str| {
                req.and_then(|r| r.get(k))
                    .and_then(|q| Quantity::parse(&q.0).ok())
            };
            ContainerSpec {
                name: c.name.clone(),
                cpu_millis: get("cpu").map(|q| q.milli_value()),
                memory_bytes: get("memory").map(|q| q.value()),
            }
        })
        .collect()
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A Deployment's pods are `<replicaset>-<5 chars>`; its ReplicaSets (the current and the
/// retained old ones) name the history exactly, so `web` does not also claim `web-canary`'s
/// pods as Crane's `^web-[a-z0-9]+-[a-z0-9]{5}$` does. Without ReplicaSets, Crane's pattern.
pub fn deployment_pod_regex(name: &str, replicasets: &[String]) -> String {
    if replicasets.is_empty() {
        return format!("^{}-[a-z0-9]+-[a-z0-9]{{5}}$", regex_escape(name));
    }
    let alts: Vec<String> = replicasets.iter().map(|r| regex_escape(r)).collect();
    format!("^({})-[a-z0-9]{{5}}$", alts.join("|"))
}

/// A StatefulSet's pods are `<name>-<ordinal>`.
pub fn statefulset_pod_regex(name: &str) -> String {
    format!("^{}-[0-9]+$", regex_escape(name))
}

/// A DaemonSet's pods are `<name>-<5 chars>`.
pub fn daemonset_pod_regex(name: &str) -> String {
    format!("^{}-[a-z0-9]{{5}}$", regex_escape(name))
}

fn selector(namespace: &str, pod_regex: &str) -> String {
    format!(
        "namespace={},pod=~{},container!=\"\",container!=\"POD\"",
        go_quote(namespace),
        go_quote(pod_regex)
    )
}

/// CPU cores per pod and container: Crane's container expression (`irate` over 3m), grouped.
pub fn cpu_query(namespace: &str, pod_regex: &str) -> String {
    format!(
        "sum by (pod, container) (irate(container_cpu_usage_seconds_total{{{}}}[3m]))",
        selector(namespace, pod_regex)
    )
}

/// Working-set bytes per pod and container.
pub fn memory_query(namespace: &str, pod_regex: &str) -> String {
    format!(
        "sum by (pod, container) (container_memory_working_set_bytes{{{}}})",
        selector(namespace, pod_regex)
    )
}

/// Range query results keyed by (container, pod), samples in seconds.
pub fn group_series(series: Vec<RangeSeries>) -> BTreeMap<(String, String), Vec<Sample>> {
    let mut out: BTreeMap<(String, String), Vec<Sample>> = BTreeMap::new();
    for s in series {
        let (Some(container), Some(pod)) = (s.labels.get("container"), s.labels.get("pod")) else {
            continue;
        };
        let entry = out.entry((container.clone(), pod.clone())).or_default();
        entry.extend(
            s.samples
                .iter()
                .filter(|p| p.value.is_finite())
                .map(|p| Sample::new(p.timestamp_ms.div_euclid(1000), p.value)),
        );
        entry.sort_by_key(|p| p.timestamp);
    }
    out
}

fn target<K>(
    obj: &K,
    replicas: Option<i32>,
    template: &PodTemplateSpec,
    pod_regex: String,
) -> Target
where
    K: kube::Resource<DynamicType = ()>,
{
    Target {
        pod_regex,
        facts: WorkloadFacts {
            namespace: obj.namespace().unwrap_or_default(),
            kind: K::kind(&()).into_owned(),
            name: obj.name_any(),
            replicas,
            containers: container_requests(template.spec.as_ref()),
        },
    }
}

/// Deployments, StatefulSets and DaemonSets of `namespace` (every namespace when `None`).
pub async fn list_targets(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<Target>, kube::Error> {
    fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        match ns {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
    let lp = Default::default();
    let replicasets = api::<ReplicaSet>(client, namespace).list(&lp).await?;
    // (namespace, deployment uid) → its ReplicaSets' names.
    let mut owned: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for rs in &replicasets {
        if let Some(o) = controller_of(&rs.metadata).filter(|o| o.kind == "Deployment") {
            owned
                .entry((rs.namespace().unwrap_or_default(), o.uid.clone()))
                .or_default()
                .push(rs.name_any());
        }
    }
    let mut targets = Vec::new();
    for d in api::<Deployment>(client, namespace).list(&lp).await? {
        let mut rs = owned
            .get(&(
                d.namespace().unwrap_or_default(),
                d.uid().unwrap_or_default(),
            ))
            .cloned()
            .unwrap_or_default();
        rs.sort();
        let regex = deployment_pod_regex(&d.name_any(), &rs);
        let replicas = Some(d.spec.replicas.unwrap_or(1));
        targets.push(target(&d, replicas, &d.spec.template, regex));
    }
    for s in api::<StatefulSet>(client, namespace).list(&lp).await? {
        let regex = statefulset_pod_regex(&s.name_any());
        let replicas = Some(s.spec.replicas.unwrap_or(1));
        targets.push(target(&s, replicas, &s.spec.template, regex));
    }
    for d in api::<DaemonSet>(client, namespace).list(&lp).await? {
        let regex = daemonset_pod_regex(&d.name_any());
        targets.push(target(&d, None, &d.spec.template, regex));
    }
    targets.sort_by(|a, b| {
        (&a.facts.namespace, &a.facts.kind, &a.facts.name).cmp(&(
            &b.facts.namespace,
            &b.facts.kind,
            &b.facts.name,
        ))
    });
    Ok(targets)
}

/// The workload's usage over `[end - history, end]` every `step`: two range queries.
pub async fn fetch_usage(
    prometheus: &PrometheusClient,
    target: &Target,
    end: i64,
    history_secs: i64,
    step_secs: i64,
) -> Result<WorkloadUsage, PrometheusError> {
    let at = |t: i64| UNIX_EPOCH + Duration::from_secs(t.max(0) as u64);
    let (start, end): (SystemTime, SystemTime) = (at(end - history_secs), at(end));
    let step = Duration::from_secs(step_secs.max(1) as u64);
    let ns = &target.facts.namespace;
    let (cpu_q, memory_q) = (
        cpu_query(ns, &target.pod_regex),
        memory_query(ns, &target.pod_regex),
    );
    let (cpu, memory) = futures::try_join!(
        prometheus.query_range(&cpu_q, start, end, step),
        prometheus.query_range(&memory_q, start, end, step),
    )?;
    Ok(WorkloadUsage {
        cpu: group_series(cpu),
        memory: group_series(memory),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::prometheus::Sample as PromSample;

    #[test]
    fn queries_are_grouped_and_quoted() {
        let re = deployment_pod_regex("web.v2", &["web.v2-5f7d".into(), "web.v2-6c9b".into()]);
        assert_eq!(re, r"^(web\.v2-5f7d|web\.v2-6c9b)-[a-z0-9]{5}$");
        assert_eq!(
            cpu_query("shop", &re),
            r#"sum by (pod, container) (irate(container_cpu_usage_seconds_total{namespace="shop",pod=~"^(web\\.v2-5f7d|web\\.v2-6c9b)-[a-z0-9]{5}$",container!="",container!="POD"}[3m]))"#
        );
        assert_eq!(
            memory_query("shop", "^db-[0-9]+$"),
            r#"sum by (pod, container) (container_memory_working_set_bytes{namespace="shop",pod=~"^db-[0-9]+$",container!="",container!="POD"})"#
        );
        assert_eq!(
            deployment_pod_regex("web", &[]),
            "^web-[a-z0-9]+-[a-z0-9]{5}$"
        );
        assert_eq!(statefulset_pod_regex("db"), "^db-[0-9]+$");
        assert_eq!(daemonset_pod_regex("agent"), "^agent-[a-z0-9]{5}$");
    }

    #[test]
    fn pod_regexes_do_not_claim_lookalike_workloads() {
        let re = regex::Regex::new(&deployment_pod_regex("web", &["web-5f7d".into()])).unwrap();
        assert!(re.is_match("web-5f7d-abcde"));
        assert!(!re.is_match("web-canary-abcde"));
        assert!(!re.is_match("web-canary-5f7d-abcde"));
        let re = regex::Regex::new(&statefulset_pod_regex("db")).unwrap();
        assert!(re.is_match("db-12"));
        assert!(!re.is_match("db-replica-0"));
        let re = regex::Regex::new(&daemonset_pod_regex("agent")).unwrap();
        assert!(re.is_match("agent-x7k2p"));
        assert!(!re.is_match("agent-canary-x7k2p"));
    }

    #[test]
    fn results_are_grouped_by_container_and_pod() {
        let s = |pod: &str, container: Option<&str>, pts: &[(i64, f64)]| RangeSeries {
            labels: [("pod", Some(pod)), ("container", container)]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k.to_string(), v.to_string())))
                .collect(),
            samples: pts
                .iter()
                .map(|&(t, v)| PromSample {
                    timestamp_ms: t,
                    value: v,
                })
                .collect(),
        };
        let g = group_series(vec![
            s("p1", Some("app"), &[(60_000, 1.0), (120_500, f64::NAN)]),
            s("p2", Some("app"), &[(60_000, 2.0)]),
            s("p1", None, &[(60_000, 9.0)]),
        ]);
        assert_eq!(g.len(), 2);
        assert_eq!(
            g[&("app".to_string(), "p1".to_string())],
            vec![Sample::new(60, 1.0)]
        );
    }

    #[test]
    fn requests_round_like_apimachinery() {
        let spec: PodSpec = serde_json::from_value(serde_json::json!({"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "0.1001", "memory": "1.5Gi"}}},
            {"name": "b"}
        ]}))
        .unwrap();
        assert_eq!(
            container_requests(Some(&spec)),
            vec![
                ContainerSpec {
                    name: "a".into(),
                    cpu_millis: Some(101),
                    memory_bytes: Some(1_610_612_736)
                },
                ContainerSpec {
                    name: "b".into(),
                    cpu_millis: None,
                    memory_bytes: None
                },
            ]
        );
        assert!(container_requests(None).is_empty());
    }
}
