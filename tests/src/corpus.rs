//! A corpus of objects for the differential tests: a multi-document YAML file under
//! `tests/corpus/`, with `__NS__` standing for the test's namespace (cluster-scoped objects
//! carry it in their names), created through the API server and then given their `status`
//! through the status subresource, as a controller would write it.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

use crate::cluster::{Cluster, Kubectl};
use crate::helm::Manifest;
use crate::process::repo_root;

/// The label every corpus object carries, with the namespace as its value, so
/// what one run created can be deleted (and never collides with another run's).
pub const CORPUS_LABEL: &str = "e2e.ferrocrane.io/corpus";

/// Created objects; the cluster-scoped ones are deleted on drop (namespaced ones go with
/// the test namespace).
pub struct Corpus {
    pub objects: usize,
    namespace: String,
    cluster_kinds: BTreeSet<String>,
    kubectl: Kubectl,
}

impl Corpus {
    /// Creates every object of `tests/corpus/<file>` in `namespace`.
    pub async fn create(cluster: &Cluster, file: &str, namespace: &str) -> Result<Self> {
        let path = repo_root().join("tests/corpus").join(file);
        let objects = read(&path, namespace)?;
        let client = cluster.client().await?;
        let discovery = Discovery::new(client.clone()).run().await?;
        let mut cluster_kinds = BTreeSet::new();
        for mut object in objects.iter().cloned() {
            let status = object.as_object_mut().and_then(|o| o.remove("status"));
            let gvk = gvk_of(&object)?;
            let (resource, caps) = discovery
                .resolve_gvk(&gvk)
                .ok_or_else(|| anyhow!("the API server does not serve {gvk:?}"))?;
            let api: Api<DynamicObject> = match caps.scope {
                Scope::Namespaced => Api::namespaced_with(client.clone(), namespace, &resource),
                Scope::Cluster => {
                    cluster_kinds.insert(resource.plural.clone());
                    Api::all_with(client.clone(), &resource)
                }
            };
            let object: DynamicObject = serde_json::from_value(object)?;
            let name = object.metadata.name.clone().unwrap_or_default();
            api.create(&PostParams::default(), &object)
                .await
                .with_context(|| format!("creating {} {name}", gvk.kind))?;
            if let Some(status) = status {
                // A CSR's Approved/Denied conditions are written through /approval, as
                // `kubectl certificate approve` does; other statuses through /status.
                let subresource = if gvk.kind == "CertificateSigningRequest" {
                    "approval"
                } else {
                    "status"
                };
                api.patch_subresource(
                    subresource,
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": status })),
                )
                .await
                .with_context(|| format!("writing the {subresource} of {} {name}", gvk.kind))?;
            }
        }
        Ok(Self {
            objects: objects.len(),
            namespace: namespace.to_string(),
            cluster_kinds,
            kubectl: cluster.kubectl_handle()?,
        })
    }
}

impl Drop for Corpus {
    /// A destructor cannot await: hand the deletion to kubectl without waiting.
    fn drop(&mut self) {
        if self.cluster_kinds.is_empty() {
            return;
        }
        let kinds = self
            .cluster_kinds
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(",");
        let selector = format!("{CORPUS_LABEL}={}", self.namespace);
        self.kubectl
            .delete_without_waiting(&[&kinds, "-l", &selector]);
    }
}

/// The corpus file's objects with `__NS__` replaced; every object is labelled
/// with [`CORPUS_LABEL`] here (what cleanup selects cluster-scoped ones by), so the file need not
/// repeat it.
fn read(path: &Path, namespace: &str) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the corpus {}", path.display()))?;
    let manifest = Manifest::parse(&text.replace("__NS__", namespace))?;
    let mut objects = manifest.objects;
    for object in &mut objects {
        let labels = object
            .pointer_mut("/metadata")
            .and_then(Value::as_object_mut)
            .map(|m| m.entry("labels").or_insert_with(|| json!({})));
        if let Some(Value::Object(labels)) = labels {
            labels.insert(CORPUS_LABEL.into(), Value::String(namespace.into()));
        }
    }
    Ok(objects)
}

fn gvk_of(object: &Value) -> Result<GroupVersionKind> {
    let api_version = object["apiVersion"]
        .as_str()
        .ok_or_else(|| anyhow!("a corpus object without apiVersion: {object}"))?;
    let kind = object["kind"]
        .as_str()
        .ok_or_else(|| anyhow!("a corpus object without kind: {object}"))?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Ok(GroupVersionKind::gvk(group, version, kind))
}
