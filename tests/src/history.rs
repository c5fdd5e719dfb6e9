//! History for tests of what reads the past (craned, the adapter's differential, the query
//! backends): [`History`] writes it, [`HistoryPrometheus`] serves it.
//!
//! Backfilled blocks only appear in a running Prometheus at its next block reload (up to a
//! minute), so instead each history gets a dedicated Prometheus started on top of blocks
//! `promtool tsdb create-blocks-from openmetrics` wrote: queryable as soon as it is ready.

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::ports::free_port;
use crate::process::{random_suffix, run};
use crate::prometheus::PrometheusHandle;
use crate::wait::wait_http_ok;

/// A week, in minutes: how far back craned's recommenders read by default.
pub const WEEK_MINUTES: i64 = 7 * 24 * 60;

/// Samples with timestamps, written as the OpenMetrics document promtool backfills: each
/// family's samples together under one `# TYPE` line (`counter` for a `_total` metric, whose
/// family drops the suffix; `gauge` otherwise), the document closed by `# EOF`.
#[derive(Debug, Default, Clone)]
pub struct History {
    families: BTreeMap<String, (bool, String)>,
}

impl History {
    pub fn new() -> Self {
        Self::default()
    }

    /// One sample of `metric{labels}` at `t` (seconds since the epoch, fractions allowed).
    /// `labels` is what goes between the braces, as written (`pod="a",container="b"`).
    pub fn sample(&mut self, metric: &str, labels: &str, value: f64, t: impl Display) {
        let counter = metric.ends_with("_total");
        let family = metric.strip_suffix("_total").unwrap_or(metric).to_owned();
        let (_, lines) = self
            .families
            .entry(family)
            .or_insert((counter, String::new()));
        if labels.is_empty() {
            let _ = writeln!(lines, "{metric} {value} {t}");
        } else {
            let _ = writeln!(lines, "{metric}{{{labels}}} {value} {t}");
        }
    }

    /// A series sampled at `times` (seconds), its value at each from `value_at`.
    pub fn series(
        &mut self,
        metric: &str,
        labels: &str,
        times: impl IntoIterator<Item = i64>,
        mut value_at: impl FnMut(i64) -> f64,
    ) {
        for t in times {
            self.sample(metric, labels, value_at(t), t);
        }
    }

    /// cAdvisor's two series of one container (`labels`), one sample a minute over `minutes`
    /// (Unix minutes): `container_cpu_usage_seconds_total` grows by `cores(minute)` × 60 each
    /// minute (the first sample holds one minute's worth), `container_memory_working_set_bytes`
    /// is `bytes(minute)`.
    pub fn cadvisor(
        &mut self,
        labels: &str,
        minutes: RangeInclusive<i64>,
        cores: impl Fn(i64) -> f64,
        bytes: impl Fn(i64) -> f64,
    ) {
        let mut counter = 0.0;
        for m in minutes {
            counter += cores(m) * 60.0;
            self.sample("container_cpu_usage_seconds_total", labels, counter, m * 60);
            self.sample(
                "container_memory_working_set_bytes",
                labels,
                bytes(m),
                m * 60,
            );
        }
    }

    /// Writes the document into `scratch` and has promtool turn it into TSDB blocks in `data`
    /// (a Prometheus started on `data` serves them at once).
    pub fn backfill(&self, scratch: &Path, data: &Path) -> Result<()> {
        let input = scratch.join("history.om");
        std::fs::write(&input, self.openmetrics())?;
        run(Command::new("promtool")
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(&input)
            .arg(data))
        .context("promtool failed to backfill (install Debian's prometheus package: hack/setup.sh --tests)")?;
        Ok(())
    }

    /// The document.
    pub fn openmetrics(&self) -> String {
        let mut out = String::new();
        for (family, (counter, lines)) in &self.families {
            let kind = if *counter { "counter" } else { "gauge" };
            let _ = writeln!(out, "# TYPE {family} {kind}");
            out.push_str(lines);
        }
        out.push_str("# EOF\n");
        out
    }
}

#[derive(Debug)]
pub struct HistoryPrometheus {
    pub handle: PrometheusHandle,
    child: Child,
    dir: PathBuf,
}

impl HistoryPrometheus {
    /// A Prometheus holding `history`.
    pub async fn start(history: &History) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("ferrocrane-history-{}", random_suffix()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data)?;
        history.backfill(&dir, &data)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_grouped_typed_and_closed() {
        let mut h = History::new();
        h.sample("b_total", r#"pod="x""#, 1.0, 60);
        h.sample("a", "", 0.5, 60);
        h.sample("b_total", r#"pod="y""#, 2.0, 60);
        assert_eq!(
            h.openmetrics(),
            "# TYPE a gauge\na 0.5 60\n# TYPE b counter\nb_total{pod=\"x\"} 1 60\nb_total{pod=\"y\"} 2 60\n# EOF\n"
        );
    }

    #[test]
    fn cadvisor_counts_a_minute_of_cpu_per_sample() {
        let mut h = History::new();
        h.cadvisor(
            r#"pod="p""#,
            10..=11,
            |m| if m == 10 { 0.5 } else { 1.0 },
            |_| 64.0,
        );
        let doc = h.openmetrics();
        assert!(
            doc.contains("container_cpu_usage_seconds_total{pod=\"p\"} 30 600\n"),
            "{doc}"
        );
        assert!(
            doc.contains("container_cpu_usage_seconds_total{pod=\"p\"} 90 660\n"),
            "{doc}"
        );
        assert!(
            doc.contains("container_memory_working_set_bytes{pod=\"p\"} 64 660\n"),
            "{doc}"
        );
    }
}
