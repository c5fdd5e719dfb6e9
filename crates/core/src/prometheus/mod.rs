//! Async client for the Prometheus HTTP API (`/api/v1/query`, `query_range`, `series`).
//!
//! Shared by the metrics adapter (series relists, instant queries) and craned (long range queries
//! for history). What it adds over a bare HTTP call is what the Go originals lacked or got wrong:
//! rotating bearer tokens, TLS with client certs (Crane #814), a per-request timeout
//! (prometheus-adapter has none), an in-flight cap, transparent splitting of long range queries,
//! and errors that keep Prometheus' own `errorType`/`error`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ferrocrane_core::prometheus::PrometheusError> {
//! use ferrocrane_core::prometheus::PrometheusClient;
//! let client = PrometheusClient::from_url("http://127.0.0.1:9090")?;
//! let result = client.query("up", None).await?;
//! # Ok(()) }
//! ```
//!
//! Self-metrics (when [`PrometheusConfig::metrics`] is set) are documented in the `metrics`
//! module: `<ns>_prometheus_request_duration_seconds{endpoint,code}`,
//! `<ns>_prometheus_requests_in_flight`, `<ns>_prometheus_request_queue_wait_seconds`.

mod args;
mod client;
mod config;
mod endpoint;
mod error;
mod interpret;
mod metrics;
mod range;
pub mod remote_read;
mod response;
mod series_shapes;
mod streamed;
mod tls;
mod token;

#[cfg(test)]
mod client_tests;
#[cfg(test)]
mod server_tests;
#[cfg(test)]
mod tls_tests;

pub use args::QueryLayerArgs;
pub use client::PrometheusClient;
pub use config::{
    BasicAuth, DEFAULT_MAX_GET_URL_LEN, DEFAULT_MAX_RESPONSE_SIZE, MetricsOptions, PartialResponse,
    PrometheusConfig, Verb, parse_header_flag, parse_response_limit,
};
pub use endpoint::{Endpoint, endpoint_url, format_timestamp_ms, parse_base_url};
pub use error::PrometheusError;
pub use range::{Chunk, DEFAULT_MAX_POINTS, merge_chunks, plan_chunks, point_count};
pub use response::{
    DecodeError, Decoded, InstantSample, Labels, QueryResult, RangeSeries, Sample, decode_query,
    decode_series, parse_sample_value,
};
pub use series_shapes::{SeriesShape, SeriesShapes, decode_series_shapes};
