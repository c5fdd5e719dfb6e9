//! Prometheus-compatible query layers the adapter and craned are tested on besides a plain
//! Prometheus (issue 16, docs/backends.md), started on loopback by the tests that use them:
//!
//! - **VictoriaMetrics** single-node (Debian's `victoria-metrics`, hack/setup.sh);
//! - **Thanos Query** over two Prometheus replicas, each with a Thanos sidecar and an external
//!   `replica` label Query deduplicates on (Thanos built by hack/setup.sh from
//!   hack/tools/thanos).
//!
//! A backend is either *live* — it scrapes what the cluster's Prometheus scrapes (the same
//! config file: the targets tests add, kwok's nodes), so an exporter's value or a kwok pod's
//! usage reaches it as it reaches the cluster's Prometheus — or loaded with *history* (an
//! OpenMetrics document with timestamps, as craned's tests write), queryable at once.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cluster::Cluster;
use crate::history::History;
use crate::ports::free_port;
use crate::process::{http_client, random_suffix};
use crate::prometheus::PrometheusHandle;
use crate::wait::{wait_http_ok, wait_until};

/// Which query layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    VictoriaMetrics,
    /// Thanos Query over two Prometheus replicas with sidecars.
    Thanos,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::VictoriaMetrics => "VictoriaMetrics",
            BackendKind::Thanos => "Thanos Query",
        })
    }
}

/// The label the two Thanos replicas differ by, and Query deduplicates on.
pub const THANOS_REPLICA_LABEL: &str = "replica";

/// A running backend; everything it started stops when it is dropped.
pub struct Backend {
    pub kind: BackendKind,
    /// Where the adapter or craned sends queries (`--prometheus-url` / `--prometheus-address`).
    pub url: String,
    children: Vec<Named>,
    dir: PathBuf,
}

struct Named {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Drop for Backend {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.child.kill();
            let _ = c.child.wait();
        }
        if std::env::var_os("KEEP_BACKEND_LOGS").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Where the data comes from.
enum Source<'a> {
    /// The cluster Prometheus' scrape config.
    Scrape(&'a Path),
    /// Samples with timestamps.
    History(&'a History),
}

impl Backend {
    /// A backend scraping what the cluster's Prometheus scrapes.
    pub async fn live(kind: BackendKind, cluster: &Cluster) -> Result<Backend> {
        let config = cluster.env.path("PROMETHEUS_CONFIG")?;
        Backend::start(kind, Source::Scrape(&config)).await
    }

    /// A backend holding `history`.
    pub async fn history(kind: BackendKind, history: &History) -> Result<Backend> {
        Backend::start(kind, Source::History(history)).await
    }

    async fn start(kind: BackendKind, source: Source<'_>) -> Result<Backend> {
        let dir = std::env::temp_dir().join(format!("ferrocrane-backend-{}", random_suffix()));
        std::fs::create_dir_all(&dir)?;
        let mut backend = Backend {
            kind,
            url: String::new(),
            children: Vec::new(),
            dir,
        };
        let started = match kind {
            BackendKind::VictoriaMetrics => backend.start_victoria_metrics(&source).await,
            BackendKind::Thanos => backend.start_thanos(&source).await,
        };
        if let Err(e) = started {
            bail!("starting {kind}: {e:#}\n{}", backend.logs());
        }
        Ok(backend)
    }

    /// For instant queries straight to the backend (its scrape targets are the cluster's).
    pub fn handle(&self) -> PrometheusHandle {
        PrometheusHandle::new(&self.url, self.dir.join("unused-targets"))
    }

    /// The last lines of every process' log, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for c in &self.children {
            let text = std::fs::read_to_string(&c.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            out.push_str(&format!("--- {} ({})\n", c.name, c.log.display()));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// Stops one process by name (`prometheus-b`, `sidecar-b`, ...): a replica going down.
    pub fn stop(&mut self, name: &str) -> Result<()> {
        let c = self
            .children
            .iter_mut()
            .find(|c| c.name == name)
            .with_context(|| format!("{} has no process {name}", self.kind))?;
        c.child.kill()?;
        c.child.wait()?;
        Ok(())
    }

    fn spawn(&mut self, name: &str, cmd: &mut Command) -> Result<()> {
        let log = self.dir.join(format!("{name}.log"));
        let child = cmd
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("spawning {name}: {cmd:?}"))?;
        self.children.push(Named {
            name: name.to_owned(),
            child,
            log,
        });
        Ok(())
    }

    async fn start_victoria_metrics(&mut self, source: &Source<'_>) -> Result<()> {
        let port = free_port()?;
        let data = self.dir.join("vm-data");
        let mut cmd = Command::new("victoria-metrics");
        cmd.arg(format!("-storageDataPath={}", data.display()))
            .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
            .arg("-retentionPeriod=100y")
            // Backfilled history must not be hidden by results cached before it arrived.
            .arg("-search.disableCache")
            // The default 30 s hides the newest samples; the tests set values and wait.
            .arg("-search.latencyOffset=1s");
        if let Source::Scrape(config) = source {
            cmd.arg(format!("-promscrape.config={}", config.display()))
                // The cluster's config carries Prometheus-only fields (evaluation_interval,
                // refresh_interval) that VictoriaMetrics rejects by default.
                .arg("-promscrape.config.strictParse=false")
                .arg("-promscrape.fileSDCheckInterval=2s")
                .arg("-promscrape.httpSDCheckInterval=2s");
        }
        self.spawn("victoria-metrics", &mut cmd)
            .context("install Debian's victoria-metrics package: hack/setup.sh does")?;
        self.url = format!("http://127.0.0.1:{port}");
        wait_http_ok(&format!("{}/health", self.url), Duration::from_secs(60)).await?;
        if let Source::History(history) = source {
            let text = openmetrics_to_prometheus_ms(&history.openmetrics())?;
            let http = http_client()?;
            let resp = http
                .post(format!("{}/api/v1/import/prometheus", self.url))
                .body(text)
                .send()
                .await?;
            if !resp.status().is_success() {
                bail!(
                    "importing history: HTTP {}: {}",
                    resp.status(),
                    resp.text().await?
                );
            }
            // Imported rows become searchable at the next flush; force it.
            http.get(format!("{}/internal/force_flush", self.url))
                .send()
                .await?
                .error_for_status()?;
        }
        Ok(())
    }

    async fn start_thanos(&mut self, source: &Source<'_>) -> Result<()> {
        let thanos = Cluster::get()?.env.path("FERROCRANE_BIN")?.join("thanos");
        if !thanos.is_file() {
            bail!(
                "{} is missing: build it with hack/setup.sh (hack/tools/thanos pins it)",
                thanos.display()
            );
        }
        let base_config = match source {
            Source::Scrape(config) => std::fs::read_to_string(config)
                .with_context(|| format!("reading {}", config.display()))?,
            Source::History(_) => "global:\n  scrape_interval: 1m\nscrape_configs: []\n".to_owned(),
        };
        let mut endpoints = Vec::new();
        for replica in ["a", "b"] {
            let data = self.dir.join(format!("prometheus-{replica}"));
            std::fs::create_dir_all(&data)?;
            if let Source::History(history) = source {
                history.backfill(&self.dir, &data)?;
            }
            let config = self.dir.join(format!("prometheus-{replica}.yml"));
            std::fs::write(&config, with_external_label(&base_config, replica)?)?;
            let port = free_port()?;
            self.spawn(
                &format!("prometheus-{replica}"),
                Command::new("prometheus")
                    .arg(format!("--config.file={}", config.display()))
                    .arg(format!("--storage.tsdb.path={}", data.display()))
                    .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                    .arg("--storage.tsdb.retention.time=3650d")
                    // The sidecar's requirement for a replica it may upload from; no upload
                    // here, but the layout is the one a real deployment has.
                    .arg("--storage.tsdb.min-block-duration=2h")
                    .arg("--storage.tsdb.max-block-duration=2h"),
            )?;
            let prometheus_url = format!("http://127.0.0.1:{port}");
            wait_http_ok(
                &format!("{prometheus_url}/-/ready"),
                Duration::from_secs(60),
            )
            .await?;
            let grpc = free_port()?;
            let http = free_port()?;
            self.spawn(
                &format!("sidecar-{replica}"),
                Command::new(&thanos)
                    .arg("sidecar")
                    .arg(format!("--prometheus.url={prometheus_url}"))
                    .arg(format!("--tsdb.path={}", data.display()))
                    .arg(format!("--grpc-address=127.0.0.1:{grpc}"))
                    .arg(format!("--http-address=127.0.0.1:{http}")),
            )?;
            wait_http_ok(
                &format!("http://127.0.0.1:{http}/-/ready"),
                Duration::from_secs(60),
            )
            .await?;
            endpoints.push(format!("127.0.0.1:{grpc}"));
        }
        let http = free_port()?;
        let grpc = free_port()?;
        let mut query = Command::new(&thanos);
        query
            .arg("query")
            .arg(format!("--http-address=127.0.0.1:{http}"))
            .arg(format!("--grpc-address=127.0.0.1:{grpc}"))
            .arg(format!("--query.replica-label={THANOS_REPLICA_LABEL}"))
            // How long a failed sidecar stays in the store set; short, so a replica that is
            // down is noticed by the tests within seconds.
            .arg("--store.unhealthy-timeout=5s")
            .arg("--endpoint.info-timeout=2s");
        for e in &endpoints {
            query.arg(format!("--endpoint={e}"));
        }
        self.spawn("query", &mut query)?;
        self.url = format!("http://127.0.0.1:{http}");
        wait_http_ok(&format!("{}/-/ready", self.url), Duration::from_secs(60)).await?;
        // Ready is not "connected to both sidecars": wait until both are in the store set.
        let url = format!("{}/api/v1/stores", self.url);
        let http_client = http_client()?;
        wait_until(
            "Thanos Query connected to both sidecars",
            Duration::from_secs(60),
            || async {
                let body: serde_json::Value = http_client.get(&url).send().await?.json().await?;
                let sidecars = body["data"]["sidecar"].as_array().map_or(0, Vec::len);
                Ok((sidecars == 2).then_some(()))
            },
        )
        .await
    }
}

/// The cluster's Prometheus config with `replica: <name>` among its external labels, which is
/// what makes a Prometheus one of a Thanos HA pair.
fn with_external_label(config: &str, replica: &str) -> Result<String> {
    let marker = "global:\n";
    if !config.contains(marker) || config.contains("external_labels") {
        bail!("expected a Prometheus config with a global: section and no external_labels");
    }
    Ok(config.replacen(
        marker,
        &format!("{marker}  external_labels:\n    {THANOS_REPLICA_LABEL}: {replica}\n"),
        1,
    ))
}

/// OpenMetrics with second timestamps → the Prometheus text format with millisecond ones,
/// which VictoriaMetrics' `/api/v1/import/prometheus` reads. Comments (`# TYPE`, `# EOF`) go.
fn openmetrics_to_prometheus_ms(openmetrics: &str) -> Result<String> {
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut parts = line.rsplitn(3, ' ');
        let (Some(ts), Some(value), Some(series)) = (parts.next(), parts.next(), parts.next())
        else {
            bail!("sample line without a timestamp: {line:?}");
        };
        let seconds: f64 = ts
            .parse()
            .with_context(|| format!("timestamp of {line:?}"))?;
        out.push_str(&format!(
            "{series} {value} {}\n",
            (seconds * 1000.0).round() as i64
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_timestamps_become_milliseconds() -> Result<()> {
        let om = "# TYPE cpu counter\ncpu_total{pod=\"a b\"} 1.5 1700000000\ncpu_total{pod=\"c\"} 2 1700000060.25\n# EOF\n";
        assert_eq!(
            openmetrics_to_prometheus_ms(om)?,
            "cpu_total{pod=\"a b\"} 1.5 1700000000000\ncpu_total{pod=\"c\"} 2 1700000060250\n"
        );
        assert!(openmetrics_to_prometheus_ms("up 1\n").is_err());
        Ok(())
    }

    #[test]
    fn replicas_get_an_external_label() -> Result<()> {
        let c = "# comment\nglobal:\n  scrape_interval: 2s\nscrape_configs: []\n";
        assert_eq!(
            with_external_label(c, "b")?,
            "# comment\nglobal:\n  external_labels:\n    replica: b\n  scrape_interval: 2s\nscrape_configs: []\n"
        );
        assert!(with_external_label("scrape_configs: []\n", "a").is_err());
        Ok(())
    }
}
