//! The one way a test starts craned: the harness's flags (kubeconfig, Prometheus, the
//! recommendation configuration, two free loopback ports, leader election, debug logs),
//! the caller's additions, and readiness on the health port.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::cluster::Cluster;
use crate::ports::two_ports;
use crate::process::repo_root;
use crate::service::ServiceProcess;

/// How to start craned: [`CranedLaunch::new`] and the setters, then [`CranedLaunch::start`]
/// (as often as a test restarts it).
#[derive(Clone)]
pub struct CranedLaunch {
    flags: Flags,
    metrics_port: u16,
    health_port: u16,
    leader_elect: bool,
    extra: Vec<String>,
    env: Vec<(String, String)>,
}

#[derive(Clone)]
enum Flags {
    Harness {
        kubeconfig: PathBuf,
        prometheus: String,
        config: PathBuf,
        namespace: String,
    },
    /// Every flag given by the caller (the chart's own, say).
    Given(Vec<String>),
}

impl CranedLaunch {
    /// craned on `cluster` reading `prometheus`, with the recommendation configuration at
    /// `config`, its Lease and OOM records in `namespace`; no leader election unless asked.
    pub fn new(
        cluster: &Cluster,
        prometheus: &str,
        config: &Path,
        namespace: &str,
    ) -> Result<CranedLaunch> {
        let (metrics_port, health_port) = two_ports()?;
        Ok(CranedLaunch {
            flags: Flags::Harness {
                kubeconfig: cluster.kubeconfig()?,
                prometheus: prometheus.to_owned(),
                config: config.to_owned(),
                namespace: namespace.to_owned(),
            },
            metrics_port,
            health_port,
            leader_elect: false,
            extra: Vec::new(),
            env: Vec::new(),
        })
    }

    /// [`CranedLaunch::new`] with the cluster's Prometheus and the repository's example
    /// configuration (config/craned/recommendation-configuration.yaml).
    pub fn example(cluster: &Cluster, namespace: &str) -> Result<CranedLaunch> {
        let config = repo_root().join("config/craned/recommendation-configuration.yaml");
        CranedLaunch::new(
            cluster,
            cluster.env.var("PROMETHEUS_URL")?,
            &config,
            namespace,
        )
    }

    /// Exactly `args` (flags rendered by the chart, say), which must bind the health probe
    /// to loopback `health_port`; the harness adds none.
    pub fn flags(args: Vec<String>, metrics_port: u16, health_port: u16) -> CranedLaunch {
        CranedLaunch {
            flags: Flags::Given(args),
            metrics_port,
            health_port,
            leader_elect: false,
            extra: Vec::new(),
            env: Vec::new(),
        }
    }

    /// With `--leader-elect=true` (a Lease named `craned` in its namespace).
    pub fn leader_elect(mut self) -> CranedLaunch {
        self.leader_elect = true;
        self
    }

    /// One more flag, after the harness's.
    pub fn arg(mut self, arg: impl Into<String>) -> CranedLaunch {
        self.extra.push(arg.into());
        self
    }

    /// An environment variable for the process (the downward API's, say).
    pub fn env(mut self, name: &str, value: &str) -> CranedLaunch {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Another replica: the same flags on two fresh ports.
    pub fn replica(&self) -> Result<CranedLaunch> {
        let (metrics_port, health_port) = two_ports()?;
        Ok(CranedLaunch {
            metrics_port,
            health_port,
            ..self.clone()
        })
    }

    /// `127.0.0.1:<port>` of its /metrics.
    pub fn metrics_addr(&self) -> String {
        format!("127.0.0.1:{}", self.metrics_port)
    }

    pub fn metrics_port(&self) -> u16 {
        self.metrics_port
    }

    pub fn health_port(&self) -> u16 {
        self.health_port
    }

    /// Every flag it starts with.
    pub fn args(&self) -> Vec<String> {
        let mut args = match &self.flags {
            Flags::Given(args) => args.clone(),
            Flags::Harness {
                kubeconfig,
                prometheus,
                config,
                namespace,
            } => vec![
                format!("--kubeconfig={}", kubeconfig.display()),
                format!("--prometheus-address={prometheus}"),
                format!("--recommendation-configuration-file={}", config.display()),
                format!("--metrics-bind-address={}", self.metrics_addr()),
                format!("--health-probe-bind-address=127.0.0.1:{}", self.health_port),
                format!("--leader-elect={}", self.leader_elect),
                format!("--pod-namespace={namespace}"),
                "--log-level=info,ferrocrane_craned=debug".to_owned(),
                // Far above any answer the tests' histories give; the fault test goes past it.
                "--prometheus-max-response-size=4Mi".to_owned(),
            ],
        };
        args.extend(self.extra.iter().cloned());
        args
    }

    /// Starts it and waits until its health port answers /readyz.
    pub async fn start(&self) -> Result<ServiceProcess> {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut craned = ServiceProcess::start_with_env("craned", &self.args(), &env)?;
        craned
            .wait_ready(
                &format!("http://127.0.0.1:{}/readyz", self.health_port),
                Duration::from_secs(60),
            )
            .await?;
        Ok(craned)
    }
}
