//! The one way a test starts a metrics-adapter (ours, or the Go original with the same
//! flags): config written to a scratch directory, upstream's flag names, a free port, and
//! readiness; then reached either through the aggregator (APIServices registered) or
//! directly, as the aggregator would call it (front-proxy client certificate).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use super::clients::adapter_https_client;
use super::{FrontProxiedAdapter, MetricsAdapter};
use crate::cluster::Cluster;
use crate::ports::free_port;
use crate::process::random_suffix;
use crate::service::{ServiceProcess, binary};

/// How to start a metrics-adapter: built with [`AdapterLaunch::new`] and the setters, then
/// started with [`AdapterLaunch::behind_aggregator`] or [`AdapterLaunch::front_proxied`].
pub struct AdapterLaunch {
    config: Config,
    prometheus: Option<String>,
    relist_interval: String,
    max_age: String,
    extra: Vec<String>,
    env: Vec<(String, String)>,
    program: Option<(String, PathBuf)>,
}

enum Config {
    Text(String),
    File(PathBuf),
    /// Every flag given by the caller (the chart's own, say), serving `port` with a
    /// certificate from `ca` for `<service>.<namespace>.svc`.
    Flags {
        args: Vec<String>,
        port: u16,
        ca: String,
        service: String,
    },
}

/// A fresh directory for one adapter's files; the adapter removes it when dropped.
fn scratch_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ferrocrane-adapter-{}", random_suffix()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

impl AdapterLaunch {
    /// The adapter with the config text `config`, reading the cluster's Prometheus.
    pub fn new(config: &str) -> AdapterLaunch {
        AdapterLaunch::with(Config::Text(config.to_owned()))
    }

    /// The adapter with the config file at `path`.
    pub fn config_file(path: &Path) -> AdapterLaunch {
        AdapterLaunch::with(Config::File(path.to_owned()))
    }

    /// Exactly `args` (flags rendered by the chart, say): the harness adds none, but still
    /// registers the adapter behind the aggregator as the Service `service`, whose
    /// certificate `ca` signed, listening on loopback `port`.
    pub fn flags(args: Vec<String>, port: u16, ca: String, service: String) -> AdapterLaunch {
        AdapterLaunch::with(Config::Flags {
            args,
            port,
            ca,
            service,
        })
    }

    fn with(config: Config) -> AdapterLaunch {
        AdapterLaunch {
            config,
            prometheus: None,
            relist_interval: "3s".into(),
            max_age: "10m".into(),
            extra: Vec::new(),
            env: Vec::new(),
            program: None,
        }
    }

    /// Reads Prometheus at `url` (a fault proxy or another backend) instead of the cluster's.
    pub fn prometheus(mut self, url: &str) -> AdapterLaunch {
        self.prometheus = Some(url.to_owned());
        self
    }

    /// `--metrics-relist-interval` and `--metrics-max-age` (3s and 10m unless set).
    pub fn relist(mut self, interval: &str, max_age: &str) -> AdapterLaunch {
        self.relist_interval = interval.to_owned();
        self.max_age = max_age.to_owned();
        self
    }

    /// One more flag, after the harness's.
    pub fn arg(mut self, arg: impl Into<String>) -> AdapterLaunch {
        self.extra.push(arg.into());
        self
    }

    /// An environment variable for the process.
    pub fn env(mut self, name: &str, value: &str) -> AdapterLaunch {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Runs the executable at `bin` (the Go prometheus-adapter), named `name`, instead of ours.
    pub fn program(mut self, name: &str, bin: PathBuf) -> AdapterLaunch {
        self.program = Some((name.to_owned(), bin));
        self
    }

    /// Starts it, waits until ready, registers the five APIServices (an ExternalName Service
    /// for localhost in `ns`) and waits until the aggregator finds each Available.
    pub async fn behind_aggregator(self, cluster: &Cluster, ns: &str) -> Result<MetricsAdapter> {
        let dir = scratch_dir()?;
        let (args, port, ca, service) = match &self.config {
            Config::Flags {
                args,
                port,
                ca,
                service,
            } => (args.clone(), *port, ca.clone(), service.clone()),
            Config::Text(_) | Config::File(_) => {
                let service = "metrics-adapter".to_owned();
                // A serving certificate for the name the aggregator verifies.
                let dns = format!("{service}.{ns}.svc");
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
                let (cert_file, key_file) = (dir.join("tls.crt"), dir.join("tls.key"));
                std::fs::write(&cert_file, &chain)?;
                std::fs::write(&key_file, &key)?;
                let port = free_port()?;
                let mut args = self.common_args(cluster, &dir, "")?;
                args.extend([
                    format!("--kubeconfig={}", cluster.kubeconfig()?.display()),
                    format!("--secure-port={port}"),
                    format!("--tls-cert-file={}", cert_file.display()),
                    format!("--tls-private-key-file={}", key_file.display()),
                ]);
                (args, port, ca, service)
            }
        };
        let args = self.with_extra(args);
        let process = self.spawn(&args)?;
        MetricsAdapter::register_when_ready(cluster, ns, process, port, ca, service, dir).await
    }

    /// Starts it serving the cluster's aggregated serving certificate on loopback, for a
    /// test to call directly as the aggregator would; waits until ready.
    pub async fn front_proxied(self, cluster: &Cluster) -> Result<FrontProxiedAdapter> {
        let mut adapter = self.spawn_front_proxied(cluster)?;
        let readyz = format!("{}/readyz", adapter.base);
        adapter
            .process
            .wait_ready_using(&adapter.http, &readyz, Duration::from_secs(60))
            .await?;
        Ok(adapter)
    }

    /// [`AdapterLaunch::front_proxied`] without waiting: for a test that judges start-up
    /// itself (a config the adapter may refuse).
    pub fn spawn_front_proxied(self, cluster: &Cluster) -> Result<FrontProxiedAdapter> {
        let dir = scratch_dir()?;
        let env = &cluster.env;
        let port = free_port()?;
        let kubeconfig = cluster.kubeconfig()?.display().to_string();
        // The Go original joins query paths onto the URL's path: give it a directory.
        let mut args = self.common_args(cluster, &dir, "/")?;
        args.extend([
            format!("--secure-port={port}"),
            format!("--tls-cert-file={}", env.var("AGGREGATED_SERVING_CERT")?),
            format!(
                "--tls-private-key-file={}",
                env.var("AGGREGATED_SERVING_KEY")?
            ),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            format!("--lister-kubeconfig={kubeconfig}"),
        ]);
        let args = self.with_extra(args);
        let process = self.spawn(&args)?;
        let ca = std::fs::read_to_string(env.path("AGGREGATED_SERVING_CA")?)?;
        Ok(FrontProxiedAdapter {
            process,
            base: format!("https://127.0.0.1:{port}"),
            http: adapter_https_client(cluster, &ca, true)?,
            dir,
        })
    }

    /// The flags both ways share: Prometheus (`prometheus_suffix` appended to its URL),
    /// config, relist, loopback, the front proxy's CA.
    fn common_args(
        &self,
        cluster: &Cluster,
        dir: &Path,
        prometheus_suffix: &str,
    ) -> Result<Vec<String>> {
        let config = match &self.config {
            Config::Text(text) => {
                let file = dir.join("config.yaml");
                std::fs::write(&file, text)?;
                file
            }
            Config::File(path) => path.clone(),
            Config::Flags { .. } => anyhow::bail!("an adapter launched with the caller's flags"),
        };
        let env = &cluster.env;
        let prometheus = match &self.prometheus {
            Some(url) => url.clone(),
            None => env.var("PROMETHEUS_URL")?.to_owned(),
        };
        Ok(vec![
            "--bind-address=127.0.0.1".into(),
            format!("--prometheus-url={prometheus}{prometheus_suffix}"),
            format!("--config={}", config.display()),
            format!("--metrics-relist-interval={}", self.relist_interval),
            format!("--metrics-max-age={}", self.max_age),
            format!(
                "--requestheader-client-ca-file={}",
                env.var("FRONT_PROXY_CA")?
            ),
            format!(
                "--requestheader-allowed-names={}",
                env.var("FRONT_PROXY_ALLOWED_NAMES")?
            ),
        ])
    }

    fn with_extra(&self, mut args: Vec<String>) -> Vec<String> {
        args.extend(self.extra.iter().cloned());
        args
    }

    fn spawn(&self, args: &[String]) -> Result<ServiceProcess> {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        match &self.program {
            Some((name, bin)) => ServiceProcess::start_program(name, bin, args, &env),
            None => ServiceProcess::start_program(
                "metrics-adapter",
                &binary("metrics-adapter")?,
                args,
                &env,
            ),
        }
    }
}
