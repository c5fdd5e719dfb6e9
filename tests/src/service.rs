//! Running a ferrocrane binary (ksm, metrics-adapter, craned) as its own process, the way
//! it runs in a cluster: flags in, HTTP out, SIGTERM to stop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::process::{http_client, random_suffix};
use crate::wait::wait_until;

/// Where `cargo build` put the workspace binaries: beside the test executable's `deps/`.
pub fn binary(name: &str) -> Result<PathBuf> {
    let dir = match std::env::var_os("FERROCRANE_BIN_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let exe = std::env::current_exe()?;
            exe.parent()
                .and_then(|deps| deps.parent())
                .map(PathBuf::from)
                .context("test executable has no parent dir")?
        }
    };
    let path = dir.join(name);
    if !path.is_file() {
        bail!(
            "{} not built: run `cargo build --workspace --bins` first (hack/test.sh does)",
            path.display()
        );
    }
    Ok(path)
}

/// A running service; killed (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct ServiceProcess {
    pub name: String,
    child: Child,
    pub log: PathBuf,
}

impl ServiceProcess {
    pub fn start(binary_name: &str, args: &[String]) -> Result<Self> {
        Self::start_with_env(binary_name, args, &[])
    }

    /// [`ServiceProcess::start`] with these environment variables set.
    pub fn start_with_env(
        binary_name: &str,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Result<Self> {
        Self::start_program(binary_name, &binary(binary_name)?, args, env)
    }

    /// Runs the executable at `bin` (a Go original, say), named `name` in logs and errors.
    pub fn start_program(
        name: &str,
        bin: &std::path::Path,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Result<Self> {
        let log = std::env::temp_dir().join(format!("ferrocrane-{name}-{}.log", random_suffix()));
        let child = Command::new(bin)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        Ok(Self {
            name: name.to_string(),
            child,
            log,
        })
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails with the service's log when it exited (a crash should not look like a timeout).
    pub fn ensure_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("{} exited with {status}:\n{}", self.name, self.logs());
        }
        Ok(())
    }

    /// The process id (for a test that signals or checks it was not restarted).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`TERM`, `KILL`, `STOP`, `CONT` ...) with kill(1).
    pub fn signal(&self, signal: &str) -> Result<()> {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill -{signal} {} failed", self.pid());
        Ok(())
    }

    /// Waits up to `timeout` for the process to exit and returns its status.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Result<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{} still runs after {timeout:?}:\n{}",
                    self.name,
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `url` answers 200.
    pub async fn wait_ready(&mut self, url: &str, timeout: Duration) -> Result<()> {
        self.wait_ready_using(&http_client()?, url, timeout).await
    }

    /// [`ServiceProcess::wait_ready`] with a client of the caller's (TLS, client certificate).
    pub async fn wait_ready_using(
        &mut self,
        http: &reqwest::Client,
        url: &str,
        timeout: Duration,
    ) -> Result<()> {
        let result = wait_until(&format!("{} ready at {url}", self.name), timeout, || {
            let http = http.clone();
            let alive = self.ensure_running();
            async move {
                alive?;
                Ok(http
                    .get(url)
                    .send()
                    .await
                    .ok()
                    .filter(|r| r.status().is_success())
                    .map(|_| ()))
            }
        })
        .await;
        result.with_context(|| format!("log of {}:\n{}", self.name, self.logs()))
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = std::fs::remove_file(&self.log);
            return;
        }
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                let _ = std::fs::remove_file(&self.log);
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
