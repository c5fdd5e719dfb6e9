//! Pods and nodes as upstream sees them: watched into in-memory stores (metadata only; pods
//! with `status.phase=Running`, as prometheus-adapter's filtered pod informer), so a `kubectl
//! top` request costs the API server nothing and waits for no list.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::core::{Expression, PartialObjectMeta, Selector, SelectorExt};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::fields::FieldSelector;
use super::model::ObjectInfo;
use crate::status::Status;
use ferrocrane_core::promql::{Operator, OrderingRequirement, parse_object_label_selector};

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

/// A `labelSelector` parameter as a matcher over object labels, with apimachinery's semantics
/// (`!=` and `notin` also match objects without the label; `>`/`<` compare integers).
#[derive(Debug, Clone, Default)]
pub struct ObjectSelector {
    labels: Selector,
    orderings: Vec<OrderingRequirement>,
}

impl ObjectSelector {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.labels.matches(labels)
            && self
                .orderings
                .iter()
                .all(|o| o.matches(labels.get(&o.key).map(String::as_str)))
    }
}

/// Parses a `labelSelector` parameter; a malformed one is a BadRequest.
pub fn label_selector(selector: &str) -> Result<ObjectSelector, Status> {
    let (reqs, orderings) =
        parse_object_label_selector(selector).map_err(|e| Status::bad_request(e.to_string()))?;
    let labels = Selector::from_iter(reqs.into_iter().map(|r| {
        let mut values = r.values.into_iter();
        match r.op {
            Operator::Equals => Expression::Equal(r.key, values.next().unwrap_or_default()),
            Operator::NotEquals => Expression::NotEqual(r.key, values.next().unwrap_or_default()),
            Operator::In => Expression::In(r.key, values.collect()),
            Operator::NotIn => Expression::NotIn(r.key, values.collect()),
            Operator::Exists => Expression::Exists(r.key),
            Operator::DoesNotExist => Expression::DoesNotExist(r.key),
        }
    }));
    Ok(ObjectSelector { labels, orderings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_selectors_match_like_apimachinery() {
        let web = labels(&[("app", "web"), ("tier", "a"), ("rank", "2")]);
        let bare = labels(&[]);
        for (sel, on_web, on_bare) in [
            ("", true, true),
            ("app=web", true, false),
            ("app==web", true, false),
            ("app!=web", false, true),
            ("tier in (a,b)", true, false),
            ("tier notin (a)", false, true),
            ("app", true, false),
            ("!app", false, true),
            ("app=web,tier=b", false, false),
            ("rank>1", true, false),
            ("rank<2", false, false),
            ("rank>1,app=web", true, false),
        ] {
            let s = label_selector(sel).unwrap();
            assert_eq!(s.matches(&web), on_web, "{sel} on web");
            assert_eq!(s.matches(&bare), on_bare, "{sel} on bare");
        }
        for bad in ["app in (", "rank>x", "rank>"] {
            let e = label_selector(bad).unwrap_err();
            assert_eq!(e.code, 400, "{bad}");
        }
    }
}
