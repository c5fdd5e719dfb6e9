//! A metrics-adapter process serving the cluster as an aggregated API server: started with
//! a given config against the cluster's Prometheus, with a serving certificate for the name
//! the aggregator verifies, and its five APIServices registered (and removed on drop).
//! Tests that use it hold [`crate::METRICS_APISERVICES_LOCK`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kube::api::{Api, PostParams};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use crate::cluster::{Cluster, Kubectl};
use crate::helm::METRICS_APISERVICES_LOCK;
use crate::ports::free_port;
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

/// How to run a metrics-adapter process the harness registers behind the APIServices.
pub struct AdapterLaunch {
    /// Every argument, the listener's included.
    pub args: Vec<String>,
    /// The `--secure-port` it listens on (loopback).
    pub port: u16,
    /// PEM of the CA that signed its serving certificate.
    pub ca: String,
    /// The Service name its certificate is for, in the namespace it is launched in.
    pub service: String,
    /// A directory removed with the adapter.
    pub dir: PathBuf,
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

fn pki(cluster: &Cluster, file: &str) -> Result<PathBuf> {
    Ok(cluster
        .env
        .path("FRONT_PROXY_CA")?
        .parent()
        .context("pki dir")?
        .join(file))
}

impl MetricsAdapter {
    /// Starts the adapter with the config text `config` against the cluster's Prometheus, waits until ready,
    /// registers the five APIServices (Service ExternalName localhost in `ns`) and waits until
    /// they are Available.
    pub async fn start(cluster: &Cluster, ns: &str, config: &str) -> Result<MetricsAdapter> {
        let prometheus = cluster.env.var("PROMETHEUS_URL")?.to_string();
        MetricsAdapter::start_on(cluster, ns, config, &prometheus, &[]).await
    }

    /// [`MetricsAdapter::start`] reading from `prometheus_url` (another backend), with
    /// `extra_args` after the usual ones.
    pub async fn start_on(
        cluster: &Cluster,
        ns: &str,
        config: &str,
        prometheus_url: &str,
        extra_args: &[String],
    ) -> Result<MetricsAdapter> {
        let dir = std::env::temp_dir().join(format!("ferrocrane-adapter-{ns}"));
        std::fs::create_dir_all(&dir)?;
        let config_file = dir.join("config.yaml");
        std::fs::write(&config_file, config)?;
        // A serving cert for the name the aggregator verifies: <service>.<namespace>.svc.
        let dns = format!("metrics-adapter.{ns}.svc");
        let (chain, key) = ferrocrane_core::server::generate_self_signed(
            &dns,
            &["127.0.0.1".parse()?],
            std::slice::from_ref(&dns),
        )?;
        let ca = chain
            .split_inclusive("-----END CERTIFICATE-----\n")
            .nth(1)
            .context("self-signed chain has no CA")?
            .to_owned();
        std::fs::write(dir.join("tls.crt"), &chain)?;
        std::fs::write(dir.join("tls.key"), &key)?;
        let port = free_port()?;
        let s = |p: PathBuf| p.display().to_string();
        let service = "metrics-adapter".to_owned();
        let mut args = vec![
            "--kubeconfig".into(),
            s(cluster.kubeconfig()?),
            "--prometheus-url".into(),
            prometheus_url.to_owned(),
            "--config".into(),
            s(config_file),
            "--bind-address".into(),
            "127.0.0.1".into(),
            "--secure-port".into(),
            port.to_string(),
            "--tls-cert-file".into(),
            s(dir.join("tls.crt")),
            "--tls-private-key-file".into(),
            s(dir.join("tls.key")),
            "--requestheader-client-ca-file".into(),
            s(cluster.env.path("FRONT_PROXY_CA")?),
            "--requestheader-allowed-names".into(),
            cluster.env.var("FRONT_PROXY_ALLOWED_NAMES")?.to_string(),
            "--metrics-relist-interval".into(),
            "3s".into(),
            "--metrics-max-age".into(),
            "10m".into(),
        ];
        args.extend_from_slice(extra_args);
        let launch = AdapterLaunch {
            args,
            port,
            ca,
            service,
            dir,
        };
        MetricsAdapter::launch(cluster, ns, launch, &[]).await
    }

    /// Starts the adapter as `launch` says (with `env`), waits until ready, registers the
    /// APIServices (an ExternalName Service for localhost named `launch.service` in `ns`) and
    /// waits until they are Available.
    pub async fn launch(
        cluster: &Cluster,
        ns: &str,
        launch: AdapterLaunch,
        env: &[(&str, &str)],
    ) -> Result<MetricsAdapter> {
        let AdapterLaunch {
            args,
            port,
            ca,
            service,
            dir,
        } = launch;
        let mut process = ServiceProcess::start_with_env("metrics-adapter", &args, env)?;
        // Reach it by the name its certificate is for, as the aggregator does.
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

/// A client trusting the adapter's serving CA; with `front_proxy`, presenting
/// kube-apiserver's front-proxy client certificate (as the aggregator does).
pub fn adapter_https_client(
    cluster: &Cluster,
    ca: &str,
    front_proxy: bool,
) -> Result<reqwest::Client> {
    adapter_https_client_resolving(cluster, ca, front_proxy, None)
}

/// [`adapter_https_client`], resolving one host name to a loopback address (a certificate
/// without an IP address is verified by its name).
pub fn adapter_https_client_resolving(
    cluster: &Cluster,
    ca: &str,
    front_proxy: bool,
    resolve: Option<(&str, std::net::SocketAddr)>,
) -> Result<reqwest::Client> {
    let builder = trusting(ca)?;
    let config = if front_proxy {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(pki(cluster, "front-proxy-client.crt")?)?
                .collect::<Result<_, _>>()?;
        let key = PrivateKeyDer::from_pem_file(pki(cluster, "front-proxy-client.key")?)?;
        builder.with_client_auth_cert(certs, key)?
    } else {
        builder.with_no_client_auth()
    };
    client_from(config, resolve)
}

/// A client trusting the adapter's serving CA and presenting the client certificate
/// `cert_pem` (with its key), whoever signed it: a forged front proxy, say.
pub fn adapter_https_client_presenting(
    ca: &str,
    cert_pem: &str,
    key_pem: &str,
) -> Result<reqwest::Client> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert_pem.as_bytes()).collect::<Result<_, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())?;
    let config = trusting(ca)?.with_client_auth_cert(certs, key)?;
    client_from(config, None)
}

fn trusting(
    ca: &str,
) -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(c?)?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots))
}

fn client_from(
    config: rustls::ClientConfig,
    resolve: Option<(&str, std::net::SocketAddr)>,
) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .timeout(Duration::from_secs(10));
    if let Some((host, addr)) = resolve {
        builder = builder.resolve(host, addr);
    }
    Ok(builder.build()?)
}

/// Upstream's flags for an adapter (ours or the Go original) that a test calls directly, as
/// the aggregator would (front-proxy client certificate, X-Remote-User/Group), serving the
/// cluster's aggregated serving certificate on loopback `port`.
pub fn front_proxied_adapter_args(
    cluster: &Cluster,
    port: u16,
    prometheus: &str,
    config: &str,
) -> Result<Vec<String>> {
    let env = &cluster.env;
    let kubeconfig = cluster.kubeconfig()?.display().to_string();
    let mut args: Vec<String> = vec![
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", env.var("AGGREGATED_SERVING_CERT")?),
        format!(
            "--tls-private-key-file={}",
            env.var("AGGREGATED_SERVING_KEY")?
        ),
        format!(
            "--requestheader-client-ca-file={}",
            env.var("FRONT_PROXY_CA")?
        ),
        format!(
            "--requestheader-allowed-names={}",
            env.var("FRONT_PROXY_ALLOWED_NAMES")?
        ),
        "--requestheader-username-headers=X-Remote-User".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        format!("--prometheus-url={prometheus}/"),
        format!("--config={config}"),
    ];
    for flag in [
        "--authentication-kubeconfig",
        "--authorization-kubeconfig",
        "--lister-kubeconfig",
    ] {
        args.push(format!("{flag}={kubeconfig}"));
    }
    Ok(args)
}

/// Our adapter called directly, as the aggregator would (front-proxy client certificate and
/// X-Remote-User/Group headers), without registering APIServices: tests that need no
/// aggregator path run beside each other this way.
pub struct FrontProxiedAdapter {
    pub process: ServiceProcess,
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    pub http: reqwest::Client,
}

impl FrontProxiedAdapter {
    /// Starts metrics-adapter with upstream's flags, the config text `config` (written to
    /// `dir`), Prometheus at `prometheus` and `extra_args` after the usual ones; waits until
    /// ready.
    pub async fn start(
        cluster: &Cluster,
        prometheus: &str,
        config: &str,
        dir: &std::path::Path,
        extra_args: &[&str],
    ) -> Result<FrontProxiedAdapter> {
        let port = free_port()?;
        let config_file = dir.join("config.yaml");
        std::fs::write(&config_file, config)?;
        let config_file = config_file.display().to_string();
        let mut args = front_proxied_adapter_args(cluster, port, prometheus, &config_file)?;
        args.extend(extra_args.iter().map(|a| (*a).to_owned()));
        let ca = std::fs::read_to_string(cluster.env.path("AGGREGATED_SERVING_CA")?)?;
        let mut process = ServiceProcess::start("metrics-adapter", &args)?;
        let base = format!("https://127.0.0.1:{port}");
        let http = adapter_https_client(cluster, &ca, true)?;
        process
            .wait_ready_using(&http, &format!("{base}/readyz"), Duration::from_secs(60))
            .await?;
        Ok(FrontProxiedAdapter {
            process,
            base,
            http,
        })
    }

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
