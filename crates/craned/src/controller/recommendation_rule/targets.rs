//! Finding a rule's targets: each resource selector resolved through discovery (so any kind the
//! API server serves works: Deployments, StatefulSets, DaemonSets, workloads of CRDs with a
//! scale subresource, Nodes, Services, PersistentVolumes), listed across the selected
//! namespaces with the label selector applied by the API server.

use std::collections::BTreeMap;

use ferrocrane_core::kube::ResourceMapper;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, Selector};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use super::naming::IdentityKey;
use crate::crd::{RecommendationRuleSpec, ResourceSelector};
use crate::datasource::UsageQueries;

/// One object a rule selected.
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: String,
    /// As the selector spells it (Crane keys identities by the selector's apiVersion).
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    pub resource: ApiResource,
    pub namespaced: bool,
    pub has_scale: bool,
    pub object: DynamicObject,
}

impl Target {
    pub fn key(&self, recommender: &str) -> IdentityKey {
        IdentityKey {
            kind: self.kind.clone(),
            api_version: self.api_version.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            recommender: recommender.to_string(),
        }
    }

    pub fn labels(&self) -> BTreeMap<String, String> {
        self.object.labels().clone()
    }

    /// What reads the workload's usage. Pods are matched with the served kind (the selector
    /// may spell it `deployment`; Crane reads the kind off the object).
    pub fn usage_queries(&self) -> UsageQueries {
        UsageQueries::of(&self.namespace, &self.name, &self.resource.kind)
    }
}

/// A selector that cannot be resolved; names the selector by index.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("resourceSelectors[{index}].kind: must not be empty")]
    EmptyKind { index: usize },
    #[error(
        "resourceSelectors[{index}]: the API server serves no kind {kind:?} in {api_version:?}"
    )]
    UnknownKind {
        index: usize,
        kind: String,
        api_version: String,
    },
    #[error("resourceSelectors[{index}].labelSelector: {message}")]
    LabelSelector { index: usize, message: String },
    #[error("namespaceSelector: set any: true or list matchNames")]
    NoNamespaces,
    #[error("listing {what}: {source}")]
    List {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// Resolves a selector's kind and apiVersion to the served resource (pure).
pub fn resolve(
    mapper: &ResourceMapper,
    index: usize,
    sel: &ResourceSelector,
) -> Result<(ApiResource, bool, bool), SelectError> {
    if sel.kind.trim().is_empty() {
        return Err(SelectError::EmptyKind { index });
    }
    let (group, version) = match sel.api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", sel.api_version.as_str()),
    };
    let unknown = || SelectError::UnknownKind {
        index,
        kind: sel.kind.clone(),
        api_version: sel.api_version.clone(),
    };
    let m = mapper.by_kind(group, &sel.kind).ok_or_else(unknown)?;
    if !group.is_empty() && !m.group.eq_ignore_ascii_case(group) {
        return Err(unknown());
    }
    let mut ar = m.api_resource();
    if !version.is_empty() {
        if !m.versions.iter().any(|v| v == version) {
            return Err(unknown());
        }
        ar.version = version.to_string();
        ar.api_version = if m.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", m.group)
        };
    }
    Ok((ar, m.namespaced, m.has_scale))
}

/// Objects per LIST call: a rule over thousands of workloads is read in pages, so neither the
/// API server nor craned holds one response body of every object at once.
const LIST_PAGE_SIZE: u32 = 500;

/// Drops what no recommender reads but a round would otherwise hold for every target: the
/// managedFields, kubectl's copy of the whole last applied object, and of a workload (anything
/// with a pod template) all but its replicas, selector and containers' names and resources.
/// Measured at 5,000 Deployments: the full objects as JSON values held ~23 KB each, over
/// 100 MB for a round.
fn trimmed(mut obj: DynamicObject) -> DynamicObject {
    obj.metadata.managed_fields = None;
    if let Some(annotations) = obj.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    if let Some(data) = workload_essentials(&obj.data) {
        obj.data = data;
    }
    obj
}

/// What the workload recommenders read of a workload, or None for objects without a pod
/// template (Nodes, Services, PersistentVolumes are kept whole).
fn workload_essentials(data: &Value) -> Option<Value> {
    let spec = data.get("spec")?;
    let containers = spec.pointer("/template/spec/containers")?.as_array()?;
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| {
            let mut kept = serde_json::Map::new();
            for key in ["name", "resources"] {
                if let Some(v) = c.get(key) {
                    kept.insert(key.to_string(), v.clone());
                }
            }
            Value::Object(kept)
        })
        .collect();
    let mut kept_spec = serde_json::Map::new();
    for key in ["replicas", "selector"] {
        if let Some(v) = spec.get(key) {
            kept_spec.insert(key.to_string(), v.clone());
        }
    }
    kept_spec.insert(
        "template".into(),
        json!({"spec": {"containers": containers}}),
    );
    Some(json!({"spec": kept_spec}))
}

const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Lists every target of a rule, deduplicated by (kind, apiVersion, namespace, name), sorted.
pub async fn select(
    client: &Client,
    mapper: &ResourceMapper,
    spec: &RecommendationRuleSpec,
) -> Result<Vec<Target>, SelectError> {
    let mut out: BTreeMap<(String, String, String, String), Target> = BTreeMap::new();
    for (index, sel) in spec.resource_selectors.iter().enumerate() {
        let (ar, namespaced, has_scale) = resolve(mapper, index, sel)?;
        let mut lp = ListParams::default();
        if let Some(ls) = &sel.label_selector {
            let s: Selector =
                ls.clone()
                    .try_into()
                    .map_err(
                        |e: kube::core::ParseExpressionError| SelectError::LabelSelector {
                            index,
                            message: e.to_string(),
                        },
                    )?;
            lp = lp.labels_from(&s);
        }
        if !sel.name.is_empty() {
            lp = lp.fields(&format!("metadata.name={}", sel.name));
        }
        let apis: Vec<Api<DynamicObject>> = if !namespaced || spec.namespace_selector.any {
            vec![Api::all_with(client.clone(), &ar)]
        } else if spec.namespace_selector.match_names.is_empty() {
            return Err(SelectError::NoNamespaces);
        } else {
            spec.namespace_selector
                .match_names
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, &ar))
                .collect()
        };
        for api in apis {
            let mut page = lp.clone().limit(LIST_PAGE_SIZE);
            loop {
                let list = api.list(&page).await.map_err(|source| SelectError::List {
                    what: format!("{} ({})", ar.plural, ar.api_version),
                    source,
                })?;
                let next = list.metadata.continue_.clone().filter(|c| !c.is_empty());
                for obj in list.items {
                    if obj.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    let obj = trimmed(obj);
                    let namespace = obj.namespace().unwrap_or_default();
                    let name = obj.name_any();
                    let api_version = if sel.api_version.is_empty() {
                        ar.api_version.clone()
                    } else {
                        sel.api_version.clone()
                    };
                    out.entry((
                        sel.kind.clone(),
                        api_version.clone(),
                        namespace.clone(),
                        name.clone(),
                    ))
                    .or_insert_with(|| Target {
                        kind: sel.kind.clone(),
                        api_version,
                        namespace,
                        name,
                        resource: ar.clone(),
                        namespaced,
                        has_scale,
                        object: obj,
                    });
                }
                match next {
                    Some(token) => page = lp.clone().limit(LIST_PAGE_SIZE).continue_token(&token),
                    None => break,
                }
            }
        }
    }
    Ok(out.into_values().collect())
}

/// Whether a recommender's `acceptedResources` list admits the kind (Crane's base filter);
/// an empty list accepts everything.
pub fn accepted(accepted: &[ResourceSelector], kind: &str, api_version: &str) -> bool {
    accepted.is_empty()
        || accepted
            .iter()
            .any(|a| a.kind == kind && (a.api_version.is_empty() || a.api_version == api_version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::kube::ResourceMapping;

    fn mapping(group: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceMapping {
        ResourceMapping {
            group: group.into(),
            version: "v1".into(),
            versions: vec!["v1".into()],
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            short_names: vec![],
            namespaced,
            has_scale: kind == "Deployment",
            verbs: vec!["list".into()],
        }
    }

    #[test]
    fn selectors_resolve_through_discovery() {
        let m = ResourceMapper::from_mappings(vec![
            mapping("apps", "Deployment", "deployments", true),
            mapping("", "Node", "nodes", false),
        ]);
        let sel = |kind: &str, av: &str| ResourceSelector {
            kind: kind.into(),
            api_version: av.into(),
            ..Default::default()
        };
        let (ar, ns, scale) = resolve(&m, 0, &sel("Deployment", "apps/v1")).unwrap();
        assert_eq!((ar.plural.as_str(), ns, scale), ("deployments", true, true));
        let (ar, ns, _) = resolve(&m, 0, &sel("Node", "v1")).unwrap();
        assert_eq!((ar.api_version.as_str(), ns), ("v1", false));
        let e = resolve(&m, 2, &sel("Deployment", "apps/v2")).unwrap_err();
        assert!(e.to_string().starts_with("resourceSelectors[2]"), "{e}");
        assert!(resolve(&m, 0, &sel("Rollout", "argoproj.io/v1alpha1")).is_err());
        assert!(matches!(
            resolve(&m, 1, &sel("", "v1")),
            Err(SelectError::EmptyKind { index: 1 })
        ));
    }

    #[test]
    fn trimming_keeps_what_recommenders_read() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "web", "namespace": "shop", "labels": {"app": "web"},
                "annotations": {
                    "team": "a",
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"big\": true}"
                },
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
            },
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{
                        "name": "app", "image": "web:1", "env": [{"name": "A", "value": "b"}],
                        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}
                    }]}
                }
            },
            "status": {"replicas": 3, "conditions": [{"type": "Available"}]}
        }))
        .unwrap();
        let t = trimmed(obj);
        assert!(t.metadata.managed_fields.is_none());
        let annotations = t.metadata.annotations.clone().unwrap();
        assert_eq!(annotations.len(), 1);
        assert_eq!(annotations["team"], "a");
        assert_eq!(t.metadata.labels.clone().unwrap()["app"], "web");
        assert_eq!(
            t.data,
            serde_json::json!({"spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{
                    "name": "app",
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}
                }]}}
            }})
        );
        // What the recommenders read is still there.
        let cs = crate::workload::template_containers(&t.data);
        assert_eq!(
            (cs[0].cpu_millis, cs[0].memory_bytes),
            (Some(250), Some(64 << 20))
        );
        assert_eq!(crate::workload::spec_replicas(&t.data), 3);
        // Objects without a pod template are kept whole.
        let svc: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "web"}}
        }))
        .unwrap();
        assert_eq!(trimmed(svc.clone()).data, svc.data);
    }

    #[test]
    fn accepted_resources() {
        let acc = vec![ResourceSelector {
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            ..Default::default()
        }];
        assert!(accepted(&acc, "Deployment", "apps/v1"));
        assert!(!accepted(&acc, "StatefulSet", "apps/v1"));
        assert!(accepted(&[], "Node", "v1"));
    }
}
