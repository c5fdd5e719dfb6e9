//! Driving the helm binary `hack/setup.sh` builds, and reading what it renders.
//!
//! Rendering (`helm lint`, `helm template`) needs no cluster, so [`Helm::locate`] finds the
//! binary without starting one: from the cluster env file when `FERROCRANE_E2E_ENV` names one
//! (its `FERROCRANE_BIN`), else from the cache directory `hack/lib.sh` uses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use serde_json::Value;

use crate::cluster::{Cluster, ClusterEnv, Kubectl};
use crate::process::repo_root;

/// The helm binary, optionally pointed at a cluster.
#[derive(Debug, Clone)]
pub struct Helm {
    pub bin: PathBuf,
    kubeconfig: Option<PathBuf>,
}

impl Helm {
    /// The helm binary, without a cluster (render-only commands).
    pub fn locate() -> Result<Self> {
        let bin_dir = if let Ok(env_file) = std::env::var("FERROCRANE_E2E_ENV") {
            ClusterEnv::read(Path::new(&env_file))?.path("FERROCRANE_BIN")?
        } else if let Ok(cache) = std::env::var("FERROCRANE_CACHE") {
            PathBuf::from(cache).join("bin")
        } else {
            let home = std::env::var("HOME").context("HOME is not set")?;
            PathBuf::from(home).join(".cache/ferrocrane/bin")
        };
        let bin = bin_dir.join("helm");
        if !bin.is_file() {
            bail!(
                "helm not found at {}: run hack/setup.sh --tests",
                bin.display()
            );
        }
        Ok(Self {
            bin,
            kubeconfig: None,
        })
    }

    /// The helm binary of `cluster`'s env file, talking to that cluster.
    pub fn for_cluster(cluster: &Cluster) -> Result<Self> {
        Ok(Self {
            bin: cluster.env.path("FERROCRANE_BIN")?.join("helm"),
            kubeconfig: Some(cluster.kubeconfig()?),
        })
    }

    /// The chart in this repository.
    pub fn chart() -> PathBuf {
        repo_root().join("charts/ferrocrane")
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        // A private cache/config so a developer's repositories and plugins play no part.
        let home = std::env::temp_dir().join("ferrocrane-e2e-helm-home");
        cmd.env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .stdin(Stdio::null());
        if let Some(kubeconfig) = &self.kubeconfig {
            cmd.env("KUBECONFIG", kubeconfig);
        }
        cmd
    }

    /// Runs helm with `args`, returning its output whatever the exit status.
    pub fn output(&self, args: &[&str]) -> Result<Output> {
        let mut cmd = self.command();
        cmd.args(args);
        cmd.output().with_context(|| format!("spawning {cmd:?}"))
    }

    /// Runs helm with `args`; fails with its output unless it exits 0.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args)?;
        if !out.status.success() {
            bail!(
                "helm {} exited with {}:\n{}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `helm template <release> <chart> --namespace <ns> <extra...>`, parsed.
    pub fn template(&self, release: &str, namespace: &str, extra: &[&str]) -> Result<Manifest> {
        let chart = Self::chart();
        let chart = chart.to_str().context("chart path is not UTF-8")?;
        let mut args = vec!["template", release, chart, "--namespace", namespace];
        args.extend_from_slice(extra);
        Manifest::parse(&self.run(&args)?)
    }
}

/// The objects of a rendered multi-document YAML stream.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub objects: Vec<Value>,
}

impl Manifest {
    /// Splits on `---` lines and parses each document; empty and comment-only documents are
    /// dropped.
    pub fn parse(text: &str) -> Result<Self> {
        let mut objects = Vec::new();
        let mut doc = String::new();
        let mut flush = |doc: &mut String| -> Result<()> {
            let meaningful = doc
                .lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
            if meaningful {
                let value: Value = ferrocrane_core::config::parse_yaml_str("manifest", doc)
                    .map_err(|e| anyhow!("{e}\n--- document ---\n{doc}"))?;
                if value.is_object() {
                    objects.push(value);
                }
            }
            doc.clear();
            Ok(())
        };
        for line in text.lines() {
            if line == "---" || line.starts_with("--- ") {
                flush(&mut doc)?;
            } else {
                doc.push_str(line);
                doc.push('\n');
            }
        }
        flush(&mut doc)?;
        Ok(Self { objects })
    }

    pub fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects.iter().filter(move |o| o["kind"] == kind)
    }

    pub fn get(&self, kind: &str, name: &str) -> Option<&Value> {
        self.objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
    }

    /// Objects labelled `app.kubernetes.io/component=<component>`.
    pub fn of_component<'a>(&'a self, component: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects
            .iter()
            .filter(move |o| o["metadata"]["labels"]["app.kubernetes.io/component"] == component)
    }

    /// `Kind/name` of every object, for failure messages.
    pub fn summary(&self) -> Vec<String> {
        self.objects
            .iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap_or("?"),
                    o["metadata"]["name"].as_str().unwrap_or("?")
                )
            })
            .collect()
    }
}

/// A cluster-wide mutual exclusion for tests that own something only one test can own at a
/// time, such as the real metrics APIServices (`v1beta1.metrics.k8s.io`, ...), whose names
/// are fixed by their API group. A Lease in kube-system is created to take the lock and
/// deleted when the guard drops; a Lease older than `stale_after` is assumed left by a
/// killed test and taken over.
#[derive(Debug)]
pub struct ClusterLock {
    name: String,
    kubectl: Kubectl,
}

/// The lock every test that registers the suite's real metrics APIServices takes.
pub const METRICS_APISERVICES_LOCK: &str = "ferrocrane-e2e-metrics-apiservices";

impl ClusterLock {
    pub async fn acquire(cluster: &Cluster, name: &str, timeout: Duration) -> Result<Self> {
        let stale_after = Duration::from_secs(600);
        let api: Api<Lease> = Api::namespaced(cluster.client().await?, "kube-system");
        let deadline = Instant::now() + timeout;
        loop {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    labels: Some([("ferrocrane.io/e2e".to_string(), "true".to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    return Ok(Self {
                        name: name.to_string(),
                        kubectl: cluster.kubectl_handle()?,
                    });
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    if let Some(held) = api.get_opt(name).await? {
                        let created = held.metadata.creation_timestamp.map(|t| t.0);
                        let age = created
                            .and_then(|c| {
                                std::time::SystemTime::now()
                                    .duration_since(std::time::SystemTime::from(c))
                                    .ok()
                            })
                            .unwrap_or_default();
                        if age > stale_after {
                            let _ = api.delete(name, &DeleteParams::default()).await;
                            continue;
                        }
                    }
                }
                Err(e) => return Err(e).context(format!("creating lock Lease {name}")),
            }
            if Instant::now() >= deadline {
                bail!("timed out after {timeout:?} waiting for cluster lock {name}");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

impl Drop for ClusterLock {
    fn drop(&mut self) {
        let _ = self
            .kubectl
            .command()
            .args([
                "-n",
                "kube-system",
                "delete",
                "lease",
                &self.name,
                "--ignore-not-found",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
