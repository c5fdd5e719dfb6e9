//! Self-metrics of the Prometheus client.
//!
//! With namespace `ns`:
//! - `<ns>_prometheus_request_duration_seconds{endpoint, code}` histogram: one observation per
//!   HTTP request (so a split range query observes once per chunk). `endpoint` is `query`,
//!   `query_range` or `series`; `code` is the HTTP status, or `timeout`, `connect_error`,
//!   `transport_error`, `decode_error`, `client_error` when there was none.
//! - `<ns>_prometheus_requests_in_flight` gauge: requests holding a concurrency permit.
//! - `<ns>_prometheus_request_queue_wait_seconds` histogram: time waiting for a permit, which is
//!   what tells an operator that `max_in_flight` is too low.

use prometheus::{Gauge, Histogram, HistogramOpts, HistogramVec, Opts, Registry};

use super::PrometheusError;

#[derive(Clone)]
pub(crate) struct ClientMetrics {
    pub duration: HistogramVec,
    pub in_flight: Gauge,
    pub queue_wait: Histogram,
}

/// Buckets from 5 ms to ~80 s: Prometheus answers range over four orders of magnitude.
fn buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.005, 2.0, 15).unwrap_or_else(|_| vec![0.01, 0.1, 1.0, 10.0])
}

impl ClientMetrics {
    pub(crate) fn register(registry: &Registry, namespace: &str) -> Result<Self, PrometheusError> {
        let ns = namespace.trim_end_matches('_');
        let err = |e: prometheus::Error| {
            PrometheusError::Config(format!("cannot register client metrics: {e}"))
        };
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "prometheus_request_duration_seconds",
                "Duration of HTTP requests to the Prometheus API by endpoint and status code.",
            )
            .namespace(ns)
            .buckets(buckets()),
            &["endpoint", "code"],
        )
        .map_err(err)?;
        let in_flight = Gauge::with_opts(
            Opts::new(
                "prometheus_requests_in_flight",
                "Requests to the Prometheus API currently in flight.",
            )
            .namespace(ns),
        )
        .map_err(err)?;
        let queue_wait = Histogram::with_opts(
            HistogramOpts::new(
                "prometheus_request_queue_wait_seconds",
                "Time requests waited for a free in-flight slot before being sent to Prometheus.",
            )
            .namespace(ns)
            .buckets(buckets()),
        )
        .map_err(err)?;
        registry.register(Box::new(duration.clone())).map_err(err)?;
        registry
            .register(Box::new(in_flight.clone()))
            .map_err(err)?;
        registry
            .register(Box::new(queue_wait.clone()))
            .map_err(err)?;
        Ok(ClientMetrics {
            duration,
            in_flight,
            queue_wait,
        })
    }
}
