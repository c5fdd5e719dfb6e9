//! A metrics-adapter process in a test, started by [`AdapterLaunch`] one of two ways:
//! behind the aggregator ([`MetricsAdapter`]: a serving certificate for the name the
//! aggregator verifies, its five APIServices registered and removed on drop; tests that use
//! it hold [`crate::METRICS_APISERVICES_LOCK`]), or called directly as the aggregator would
//! call it ([`FrontProxiedAdapter`]), so such tests run beside each other.

mod clients;
mod launch;

pub use clients::{
    adapter_https_client, adapter_https_client_presenting, adapter_https_client_resolving,
};
pub use launch::AdapterLaunch;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kube::api::{Api, PostParams};

use crate::cluster::{Cluster, Kubectl};
use crate::helm::METRICS_APISERVICES_LOCK;
use crate::service::ServiceProcess;
use crate::wait::wait_until;

/// The APIServices metrics-adapter serves, as (version, group).
pub const METRICS_APISERVICES: [(&str, &str); 5] = [
    ("v1", "metrics.k8s.io"),
    ("v1beta1", "metrics.k8s.io"),
    ("v1beta1", "custom.metrics.k8s.io"),
    ("v1beta2", "custom.metrics.k8s.io"),
    ("v1beta1", "external.metrics.k8s.io"),
];

/// A metrics-adapter process with its APIServices registered; unregisters them on drop.
pub struct MetricsAdapter {
    pub process: ServiceProcess,
    pub port: u16,
    /// PEM of the CA that signed the adapter's serving certificate.
    pub ca: String,
    kubectl: Kubectl,
    /// Where its config file (`config.yaml`) and serving certificate live.
    pub dir: PathBuf,
    /// The Service the APIServices name (the serving certificate is for `<service>.<ns>.svc`).
    service: String,
}

impl Drop for MetricsAdapter {
    fn drop(&mut self) {
        let names: Vec<String> = METRICS_APISERVICES
            .iter()
            .map(|(v, g)| format!("{v}.{g}"))
            .collect();
        let mut args = vec!["apiservice"];
        args.extend(names.iter().map(String::as_str));
        self.kubectl.delete_without_waiting(&args);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl MetricsAdapter {
    /// Waits until `process` is ready (reached by the name its certificate is for, as the
    /// aggregator reaches it), then registers it and waits until its APIServices are Available.
    pub(crate) async fn register_when_ready(
        cluster: &Cluster,
        ns: &str,
        mut process: ServiceProcess,
        port: u16,
        ca: String,
        service: String,
        dir: PathBuf,
    ) -> Result<MetricsAdapter> {
        let host = format!("{service}.{ns}.svc");
        let client = adapter_https_client_resolving(
            cluster,
            &ca,
            false,
            Some((&host, std::net::SocketAddr::from(([127, 0, 0, 1], port)))),
        )?;
        let url = format!("https://{host}:{port}/readyz");
        let ready = process
            .wait_ready_using(&client, &url, Duration::from_secs(60))
            .await;
        if let Err(e) = ready {
            bail!("{e:#}\nlog:\n{}", process.logs());
        }
        let adapter = MetricsAdapter {
            process,
            port,
            ca,
            kubectl: cluster.kubectl_handle()?,
            dir,
            service,
        };
        adapter.register(cluster, ns).await?;
        Ok(adapter)
    }

    async fn register(&self, cluster: &Cluster, ns: &str) -> Result<()> {
        let ca = self.ca.clone().into_bytes();
        let client = cluster.client().await?;
        let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": self.service},
            "spec": {"type": "ExternalName", "externalName": "localhost",
                     "ports": [{"port": self.port, "protocol": "TCP"}]}
        }))?;
        Api::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &svc)
            .await?;
        let apiservices: Api<
            k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
        > = Api::all(client.clone());
        for (version, group) in METRICS_APISERVICES {
            let name = format!("{version}.{group}");
            let obj = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "labels": {"ferrocrane.io/e2e": "true"}},
                "spec": {
                    "group": group, "version": version,
                    "groupPriorityMinimum": 100, "versionPriority": 100,
                    "caBundle": k8s_openapi::ByteString(ca.clone()),
                    "service": {"namespace": ns, "name": self.service, "port": self.port}
                }
            }))?;
            if apiservices.get_opt(&name).await?.is_some() {
                bail!(
                    "APIService {name} already exists although {METRICS_APISERVICES_LOCK} is held"
                );
            }
            apiservices.create(&PostParams::default(), &obj).await?;
        }
        for (version, group) in METRICS_APISERVICES {
            let name = format!("{version}.{group}");
            let api = apiservices.clone();
            wait_until(
                &format!("APIService {name} Available"),
                Duration::from_secs(90),
                || {
                    let api = api.clone();
                    let name = name.clone();
                    async move {
                        let obj = api.get(&name).await?;
                        let conditions = obj.status.and_then(|s| s.conditions).unwrap_or_default();
                        let available = conditions
                            .iter()
                            .find(|c| c.type_ == "Available")
                            .map(|c| (c.status == "True", c.message.clone()));
                        match available {
                            Some((true, _)) => Ok(Some(())),
                            Some((false, msg)) => bail!("not Available: {msg:?}"),
                            None => Ok(None),
                        }
                    }
                },
            )
            .await
            .with_context(|| format!("adapter log:\n{}", self.process.logs()))?;
        }
        Ok(())
    }
}

/// Our adapter called directly, as the aggregator would (front-proxy client certificate and
/// X-Remote-User/Group headers), without registering APIServices: tests that need no
/// aggregator path run beside each other this way.
pub struct FrontProxiedAdapter {
    pub process: ServiceProcess,
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    pub http: reqwest::Client,
    /// Its config file; removed with it.
    pub(crate) dir: PathBuf,
}

impl Drop for FrontProxiedAdapter {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl FrontProxiedAdapter {
    /// GETs `path` as a system:masters user: (status, JSON body or `null`).
    pub async fn get(&self, path: &str) -> Result<(u16, serde_json::Value)> {
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .header("X-Remote-User", "ferrocrane-e2e")
            .header("X-Remote-Group", "system:masters")
            .send()
            .await?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await?;
        Ok((
            status,
            serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        ))
    }

    /// What the adapter logged after byte `offset` of its log.
    pub fn lines_after(&self, offset: usize) -> String {
        self.process.logs().get(offset..).unwrap_or("").to_owned()
    }
}
