//! A Prometheus preloaded with history, for tests of what reads the past (craned).
//!
//! Backfilled blocks only appear in a running Prometheus at its next block reload (up to a
//! minute), so instead each history gets a dedicated Prometheus started on top of blocks
//! `promtool tsdb create-blocks-from openmetrics` wrote: queryable as soon as it is ready.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::ports::free_port;
use crate::process::{random_suffix, run};
use crate::prometheus::PrometheusHandle;
use crate::wait::wait_http_ok;

#[derive(Debug)]
pub struct HistoryPrometheus {
    pub handle: PrometheusHandle,
    child: Child,
    dir: PathBuf,
}

impl HistoryPrometheus {
    /// `openmetrics` is an OpenMetrics document with timestamps (seconds), ending in `# EOF`.
    pub async fn start(openmetrics: &str) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("ferrocrane-history-{}", random_suffix()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data)?;
        let input = dir.join("history.om");
        std::fs::write(&input, openmetrics)?;
        run(Command::new("promtool")
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(&input)
            .arg(&data))
        .context(
            "promtool failed to backfill (install Debian's prometheus package: hack/setup.sh)",
        )?;
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 1m\n")?;
        let port = free_port()?;
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            // History may be older than the default 15 days retention.
            .arg("--storage.tsdb.retention.time=3650d")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log"))?)
            .spawn()
            .context("starting prometheus (install it with hack/setup.sh)")?;
        let url = format!("http://127.0.0.1:{port}");
        let handle = PrometheusHandle::new(&url, dir.join("targets"));
        let this = Self { handle, child, dir };
        wait_http_ok(&format!("{url}/-/ready"), Duration::from_secs(30)).await?;
        Ok(this)
    }
}

impl Drop for HistoryPrometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
