//! Where the report's inputs come from: workloads and their requests from the API server,
//! usage from Prometheus through the controller's own reader ([`History::workload`]): the same
//! pods, matched the same way, in the same two range queries per workload.
//!
//! Turning objects into facts is pure; the rest is thin I/O.

use std::time::{Duration, SystemTime};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use kube::{Api, Client, ResourceExt};
use serde::Serialize;

use super::model::WorkloadFacts;
use crate::datasource::{DataSourceError, History, UsageQueries, WorkloadHistory};
use crate::workload::{spec_replicas, template_containers};

impl WorkloadFacts {
    /// What reads the workload's usage (what the controller sends for the same workload).
    pub fn usage_queries(&self) -> UsageQueries {
        UsageQueries::of(&self.namespace, &self.name, &self.kind)
    }
}

/// A workload's facts: its pod template's requests and, unless it runs one pod per node,
/// its replicas.
pub fn facts_of<K>(obj: &K, has_replicas: bool) -> WorkloadFacts
where
    K: kube::Resource<DynamicType = ()> + Serialize,
{
    // The controller reads targets as JSON; reading the same JSON here keeps one reader.
    let json = serde_json::to_value(obj).unwrap_or_default();
    WorkloadFacts {
        namespace: obj.namespace().unwrap_or_default(),
        kind: K::kind(&()).into_owned(),
        name: obj.name_any(),
        replicas: has_replicas.then(|| spec_replicas(&json)),
        containers: template_containers(&json),
    }
}

/// Deployments, StatefulSets and DaemonSets of `namespace` (every namespace when `None`).
pub async fn list_targets(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<WorkloadFacts>, kube::Error> {
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
    let mut targets = Vec::new();
    for d in api::<Deployment>(client, namespace).list(&lp).await? {
        targets.push(facts_of(&d, true));
    }
    for s in api::<StatefulSet>(client, namespace).list(&lp).await? {
        targets.push(facts_of(&s, true));
    }
    for d in api::<DaemonSet>(client, namespace).list(&lp).await? {
        targets.push(facts_of(&d, false));
    }
    targets.sort_by(|a, b| (&a.namespace, &a.kind, &a.name).cmp(&(&b.namespace, &b.kind, &b.name)));
    Ok(targets)
}

/// The workload's usage over `history` up to `end`, every `step`: two range queries.
pub async fn fetch_usage(
    history: &History,
    facts: &WorkloadFacts,
    end: SystemTime,
    window: (Duration, Duration),
) -> Result<WorkloadHistory, DataSourceError> {
    history
        .workload(&facts.usage_queries(), end, window.0, window.1)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::recommendation_rule::targets::Target;
    use crate::workload::TemplateContainer;
    use kube::api::{ApiResource, DynamicObject};

    fn deployment() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "app", "namespace": "shop", "uid": "u1"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "app"}},
                "template": {
                    "metadata": {"labels": {"app": "app"}},
                    "spec": {"containers": [{
                        "name": "web", "image": "web:1",
                        "resources": {"requests": {"cpu": "0.1001", "memory": "1.5Gi"}}
                    }]}
                }
            }
        })
    }

    #[test]
    fn facts_read_requests_and_replicas() {
        let d: Deployment = serde_json::from_value(deployment()).unwrap();
        let f = facts_of(&d, true);
        assert_eq!(
            (f.namespace.as_str(), f.kind.as_str(), f.name.as_str()),
            ("shop", "Deployment", "app")
        );
        assert_eq!(f.replicas, Some(3));
        assert_eq!(
            f.containers,
            vec![TemplateContainer {
                name: "web".into(),
                cpu_millis: Some(101),
                memory_bytes: Some(1_610_612_736)
            }]
        );
        assert_eq!(facts_of(&d, false).replicas, None);
    }

    /// The report and the controller read the same workload with the same queries (they used
    /// to differ: the report matched a Deployment's pods by its current ReplicaSets' names).
    #[test]
    fn the_report_sends_what_the_controller_sends() {
        let d: Deployment = serde_json::from_value(deployment()).unwrap();
        let report = facts_of(&d, true).usage_queries();
        let object: DynamicObject = serde_json::from_value(deployment()).unwrap();
        let controller = Target {
            // A selector may spell the kind in lower case; the served kind is what counts.
            kind: "deployment".into(),
            api_version: "apps/v1".into(),
            namespace: "shop".into(),
            name: "app".into(),
            resource: ApiResource::erase::<Deployment>(&()),
            namespaced: true,
            has_scale: true,
            object,
        }
        .usage_queries();
        assert_eq!(report, controller);
        assert_eq!(
            report.cpu,
            r#"max by (container, pod) (irate(container_cpu_usage_seconds_total{container!="POD",container!="",namespace="shop",pod=~"^app-[a-z0-9]+-[a-z0-9]{5}$"}[3m]))"#
        );
        assert_eq!(
            report.memory,
            r#"max by (container, pod) (container_memory_working_set_bytes{container!="POD",container!="",namespace="shop",pod=~"^app-[a-z0-9]+-[a-z0-9]{5}$"})"#
        );
    }

    #[test]
    fn pod_regexes_do_not_claim_lookalike_workloads() {
        // `web`'s pods, and those of `web-canary` (a Deployment) and `db-replica` (a
        // StatefulSet) that must not count as `web`'s or `db`'s.
        let matcher = |q: &str| {
            let re = q
                .split("pod=~\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap();
            regex::Regex::new(&format!("^(?:{re})$")).unwrap()
        };
        let web = matcher(&UsageQueries::of("ns", "web", "Deployment").cpu);
        assert!(web.is_match("web-5f7d-abcde"));
        assert!(!web.is_match("web-canary-5f7d-abcde"));
        let db = matcher(&UsageQueries::of("ns", "db", "StatefulSet").cpu);
        assert!(db.is_match("db-12"));
        assert!(!db.is_match("db-replica-0"));
        let agent = matcher(&UsageQueries::of("ns", "agent", "DaemonSet").cpu);
        assert!(agent.is_match("agent-x7k2p"));
        assert!(!agent.is_match("agent-canary-x7k2p"));
    }
}
