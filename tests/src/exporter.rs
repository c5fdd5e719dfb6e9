//! A Prometheus exporter inside the test process: tests publish series (cAdvisor-style container
//! usage, node usage, any custom metric an HPA should follow), change them while the test runs,
//! and let the cluster's real Prometheus scrape them.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use ferrocrane_e2e::{Cluster, Exporter};
//! let cluster = Cluster::get()?;
//! let exporter = Exporter::start().await?;
//! let labels = [("namespace", "ns"), ("pod", "web-0"), ("container", "app")];
//! exporter.set("container_memory_working_set_bytes", &labels, 64.0 * 1024.0 * 1024.0);
//! // A counter rising at 0.25/s: irate()/rate() over it read 0.25 (a quarter of a core).
//! exporter.set_counter_rate("container_cpu_usage_seconds_total", &labels, 0.25);
//! let scrape = exporter.register(&cluster.prometheus()?, "my-test")?; // stops scraping on drop
//! # Ok(()) }
//! ```
//!
//! Labels: the series' own labels (`namespace`, `pod`, `container`, `node`, ...) reach Prometheus
//! unchanged. They would only be renamed to `exported_<name>` if they collided with a target
//! label, and the file_sd targets the harness writes carry only `job` (plus the `instance`
//! Prometheus adds), so no `honor_labels` is needed; [`Exporter::register`] refuses series that
//! use those two names rather than letting Prometheus rename them silently.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use axum::http::header::CONTENT_TYPE;
use ferrocrane_core::exposition::{Format, write_metric_line};

use crate::prometheus::{PrometheusHandle, ScrapeTarget};

/// A series' identity: metric name and its labels sorted by name.
type SeriesKey = (String, Vec<(String, String)>);

/// How a series' value is produced at scrape time.
#[derive(Debug, Clone, Copy)]
enum Value {
    /// A fixed value.
    Fixed(f64),
    /// `start + per_second × seconds since since`: a counter with a known rate.
    Rate {
        start: f64,
        per_second: f64,
        since: Instant,
    },
}

impl Value {
    fn now(&self) -> f64 {
        self.at(Instant::now())
    }

    fn at(&self, now: Instant) -> f64 {
        match *self {
            Value::Fixed(v) => v,
            Value::Rate {
                start,
                per_second,
                since,
            } => start + per_second * now.saturating_duration_since(since).as_secs_f64(),
        }
    }
}

type Series = Arc<Mutex<BTreeMap<SeriesKey, Value>>>;

/// The exporter: an HTTP server on a loopback port serving `/metrics` until dropped.
#[derive(Debug)]
pub struct Exporter {
    addr: SocketAddr,
    series: Series,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

fn key(name: &str, labels: &[(&str, &str)]) -> SeriesKey {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.sort();
    (name.to_owned(), labels)
}

/// The exposition text of every series, in name-then-labels order.
///
/// Counters with a rate carry the timestamp their value was computed for: Prometheus stamps
/// a sample with the scrape's start, not with when the exporter answered, and under load the
/// two drift apart by tens of milliseconds per 2 s scrape, which skews `irate` by a few
/// percent. With explicit timestamps `irate` reads the configured rate exactly. (Such series
/// are not marked stale when removed; they drop out after Prometheus' 5 min lookback.)
fn render(series: &BTreeMap<SeriesKey, Value>) -> Vec<u8> {
    let mut buf = Vec::new();
    let now = Instant::now();
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let wall_ms = wall.as_millis();
    // Values are computed for the whole millisecond the timestamp names.
    let at = now
        .checked_sub(Duration::from_nanos(u64::from(
            wall.subsec_nanos() % 1_000_000,
        )))
        .unwrap_or(now);
    for ((name, labels), value) in series {
        let keys: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
        let values: Vec<&str> = labels.iter().map(|(_, v)| v.as_str()).collect();
        // Keys and values come from one vector of pairs, so their lengths always agree.
        let _ = write_metric_line(&mut buf, name, &keys, &values, value.at(at));
        if matches!(value, Value::Rate { .. }) && buf.last() == Some(&b'\n') {
            buf.pop();
            buf.extend_from_slice(format!(" {wall_ms}\n").as_bytes());
        }
    }
    buf
}

impl Exporter {
    /// Starts serving on `127.0.0.1` on a free port.
    pub async fn start() -> Result<Self> {
        let series: Series = Arc::default();
        let served = series.clone();
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let served = served.clone();
                async move {
                    let body = render(&served.lock().unwrap_or_else(PoisonError::into_inner));
                    ([(CONTENT_TYPE, Format::Text004.content_type())], body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the test exporter")?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(e) = served.await {
                tracing::warn!(error = %e, "test exporter stopped");
            }
        });
        Ok(Self {
            addr,
            series,
            stop: Some(stop),
        })
    }

    /// `host:port` Prometheus scrapes.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    fn put(&self, name: &str, labels: &[(&str, &str)], value: Value) {
        self.series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(name, labels), value);
    }

    /// Publishes (or replaces) a series with a fixed value.
    pub fn set(&self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.put(name, labels, Value::Fixed(value));
    }

    /// Publishes (or replaces) a counter that rises by `per_second` every second from now,
    /// continuing from the series' current value so `rate()` never sees a counter reset.
    pub fn set_counter_rate(&self, name: &str, labels: &[(&str, &str)], per_second: f64) {
        let key = key(name, labels);
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        let start = series.get(&key).map_or(0.0, Value::now);
        series.insert(
            key,
            Value::Rate {
                start,
                per_second,
                since: Instant::now(),
            },
        );
    }

    /// Stops publishing a series; Prometheus marks it stale on the next scrape.
    pub fn remove(&self, name: &str, labels: &[(&str, &str)]) {
        self.series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key(name, labels));
    }

    /// The current exposition text, as the next scrape would see it.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&render(
            &self.series.lock().unwrap_or_else(PoisonError::into_inner),
        ))
        .into_owned()
    }

    /// Makes `prometheus` scrape this exporter under `job` (file_sd, every 2 s in the harness'
    /// config). The returned target stops the scraping when dropped.
    pub fn register(&self, prometheus: &PrometheusHandle, job: &str) -> Result<ScrapeTarget> {
        let series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, labels) in series.keys() {
            if let Some((k, _)) = labels.iter().find(|(k, _)| k == "job" || k == "instance") {
                bail!(
                    "series {name} has a {k:?} label, which Prometheus would rename to exported_{k}"
                );
            }
        }
        prometheus.add_scrape_target(job, &self.address(), "/metrics")
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_sorted_series_with_escaped_labels() {
        let mut series = BTreeMap::new();
        series.insert(
            key("b_metric", &[("pod", "p\"1"), ("namespace", "ns")]),
            Value::Fixed(2.5),
        );
        series.insert(key("a_metric", &[]), Value::Fixed(1.0));
        let text = String::from_utf8(render(&series)).unwrap_or_default();
        assert_eq!(
            text,
            "a_metric 1\nb_metric{namespace=\"ns\",pod=\"p\\\"1\"} 2.5\n"
        );
    }

    #[test]
    fn a_counter_rate_rises_with_time() {
        let since = Instant::now() - Duration::from_secs(10);
        let v = Value::Rate {
            start: 5.0,
            per_second: 0.5,
            since,
        }
        .now();
        assert!((10.0..10.5).contains(&v), "{v}");
    }
}
