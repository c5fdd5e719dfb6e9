//! Client configuration.

use std::path::PathBuf;
use std::time::Duration;

use super::range::DEFAULT_MAX_POINTS;

/// HTTP method for `query` / `query_range`. POST exists because long PromQL (big regex matchers
/// built from many pod names) overflows URL limits of proxies; mirrors prometheus-adapter's
/// `--prometheus-verb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verb {
    #[default]
    Get,
    Post,
}

impl std::str::FromStr for Verb {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_uppercase().as_str() {
            "GET" => Ok(Verb::Get),
            "POST" => Ok(Verb::Post),
            _ => Err(format!("unsupported HTTP verb {s:?}, expected GET or POST")),
        }
    }
}

/// Username and password for HTTP basic auth.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for BasicAuth {
    /// The password must never reach logs through a `{:?}` of the config.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Where to register the client's self-metrics.
#[derive(Clone)]
pub struct MetricsOptions {
    pub registry: ::prometheus::Registry,
    /// Metric name prefix such as `ksm` or `metrics_adapter` (a trailing `_` is tolerated).
    pub namespace: String,
}

impl std::fmt::Debug for MetricsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsOptions")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Everything needed to build a [`super::PrometheusClient`]. Start from [`PrometheusConfig::new`]
/// and set the fields you need; the defaults suit an in-cluster Prometheus without auth.
#[derive(Clone)]
pub struct PrometheusConfig {
    /// Base URL; a path prefix (`http://host/prometheus/`) is kept and `api/v1/...` appended.
    pub url: String,
    /// A file holding a bearer token, re-read when it changes (projected service-account tokens
    /// rotate hourly, so reading it once at startup breaks after the first rotation).
    pub bearer_token_file: Option<PathBuf>,
    pub basic_auth: Option<BasicAuth>,
    /// PEM bundle of CAs to trust instead of the system roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain and key for mutual TLS; both or neither.
    pub client_cert_file: Option<PathBuf>,
    pub client_key_file: Option<PathBuf>,
    /// Skip server certificate verification. For test setups only.
    pub insecure_skip_verify: bool,
    /// Extra headers on every request (e.g. `X-Scope-OrgID` for Thanos/Mimir tenants).
    pub headers: Vec<(String, String)>,
    /// Method for `query` / `query_range`.
    pub verb: Verb,
    /// Whole-request timeout, connect to last body byte. Time spent waiting for an in-flight slot
    /// is not included, so a busy client does not turn queueing into spurious timeouts.
    pub timeout: Duration,
    /// Cap on concurrent requests, so a burst (range chunks, relists) cannot overload Prometheus.
    pub max_in_flight: usize,
    /// Range queries with more points per series are split (Prometheus rejects > 11,000).
    pub max_points_per_query: u64,
    /// `series` requests whose GET URL would exceed this many bytes are sent as POST forms.
    pub max_get_url_len: usize,
    /// Abort reading a response body larger than this. A careless `series` selector can return
    /// gigabytes (prometheus-adapter #221); failing one request beats the process being OOM-killed.
    /// `None` means unlimited.
    pub max_response_bytes: Option<usize>,
    pub metrics: Option<MetricsOptions>,
}

impl std::fmt::Debug for PrometheusConfig {
    /// Header values are often credentials (API keys, tenant tokens), so only names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("PrometheusConfig")
            .field("url", &self.url)
            .field("bearer_token_file", &self.bearer_token_file)
            .field("basic_auth", &self.basic_auth)
            .field("ca_file", &self.ca_file)
            .field("client_cert_file", &self.client_cert_file)
            .field("client_key_file", &self.client_key_file)
            .field("insecure_skip_verify", &self.insecure_skip_verify)
            .field("headers", &header_names)
            .field("verb", &self.verb)
            .field("timeout", &self.timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_points_per_query", &self.max_points_per_query)
            .field("max_get_url_len", &self.max_get_url_len)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("metrics", &self.metrics)
            .finish()
    }
}

/// The `--prometheus-max-response-size` default of the services: no real query or relist comes
/// near it (100k pods' series lists are tens of MiB), while a careless `series` selector or a
/// misbehaving proxy stops there instead of at the OOM killer. Upstream has no cap.
pub const DEFAULT_MAX_RESPONSE_SIZE: &str = "512Mi";

/// `--prometheus-max-response-size`: a Kubernetes quantity of bytes (`512Mi`, `1G`, `1048576`);
/// `0` turns the cap off.
pub fn parse_response_limit(text: &str) -> Result<Option<usize>, String> {
    let q = crate::quantity::Quantity::parse(text).map_err(|e| e.to_string())?;
    let bytes = q.value();
    if bytes < 0 {
        return Err(format!(
            "{text:?} is negative; give a size such as 512Mi, or 0 for no limit"
        ));
    }
    match usize::try_from(bytes) {
        Ok(0) => Ok(None),
        Ok(n) => Ok(Some(n)),
        Err(_) => Err(format!("{text:?} is larger than this machine can address")),
    }
}

impl PrometheusConfig {
    /// A config with defaults: GET, 60 s timeout, 10 in flight (Crane's query concurrency),
    /// 11,000 points per range chunk, POST for series URLs over 8 KiB, no body limit, no auth,
    /// system roots.
    pub fn new(url: impl Into<String>) -> Self {
        PrometheusConfig {
            url: url.into(),
            bearer_token_file: None,
            basic_auth: None,
            ca_file: None,
            client_cert_file: None,
            client_key_file: None,
            insecure_skip_verify: false,
            headers: Vec::new(),
            verb: Verb::Get,
            timeout: Duration::from_secs(60),
            max_in_flight: 10,
            max_points_per_query: DEFAULT_MAX_POINTS,
            max_get_url_len: 8 * 1024,
            max_response_bytes: None,
            metrics: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_limits_read_as_quantities() {
        assert_eq!(parse_response_limit("512Mi"), Ok(Some(512 << 20)));
        assert_eq!(parse_response_limit("1G"), Ok(Some(1_000_000_000)));
        assert_eq!(parse_response_limit("4096"), Ok(Some(4096)));
        assert_eq!(parse_response_limit("0"), Ok(None));
        assert_eq!(
            parse_response_limit(DEFAULT_MAX_RESPONSE_SIZE),
            Ok(Some(512 << 20))
        );
    }

    #[test]
    fn bad_response_limits_say_why() {
        let negative = parse_response_limit("-1Mi").unwrap_err();
        assert!(negative.contains("negative"), "{negative}");
        assert!(parse_response_limit("lots").is_err());
        assert!(parse_response_limit("").is_err());
    }
}
