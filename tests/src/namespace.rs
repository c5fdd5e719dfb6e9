//! A namespace per test, so tests run in parallel without seeing each other's objects.

use anyhow::Result;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, PostParams};

use crate::cluster::{Cluster, Kubectl};
use crate::process::random_suffix;

#[derive(Debug)]
pub struct TestNamespace {
    pub name: String,
    kubectl: Kubectl,
}

// Beside the guard rather than in cluster.rs, so the cluster module needs nothing from here.
impl Cluster {
    /// A namespace for one test, deleted when the returned guard drops.
    pub async fn namespace(&self, prefix: &str) -> Result<TestNamespace> {
        TestNamespace::create(self, prefix).await
    }
}

impl TestNamespace {
    async fn create(cluster: &Cluster, prefix: &str) -> Result<Self> {
        let name = format!("{prefix}-{}", random_suffix());
        let api: kube::Api<Namespace> = kube::Api::all(cluster.client().await?);
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([("ferrocrane.io/e2e".to_string(), "true".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &ns).await?;
        Ok(Self {
            name,
            kubectl: cluster.kubectl_handle()?,
        })
    }
}

impl Drop for TestNamespace {
    /// Deletion is asynchronous in Kubernetes anyway; the test need not wait for it,
    /// and a destructor cannot await, so hand it to kubectl without waiting.
    fn drop(&mut self) {
        self.kubectl
            .delete_without_waiting(&["namespace", &self.name]);
    }
}
