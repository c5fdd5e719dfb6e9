//! Usage history from Prometheus, batched per workload.
//!
//! Crane issues one range query per container and resource plus workload-level sums for
//! Replicas and HPA; at 20,000 containers that is tens of thousands of queries per round
//! (Crane #898). Here one query per workload and resource, grouped `by (container, pod)`
//! ([`queries`]), returns every series the Resource, Replicas and HPA recommenders need:
//! per-container series directly, workload totals by summing them per timestamp ([`series`]).
//! The controller and `craned recommend` both read a workload's history through
//! [`History::workload`], so they look at the same pods.
//!
//! The query builders and the aggregation are pure; [`History`] does the I/O: a per-round
//! concurrency cap, range splitting by max points (core's client), and retries with backoff on
//! transient errors.

pub mod queries;
pub mod raw_eval;
pub mod series;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrocrane_core::prometheus::remote_read::{MatchOp, RawMatcher, RawSeries, ReadFormat};
use ferrocrane_core::prometheus::{PrometheusClient, PrometheusError, RangeSeries};
use tokio::sync::{OnceCell, Semaphore};

pub use self::queries::{
    CPU_METRIC, CPU_RATE_WINDOW, CPU_RATE_WINDOW_MS, MEMORY_METRIC, NetDirection, NodeUtilization,
    UsageQueries, pods_net_query, workload_cpu_query, workload_memory_query,
};
pub use self::series::{ContainerSeries, PodSamples, WorkloadHistory, summed};
use crate::prediction::Sample;
use crate::recommender::resource::ResourceConfig;

/// How far back and how fine a workload's history is read: the Resource recommender's longer
/// history length (at least a minute) and its CPU sample interval (at least a second).
pub fn workload_window(cfg: &ResourceConfig) -> (Duration, Duration) {
    (
        Duration::from_secs(
            cfg.cpu
                .history_length_secs
                .max(cfg.memory.history_length_secs)
                .max(60) as u64,
        ),
        Duration::from_secs(cfg.cpu.sample_interval_secs.max(1) as u64),
    )
}

/// Why history could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DataSourceError {
    #[error("prometheus: {source} (after {attempts} attempts)")]
    Prometheus {
        #[source]
        source: PrometheusError,
        attempts: u32,
    },
}

impl DataSourceError {
    pub fn is_transient(&self) -> bool {
        match self {
            DataSourceError::Prometheus { source, .. } => source.is_transient(),
        }
    }
}

/// Retry policy for transient Prometheus errors.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

/// The backoff before attempt `n` (1-based retries): doubling, capped.
pub fn backoff(retry: &Retry, n: u32) -> Duration {
    let factor = 1u32 << n.saturating_sub(1).min(16);
    retry
        .initial_backoff
        .saturating_mul(factor)
        .min(retry.max_backoff)
}

/// How a workload's usage history is read (`--prometheus-remote-read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryRead {
    /// PromQL range queries (`/api/v1/query_range`), as Crane.
    QueryRange,
    /// Raw samples through remote read, evaluated here as the range queries would be; falls
    /// back to range queries for good when the backend has no remote read.
    RemoteRead(ReadFormat),
}

/// What craned learned about the backend's remote read.
#[derive(Default)]
struct RemoteRead {
    /// The PromQL window edges of the server's version; `None`: remote read is not used.
    window: OnceCell<Option<raw_eval::Window>>,
    /// Set once the backend said it has no remote read.
    unsupported: AtomicBool,
}

/// Reads history from Prometheus.
#[derive(Clone)]
pub struct History {
    client: PrometheusClient,
    /// Workloads fetched at once; each fetch issues two queries (CPU, memory).
    limit: Arc<Semaphore>,
    retry: Retry,
    read: HistoryRead,
    remote: Arc<RemoteRead>,
}

impl History {
    pub fn new(client: PrometheusClient, concurrency: usize, retry: Retry) -> Self {
        History {
            client,
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
            retry,
            read: HistoryRead::QueryRange,
            remote: Arc::default(),
        }
    }

    /// Reads workload usage as `read` says.
    pub fn reading(mut self, read: HistoryRead) -> Self {
        self.read = read;
        self
    }

    /// `f` with retries on transient errors.
    async fn retrying<T, F, Fut>(&self, f: F) -> Result<T, DataSourceError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, PrometheusError>>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match f().await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_transient() && attempt < self.retry.attempts => {
                    let wait = backoff(&self.retry, attempt);
                    tracing::warn!(error = %e, attempt, ?wait, "prometheus query failed, retrying");
                    tokio::time::sleep(wait).await;
                }
                Err(source) => {
                    return Err(DataSourceError::Prometheus {
                        source,
                        attempts: attempt,
                    });
                }
            }
        }
    }

    /// One range query with retries on transient errors.
    pub async fn range(
        &self,
        promql: &str,
        start: SystemTime,
        end: SystemTime,
        step: Duration,
    ) -> Result<Vec<RangeSeries>, DataSourceError> {
        self.retrying(|| self.client.query_range(promql, start, end, step))
            .await
    }

    /// One expression over `history` up to `now`, every `step`, as a single series: what
    /// comes back is summed per timestamp (the expressions aggregate to one series already;
    /// a second one, e.g. from a duplicated scrape job, is not silently dropped).
    pub async fn series(
        &self,
        promql: &str,
        now: SystemTime,
        history: Duration,
        step: Duration,
    ) -> Result<Vec<Sample>, DataSourceError> {
        let _permit = self.limit.acquire().await.ok();
        let start = now.checked_sub(history).unwrap_or(UNIX_EPOCH);
        let series = self.range(promql, start, now, step).await?;
        Ok(summed(&series))
    }

    /// CPU and memory of a workload (its [`UsageQueries`]) over `history` up to `now`, every
    /// `step`.
    pub async fn workload(
        &self,
        queries: &UsageQueries,
        now: SystemTime,
        history: Duration,
        step: Duration,
    ) -> Result<WorkloadHistory, DataSourceError> {
        // The semaphore is never closed, so acquire cannot fail.
        let _permit = self.limit.acquire().await.ok();
        let start = now.checked_sub(history).unwrap_or(UNIX_EPOCH);
        let (cpu, memory) = match self.remote_window().await {
            Some((window, format)) => {
                match self
                    .read_workload(queries, start, now, step, window, format)
                    .await
                {
                    Err(DataSourceError::Prometheus {
                        source: source @ PrometheusError::RemoteReadUnsupported { .. },
                        ..
                    }) => {
                        if !self.remote.unsupported.swap(true, Ordering::Relaxed) {
                            tracing::warn!(error = %source, "reading history with range queries from now on");
                        }
                        self.range_workload(queries, start, now, step).await?
                    }
                    other => other?,
                }
            }
            None => self.range_workload(queries, start, now, step).await?,
        };
        Ok(WorkloadHistory {
            cpu: ContainerSeries::from_range(cpu),
            memory: ContainerSeries::from_range(memory),
        })
    }

    async fn range_workload(
        &self,
        queries: &UsageQueries,
        start: SystemTime,
        now: SystemTime,
        step: Duration,
    ) -> Result<(Vec<RangeSeries>, Vec<RangeSeries>), DataSourceError> {
        tokio::try_join!(
            self.range(&queries.cpu, start, now, step),
            self.range(&queries.memory, start, now, step)
        )
    }

    /// The window edges to evaluate with, when remote read is to be used: asked of the
    /// server once (a server that does not say its version is read with range queries).
    async fn remote_window(&self) -> Option<(raw_eval::Window, ReadFormat)> {
        let HistoryRead::RemoteRead(format) = self.read else {
            return None;
        };
        if self.remote.unsupported.load(Ordering::Relaxed) {
            return None;
        }
        let window = self
            .remote
            .window
            .get_or_init(|| async {
                match self.client.build_version().await {
                    Ok(version) => {
                        let window = raw_eval::Window::for_version(&version);
                        tracing::info!(%version, ?window, ?format, "reading history with remote read");
                        Some(window)
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the backend does not say its version; reading history with range queries");
                        None
                    }
                }
            })
            .await;
        window.map(|w| (w, format))
    }

    /// Both usage series of a workload from raw samples, as [`Self::range_workload`] would
    /// answer them.
    async fn read_workload(
        &self,
        queries: &UsageQueries,
        start: SystemTime,
        now: SystemTime,
        step: Duration,
        window: raw_eval::Window,
        format: ReadFormat,
    ) -> Result<(Vec<RangeSeries>, Vec<RangeSeries>), DataSourceError> {
        let ms = |t: SystemTime| {
            i64::try_from(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis())
                .unwrap_or(i64::MAX)
        };
        let grid = raw_eval::Grid {
            start_ms: ms(start),
            end_ms: ms(now),
            step_ms: i64::try_from(step.as_millis()).unwrap_or(i64::MAX).max(1),
        };
        let read = |metric: &'static str, reach_ms: i64| {
            let mut matchers = vec![RawMatcher::new("__name__", MatchOp::Equal, metric)];
            matchers.extend(queries.containers.iter().cloned());
            async move {
                self.retrying(|| {
                    self.client
                        .read(&matchers, grid.start_ms - reach_ms, grid.end_ms, format)
                })
                .await
            }
        };
        let (cpu, memory): (Vec<RawSeries>, Vec<RawSeries>) = tokio::try_join!(
            read(CPU_METRIC, CPU_RATE_WINDOW_MS),
            read(MEMORY_METRIC, raw_eval::LOOKBACK_MS)
        )?;
        Ok((
            raw_eval::max_irate(&cpu, grid, CPU_RATE_WINDOW_MS, window),
            raw_eval::max_instant(&memory, grid, window),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recommender::config::Config;

    #[test]
    fn backoff_doubles_and_caps() {
        let r = Retry::default();
        assert_eq!(backoff(&r, 1), Duration::from_millis(500));
        assert_eq!(backoff(&r, 2), Duration::from_secs(1));
        assert_eq!(backoff(&r, 10), Duration::from_secs(8));
    }

    #[test]
    fn the_window_follows_the_resource_config() {
        let cfg = |pairs: &[(&str, &str)]| {
            ResourceConfig::from_config(&Config::from_pairs(pairs.iter().copied())).unwrap()
        };
        assert_eq!(
            workload_window(&cfg(&[])),
            (Duration::from_secs(7 * 86_400), Duration::from_secs(60))
        );
        assert_eq!(
            workload_window(&cfg(&[
                ("cpu-model-history-length", "24h"),
                ("mem-model-history-length", "48h"),
                ("cpu-sample-interval", "5m"),
            ])),
            (Duration::from_secs(48 * 3600), Duration::from_secs(300))
        );
    }
}
