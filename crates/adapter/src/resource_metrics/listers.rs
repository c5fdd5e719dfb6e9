//! Pods and nodes as upstream sees them: watched into in-memory stores (metadata only; pods
//! with `status.phase=Running`, as prometheus-adapter's filtered pod informer), so a `kubectl
//! top` request costs the API server nothing and waits for no list.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::fields::FieldSelector;
use super::model::ObjectInfo;
use crate::object_selector::ObjectSelector;
use crate::status::Status;

/// How long a request waits for the first list of pods or nodes before answering 503.
const SYNC_WAIT: Duration = Duration::from_secs(30);

/// The two stores and the tasks that keep them current (stopped on drop).
pub(super) struct Listers {
    pods: Store<PartialObjectMeta<Pod>>,
    nodes: Store<PartialObjectMeta<Node>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Listers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn reflect<K>(
    api: Api<PartialObjectMeta<K>>,
    config: watcher::Config,
    what: &'static str,
) -> (Store<PartialObjectMeta<K>>, JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = watcher(api, config).default_backoff().reflect(writer);
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Err(e) = event {
                // The backoff retries; the store keeps its last state meanwhile.
                tracing::warn!(error = %e, what, "watch failed, retrying");
            }
        }
    });
    (reader, task)
}

fn info<K: kube::Resource>(obj: &PartialObjectMeta<K>) -> ObjectInfo {
    ObjectInfo {
        name: obj.metadata.name.clone().unwrap_or_default(),
        namespace: obj.metadata.namespace.clone().unwrap_or_default(),
        labels: obj.metadata.labels.clone().unwrap_or_default(),
    }
}

async fn synced<K>(store: &Store<K>, what: &str) -> Result<(), Status>
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    match tokio::time::timeout(SYNC_WAIT, store.wait_until_ready()).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(Status::unavailable(format!(
            "the {what} list has not synced with the API server yet"
        ))),
    }
}

impl Listers {
    /// Starts watching. Must run inside a tokio runtime.
    pub(super) fn start(client: &kube::Client) -> Self {
        let (pods, pod_task) = reflect(
            Api::<PartialObjectMeta<Pod>>::all(client.clone()),
            watcher::Config::default().fields("status.phase=Running"),
            "pods",
        );
        let (nodes, node_task) = reflect(
            Api::<PartialObjectMeta<Node>>::all(client.clone()),
            watcher::Config::default(),
            "nodes",
        );
        Listers {
            pods,
            nodes,
            tasks: vec![pod_task, node_task],
        }
    }

    /// Running pods in `namespace` (all when `None`) matching both selectors.
    pub(super) async fn pods(
        &self,
        namespace: Option<&str>,
        labels: &ObjectSelector,
        fields: &FieldSelector,
    ) -> Result<Vec<ObjectInfo>, Status> {
        synced(&self.pods, "pod").await?;
        Ok(self
            .pods
            .state_filter(|p| {
                namespace.is_none_or(|ns| p.metadata.namespace.as_deref() == Some(ns))
                    && labels.matches(p.metadata.labels.as_ref().unwrap_or(&Default::default()))
            })
            .iter()
            .map(|p| info(p))
            .filter(|p| fields.matches(&p.name, Some(&p.namespace)))
            .collect())
    }

    /// One Running pod.
    pub(super) async fn pod(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ObjectInfo>, Status> {
        synced(&self.pods, "pod").await?;
        Ok(self
            .pods
            .get(&ObjectRef::new(name).within(namespace))
            .map(|p| info(&p)))
    }

    /// Nodes matching both selectors.
    pub(super) async fn nodes(
        &self,
        labels: &ObjectSelector,
        fields: &FieldSelector,
    ) -> Result<Vec<ObjectInfo>, Status> {
        synced(&self.nodes, "node").await?;
        Ok(self
            .nodes
            .state_filter(|n| {
                labels.matches(n.metadata.labels.as_ref().unwrap_or(&Default::default()))
            })
            .iter()
            .map(|n| info(n))
            .filter(|n| fields.matches(&n.name, None))
            .collect())
    }

    /// One node.
    pub(super) async fn node(&self, name: &str) -> Result<Option<ObjectInfo>, Status> {
        synced(&self.nodes, "node").await?;
        Ok(self.nodes.get(&ObjectRef::new(name)).map(|n| info(&n)))
    }
}
