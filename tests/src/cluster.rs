//! Finding or starting the local control plane the tests run against.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};

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
        let (cluster, _dir) = Self::start_in_new_dir("e2e", "")?;
        Ok(cluster)
    }

    /// Runs hack/local-up.sh in a new directory (`apiserver_args`: extra kube-apiserver flags);
    /// a reaper stops it when this process exits.
    fn start_in_new_dir(prefix: &str, apiserver_args: &str) -> Result<(Cluster, PathBuf)> {
        let dir = std::env::temp_dir().join(format!(
            "ferrocrane-{prefix}-{}-{}",
            std::process::id(),
            random_suffix()
        ));
        std::fs::create_dir_all(&dir)?;
        let root = repo_root();
        run(Command::new(root.join("hack/local-up.sh"))
            .arg(&dir)
            .env("FERROCRANE_LOCAL_SERVICES", "")
            .env("FERROCRANE_APISERVER_ARGS", apiserver_args))
        .context(
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

    /// `kubectl get --raw PATH` (optionally `--as USER`), through the aggregator as a user's
    /// kubectl goes: Ok(the JSON) or Err(kubectl's stderr).
    pub async fn get_raw(
        &self,
        path: &str,
        as_user: Option<&str>,
    ) -> Result<std::result::Result<serde_json::Value, String>> {
        let mut cmd = self.kubectl()?;
        cmd.args(["get", "--raw", path]);
        if let Some(u) = as_user {
            cmd.args(["--as", u]);
        }
        let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
        if out.status.success() {
            Ok(Ok(serde_json::from_slice(&out.stdout).with_context(
                || format!("{path}: {}", String::from_utf8_lossy(&out.stdout)),
            )?))
        } else {
            Ok(Err(String::from_utf8_lossy(&out.stderr).into_owned()))
        }
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
        Self::start_with_apiserver_args(prefix, "")
    }

    /// [`PrivateCluster::start`] with extra kube-apiserver flags (whitespace-separated).
    pub fn start_with_apiserver_args(prefix: &str, apiserver_args: &str) -> Result<Self> {
        let (cluster, dir) = Cluster::start_in_new_dir(prefix, apiserver_args)?;
        Ok(Self { cluster, dir })
    }

    /// Stops kube-apiserver (SIGTERM, as a rolling restart does; SIGKILL when it has not exited
    /// 20 s later), runs `while_down`, starts it
    /// again with the same command line and waits until it is ready. Every watch and
    /// connection to it breaks. The new process replaces the old one in `DIR/pids`, so
    /// hack/local-down.sh stops it.
    pub fn restart_apiserver(&self, while_down: impl FnOnce() -> Result<()>) -> Result<()> {
        let pids_file = self.dir.join("pids");
        let pids = std::fs::read_to_string(&pids_file)?;
        let (pid, exe) = pids
            .lines()
            .find_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some("kube-apiserver")).then(|| Some((f.next()?, f.next()?)))?
            })
            .context("kube-apiserver is not in the cluster's pids file")?;
        let raw = std::fs::read(format!("/proc/{pid}/cmdline"))
            .context("kube-apiserver is not running")?;
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        run(Command::new("kill").args(["-TERM", pid]))?;
        let gone = Instant::now() + Duration::from_secs(60);
        // An exited process whose parent (local-up.sh's, long gone) is not reaped stays a
        // zombie: state Z in /proc/PID/stat, after the command's parenthesised name.
        let running = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| Some(s.rsplit_once(") ")?.1.starts_with(['Z', 'X'])))
                .is_some_and(|dead| !dead)
        };
        // It waits for its open requests; a client that stopped reading (a frozen process)
        // can hold it, so after 20 s it is killed, as a crashed API server would be.
        let mut killed = false;
        while running() {
            if !killed && Instant::now() + Duration::from_secs(40) > gone {
                run(Command::new("kill").args(["-KILL", pid]))?;
                killed = true;
            }
            ensure!(
                Instant::now() < gone,
                "kube-apiserver {pid} did not stop in 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        while_down()?;
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("logs/kube-apiserver.log"))?;
        let child = Command::new("setsid")
            .args(&argv)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting kube-apiserver again")?;
        // setsid execs in place, so the child's pid is kube-apiserver's.
        let new_pid = child.id().to_string();
        let rewritten: String = pids
            .lines()
            .map(|l| {
                if l.split_whitespace().next() == Some("kube-apiserver") {
                    format!("kube-apiserver {new_pid} {exe}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&pids_file, rewritten)?;
        let ready = Instant::now() + Duration::from_secs(120);
        loop {
            let out = self
                .cluster
                .kubectl()?
                .args(["get", "--raw", "/readyz"])
                .output()?;
            if out.status.success() {
                return Ok(());
            }
            ensure!(
                Instant::now() < ready,
                "kube-apiserver not ready 120 s after its restart"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Compacts etcd's history up to its current revision (through etcd's JSON gateway), as
    /// kube-apiserver's periodic compaction does: a watch resumed from an older
    /// resourceVersion is then answered 410 Gone.
    pub fn compact_etcd(&self) -> Result<i64> {
        let etcd = self.cluster.env.var("ETCD_URL")?;
        // Any key's range answer carries the store's current revision in its header.
        let range = run(Command::new("curl").args([
            "-sf",
            "-X",
            "POST",
            &format!("{etcd}/v3/kv/range"),
            "-d",
            r#"{"key":"AA==","limit":1}"#,
        ]))?;
        let header: serde_json::Value = serde_json::from_str(&range)?;
        let revision: i64 = header["header"]["revision"]
            .as_str()
            .context("etcd's range answer has no revision")?
            .parse()?;
        run(Command::new("curl").args([
            "-sf",
            "-X",
            "POST",
            &format!("{etcd}/v3/kv/compaction"),
            "-d",
            &format!(r#"{{"revision":"{revision}","physical":true}}"#),
        ]))?;
        Ok(revision)
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
