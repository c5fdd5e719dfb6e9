//! The workloads the tests create, as one model: a Deployment or StatefulSet whose pods carry
//! `app=<name>` (which selects them), with containers and their requests, optionally placed on
//! kwok's Nodes (so kwok runs them) with pod annotations (kwok's usage, say).
//!
//! ```text
//! Workload::deployment("web").replicas(2).container("app", "250m", "512Mi").json("ns")
//! Workload::deployment("web").on_kwok(cluster)?.pod_annotations(json!({KWOK_USAGE_CPU: "400m"}))
//! ```

use anyhow::Result;
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Value, json};

use crate::cluster::Cluster;

/// The image every test container names: nothing pulls it (kwok runs pods without images).
pub const TEST_IMAGE: &str = "registry.invalid/app:1";

#[derive(Debug, Clone)]
struct Container {
    name: String,
    image: String,
    /// (cpu, memory)
    requests: Option<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct Workload {
    kind: &'static str,
    name: String,
    replicas: i32,
    containers: Vec<Container>,
    /// The kwok toleration, when the pods go on kwok's Nodes.
    kwok: Option<Value>,
    pod_annotations: Value,
}

impl Workload {
    /// A Deployment of one replica; without a [`Workload::container`], one container `app`
    /// without requests.
    pub fn deployment(name: &str) -> Self {
        Self::of_kind("Deployment", name)
    }

    /// A StatefulSet (its `serviceName` is its name), as [`Workload::deployment`].
    pub fn stateful_set(name: &str) -> Self {
        Self::of_kind("StatefulSet", name)
    }

    fn of_kind(kind: &'static str, name: &str) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            replicas: 1,
            containers: Vec::new(),
            kwok: None,
            pod_annotations: json!({}),
        }
    }

    pub fn replicas(mut self, replicas: i32) -> Self {
        self.replicas = replicas;
        self
    }

    /// A container of [`TEST_IMAGE`] requesting `cpu` and `memory`.
    pub fn container(mut self, name: &str, cpu: &str, memory: &str) -> Self {
        self.containers.push(Container {
            name: name.to_owned(),
            image: TEST_IMAGE.to_owned(),
            requests: Some((cpu.to_owned(), memory.to_owned())),
        });
        self
    }

    /// A container of `image` without requests.
    pub fn bare_container(mut self, name: &str, image: &str) -> Self {
        self.containers.push(Container {
            name: name.to_owned(),
            image: image.to_owned(),
            requests: None,
        });
        self
    }

    /// Pods on kwok's Nodes: they run (Running and Ready), and kwok reports their usage.
    pub fn on_kwok(mut self, cluster: &Cluster) -> Result<Self> {
        self.kwok = Some(cluster.kwok_toleration()?);
        Ok(self)
    }

    /// Pods on kwok's Nodes, given their toleration (a private cluster's, say).
    pub fn with_kwok_toleration(mut self, toleration: Value) -> Self {
        self.kwok = Some(toleration);
        self
    }

    /// Annotations on the pod template, so on every pod.
    pub fn pod_annotations(mut self, annotations: Value) -> Self {
        self.pod_annotations = annotations;
        self
    }

    /// The object, in `namespace` when given (otherwise the API call's namespace applies).
    pub fn json(&self, namespace: Option<&str>) -> Value {
        let containers: Vec<Value> = if self.containers.is_empty() {
            vec![json!({"name": "app", "image": TEST_IMAGE})]
        } else {
            self.containers
                .iter()
                .map(
                    |Container {
                         name,
                         image,
                         requests,
                     }| match requests {
                        Some((cpu, memory)) => json!({
                            "name": name, "image": image,
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                        }),
                        None => json!({"name": name, "image": image}),
                    },
                )
                .collect()
        };
        let mut pod_spec = json!({"containers": containers});
        if let Some(toleration) = &self.kwok {
            pod_spec["nodeSelector"] = json!({"type": "kwok"});
            pod_spec["tolerations"] = json!([toleration]);
        }
        let mut spec = json!({
            "replicas": self.replicas,
            "selector": {"matchLabels": {"app": self.name}},
            "template": {
                "metadata": {"labels": {"app": self.name}, "annotations": self.pod_annotations},
                "spec": pod_spec,
            },
        });
        if self.kind == "StatefulSet" {
            spec["serviceName"] = json!(self.name);
        }
        let mut metadata = json!({"name": self.name, "labels": {"app": self.name}});
        if let Some(ns) = namespace {
            metadata["namespace"] = json!(ns);
        }
        json!({"apiVersion": "apps/v1", "kind": self.kind, "metadata": metadata, "spec": spec})
    }

    /// The Deployment object (for `Api<Deployment>::create`).
    pub fn deployment_object(&self) -> Result<Deployment> {
        Ok(serde_json::from_value(self.json(None))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_deployment_has_one_app_container_and_selects_its_pods() {
        let d = Workload::deployment("web").json(Some("ns"));
        assert_eq!(d["metadata"]["namespace"], "ns");
        assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
        assert_eq!(d["spec"]["template"]["metadata"]["labels"]["app"], "web");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["name"],
            "app"
        );
        assert!(d["spec"]["template"]["spec"].get("tolerations").is_none());
    }

    #[test]
    fn stateful_sets_name_their_service_and_kwok_pods_tolerate_the_taint() {
        let t = json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"});
        let s = Workload::stateful_set("db")
            .replicas(3)
            .container("db", "1", "1Gi")
            .with_kwok_toleration(t.clone())
            .json(None);
        assert_eq!(s["kind"], "StatefulSet");
        assert_eq!(s["spec"]["serviceName"], "db");
        assert_eq!(s["spec"]["replicas"], 3);
        let pod = &s["spec"]["template"]["spec"];
        assert_eq!(pod["tolerations"][0], t);
        assert_eq!(pod["nodeSelector"]["type"], "kwok");
        assert_eq!(
            pod["containers"][0]["resources"]["requests"]["memory"],
            "1Gi"
        );
    }
}
