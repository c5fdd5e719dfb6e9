//! Where requests go: the endpoints, their URLs under a base that may carry a path prefix, and
//! the timestamp format Prometheus reads.

use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::Url;

use super::PrometheusError;

/// The API endpoints the suite uses; also the `endpoint` metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Query,
    QueryRange,
    Series,
    /// Remote read (`/api/v1/read`).
    Read,
    /// `/api/v1/status/buildinfo`.
    BuildInfo,
}

impl Endpoint {
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Query => "query",
            Endpoint::QueryRange => "query_range",
            Endpoint::Series => "series",
            Endpoint::Read => "read",
            Endpoint::BuildInfo => "status/buildinfo",
        }
    }
}

/// Parses and checks the base URL. A query string or fragment would be silently dropped or
/// mangled when endpoint paths are appended, so they are rejected.
pub fn parse_base_url(url: &str) -> Result<Url, PrometheusError> {
    let parsed = Url::parse(url)
        .map_err(|e| PrometheusError::Config(format!("invalid Prometheus URL {url:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(PrometheusError::Config(format!(
            "Prometheus URL {url:?} must use http or https"
        )));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(PrometheusError::Config(format!(
            "Prometheus URL {url:?} must not have a query string or fragment"
        )));
    }
    if parsed.cannot_be_a_base() || parsed.host_str().is_none() {
        return Err(PrometheusError::Config(format!(
            "Prometheus URL {url:?} has no host"
        )));
    }
    Ok(parsed)
}

/// `base` + `/api/v1/<endpoint>`, keeping any path prefix of `base` (Prometheus behind a reverse
/// proxy at `/prometheus`, Thanos at `/api/prom`...). `Url::join` is not used because it drops the
/// last path segment of a base without a trailing slash.
pub fn endpoint_url(base: &Url, endpoint: Endpoint) -> Url {
    let mut url = base.clone();
    let path = format!(
        "{}/api/v1/{}",
        base.path().trim_end_matches('/'),
        endpoint.as_str()
    );
    url.set_path(&path);
    url
}

/// Prometheus accepts RFC 3339 or float Unix seconds; seconds with millisecond precision are
/// unambiguous and cheap to produce.
pub fn format_timestamp_ms(ms: i64) -> String {
    if ms >= 0 {
        format!("{}.{:03}", ms / 1000, ms % 1000)
    } else {
        format!("{}", ms as f64 / 1000.0)
    }
}

pub(super) fn system_time_ms(t: SystemTime, what: &str) -> Result<i64, PrometheusError> {
    let d = t
        .duration_since(UNIX_EPOCH)
        .map_err(|_| PrometheusError::InvalidRequest(format!("{what} is before 1970")))?;
    i64::try_from(d.as_millis())
        .map_err(|_| PrometheusError::InvalidRequest(format!("{what} is too far in the future")))
}

pub(super) fn get_url(base: &Url, endpoint: Endpoint, params: &[(&str, String)]) -> Url {
    let mut url = endpoint_url(base, endpoint);
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in params {
            q.append_pair(k, v);
        }
    }
    url
}
