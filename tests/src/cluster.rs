//! Finding or starting the local control plane the tests run against.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, anyhow};

use crate::process::{random_suffix, repo_root, run};
use crate::prometheus::PrometheusHandle;

/// The `KEY=value` lines `hack/local-up.sh` writes to `DIR/env`.
#[derive(Debug, Clone)]
pub struct ClusterEnv {
    pub dir: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl ClusterEnv {
    pub fn read(env_file: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(env_file)
            .with_context(|| format!("reading cluster env file {}", env_file.display()))?;
        let vars = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let dir = env_file.parent().map(PathBuf::from).unwrap_or_default();
        Ok(Self { dir, vars })
    }

    /// A variable local-up.sh promises to write; a missing one means a stale or foreign env file.
    pub fn var(&self, key: &str) -> Result<&str> {
        self.vars.get(key).map(String::as_str).ok_or_else(|| {
            anyhow!(
                "{key} missing from {}/env: rerun hack/local-up.sh",
                self.dir.display()
            )
        })
    }

    pub fn path(&self, key: &str) -> Result<PathBuf> {
        self.var(key).map(PathBuf::from)
    }
}

/// A running local cluster. One per test process, shared by every test in it.
#[derive(Debug)]
pub struct Cluster {
    pub env: ClusterEnv,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();

impl Cluster {
    /// The cluster named by `FERROCRANE_E2E_ENV`, or one started for this test process.
    ///
    /// Starting blocks for the 10-20 s local-up.sh takes; every other test in the process
    /// waits for the same start rather than racing a second one.
    pub fn get() -> Result<&'static Cluster> {
        CLUSTER
            .get_or_init(|| Self::find_or_start().map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow!("local cluster unavailable: {e}"))
    }

    fn find_or_start() -> Result<Cluster> {
        if let Ok(env_file) = std::env::var("FERROCRANE_E2E_ENV") {
            return Ok(Cluster {
                env: ClusterEnv::read(Path::new(&env_file))?,
            });
        }
        let (cluster, _dir) = Self::start_in_new_dir("e2e")?;
        Ok(cluster)
    }

    /// Runs hack/local-up.sh in a new directory; a reaper stops it when this process exits.
    fn start_in_new_dir(prefix: &str) -> Result<(Cluster, PathBuf)> {
        let dir = std::env::temp_dir().join(format!(
            "ferrocrane-{prefix}-{}-{}",
            std::process::id(),
            random_suffix()
        ));
        std::fs::create_dir_all(&dir)?;
        let root = repo_root();
        run(Command::new(root.join("hack/local-up.sh")).arg(&dir).env("FERROCRANE_LOCAL_SERVICES", "")).context(
            "hack/local-up.sh failed; run hack/setup.sh to install the control plane, kubectl, kwok and prometheus",
        )?;
        spawn_reaper(&root, &dir)?;
        let cluster = Cluster {
            env: ClusterEnv::read(&dir.join("env"))?,
        };
        Ok((cluster, dir))
    }

    pub fn kubeconfig(&self) -> Result<PathBuf> {
        self.env.path("KUBECONFIG")
    }

    /// A fresh client; clients are per test because each `#[tokio::test]` has its own runtime.
    pub async fn client(&self) -> Result<kube::Client> {
        let kubeconfig = kube::config::Kubeconfig::read_from(self.kubeconfig()?)?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// `kubectl` pointed at this cluster.
    pub fn kubectl(&self) -> Result<Command> {
        Ok(self.kubectl_handle()?.command())
    }

    /// What [`Cluster::kubectl`] runs, to keep where a `&Cluster` is not at hand (a destructor).
    pub fn kubectl_handle(&self) -> Result<Kubectl> {
        Ok(Kubectl {
            bin: self.env.path("KUBECTL")?,
            kubeconfig: self.kubeconfig()?,
        })
    }

    pub fn prometheus(&self) -> Result<PrometheusHandle> {
        Ok(PrometheusHandle::new(
            self.env.var("PROMETHEUS_URL")?,
            self.env.path("PROMETHEUS_TARGETS")?,
        ))
    }
}

/// The kubectl `hack/setup.sh` builds at the API server's version (`KUBECTL` in the env file;
/// a machine's own kubectl may be outside the supported skew), with the cluster's kubeconfig.
#[derive(Debug, Clone)]
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.env("KUBECONFIG", &self.kubeconfig);
        cmd
    }

    /// `kubectl delete ARGS --ignore-not-found --wait=false`, its outcome ignored: what a
    /// test guard's destructor runs (it cannot await, and deletion is asynchronous anyway).
    pub fn delete_without_waiting(&self, args: &[&str]) {
        let _ = self
            .command()
            .arg("delete")
            .args(args)
            .args(["--ignore-not-found", "--wait=false"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Stops a cluster this process started once the process is gone, whatever way it ends:
/// statics are never dropped, so teardown cannot live in a destructor.
/// A control plane of its own, for a test that changes cluster-wide objects the shared
/// cluster's other tests rely on (another project's CRDs under the same names). Stopped when
/// dropped (or, if the test process dies, by its reaper).
pub struct PrivateCluster {
    pub cluster: Cluster,
    dir: PathBuf,
}

impl PrivateCluster {
    /// Starts one (hack/local-up.sh, 10-30 s).
    pub fn start(prefix: &str) -> Result<Self> {
        let (cluster, dir) = Cluster::start_in_new_dir(prefix)?;
        Ok(Self { cluster, dir })
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("hack/local-down.sh"))
            .arg(&self.dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn_reaper(root: &Path, dir: &Path) -> Result<()> {
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; '{down}' '{dir}' >/dev/null 2>&1; rm -rf '{dir}'",
        pid = std::process::id(),
        down = root.join("hack/local-down.sh").display(),
        dir = dir.display(),
    );
    Command::new("setsid")
        .args(["bash", "-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("spawning the cluster reaper")?;
    Ok(())
}
