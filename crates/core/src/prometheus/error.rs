//! The client's error type.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong talking to Prometheus. Variants are split by what an operator
/// would do about them: fix the config, fix the query, or look at the network / Prometheus.
#[derive(Debug, thiserror::Error)]
pub enum PrometheusError {
    /// The client configuration cannot work (bad URL, cert without key, ...).
    #[error("invalid Prometheus client configuration: {0}")]
    Config(String),

    /// A file named in the configuration (token, CA, cert, key) could not be read or parsed.
    #[error("{}: {reason}", path.display())]
    File { path: PathBuf, reason: String },

    /// The arguments of a call are unusable (inverted range, zero step, time before 1970).
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// Prometheus answered with `"status":"error"`, e.g. a PromQL syntax error (`bad_data`), a
    /// query timeout inside Prometheus (`timeout`) or too many samples (`execution`).
    #[error("Prometheus {endpoint} failed (HTTP {status}): {error_type}: {error}")]
    Api {
        endpoint: &'static str,
        status: u16,
        error_type: String,
        error: String,
    },

    /// A non-success HTTP status without a Prometheus error body, typically from a proxy.
    #[error("Prometheus {endpoint} returned HTTP {status}: {body}")]
    Http {
        endpoint: &'static str,
        status: u16,
        /// The start of the body, for diagnosis.
        body: String,
    },

    /// No complete answer within the per-request timeout.
    #[error("Prometheus {endpoint} timed out after {timeout:?}")]
    Timeout {
        endpoint: &'static str,
        timeout: Duration,
    },

    /// Could not connect (DNS, refused, TLS handshake).
    #[error("cannot connect to Prometheus for {endpoint}: {}", root_cause(source))]
    Connect {
        endpoint: &'static str,
        #[source]
        source: reqwest::Error,
    },

    /// Any other transport failure (connection reset mid-body, ...).
    #[error("Prometheus {endpoint} request failed: {}", root_cause(source))]
    Transport {
        endpoint: &'static str,
        #[source]
        source: reqwest::Error,
    },

    /// The body exceeded [`super::PrometheusConfig::max_response_bytes`].
    #[error(
        "Prometheus {endpoint} response exceeded {limit} bytes; narrow the query or raise --prometheus-max-response-size"
    )]
    ResponseTooLarge {
        endpoint: &'static str,
        limit: usize,
    },

    /// A `/api/v1/series` answer that is, or may be, missing series: more than the configured
    /// limit, or the backend warned that it truncated it.
    #[error("Prometheus series answer is incomplete ({detail}); {}", series_advice(*.limit))]
    SeriesTruncated {
        limit: Option<usize>,
        detail: String,
    },

    /// A 2xx answer whose body is not the JSON the API documents.
    #[error("the backend has no remote-read API (HTTP {status}: {body})")]
    RemoteReadUnsupported { status: u16, body: String },
    #[error("Prometheus {endpoint} returned an undecodable body: {reason}")]
    Decode {
        endpoint: &'static str,
        reason: String,
    },

    /// `query_range` was answered with something other than a matrix.
    #[error("Prometheus {endpoint} returned a {got} where a matrix was expected")]
    UnexpectedResultType {
        endpoint: &'static str,
        got: &'static str,
    },
}

fn series_advice(limit: Option<usize>) -> String {
    match limit {
        Some(n) => format!(
            "the limit is {n}: narrow the series selector or raise --prometheus-series-limit"
        ),
        None => "narrow the series selector or raise the backend's series limit".to_owned(),
    }
}

/// The innermost error of a chain: reqwest's own message ("error sending request for url")
/// hides what happened ("Connection refused (os error 111)"), which is what an operator needs.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    if std::ptr::addr_eq(inner, e) {
        e.to_string()
    } else {
        format!("{e}: {inner}")
    }
}

impl PrometheusError {
    /// A short, bounded value for the `code` label of the request-duration metric: the HTTP
    /// status when there was one, else the failure class.
    pub fn metric_code(&self) -> String {
        match self {
            PrometheusError::Api { status, .. }
            | PrometheusError::Http { status, .. }
            | PrometheusError::RemoteReadUnsupported { status, .. } => status.to_string(),
            PrometheusError::Timeout { .. } => "timeout".into(),
            PrometheusError::ResponseTooLarge { .. } => "too_large".into(),
            PrometheusError::SeriesTruncated { .. } => "truncated".into(),
            PrometheusError::Connect { .. } => "connect_error".into(),
            PrometheusError::Transport { .. } => "transport_error".into(),
            PrometheusError::Decode { .. } | PrometheusError::UnexpectedResultType { .. } => {
                "decode_error".into()
            }
            PrometheusError::Config(_)
            | PrometheusError::File { .. }
            | PrometheusError::InvalidRequest(_) => "client_error".into(),
        }
    }

    /// True when retrying the same request later can plausibly succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            PrometheusError::Timeout { .. }
            | PrometheusError::Connect { .. }
            | PrometheusError::Transport { .. } => true,
            PrometheusError::Api {
                status, error_type, ..
            } => *status >= 500 || error_type == "timeout" || error_type == "unavailable",
            PrometheusError::Http { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}
