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

/// Thanos' `partial_response` parameter: whether an answer may leave out a store (a Prometheus
/// replica, a sidecar) that failed. Thanos Query allows it unless told otherwise, and then an
/// HPA or a recommendation silently reads a sum over half the data; so the suite asks for
/// complete answers (`false`) unless configured. Prometheus, VictoriaMetrics and Mimir ignore
/// the parameter; `Unset` is for a proxy in front that rejects parameters it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartialResponse {
    /// `partial_response=false`: a failed store fails the query, loudly.
    #[default]
    Deny,
    /// `partial_response=true`: answers may be partial; the backend's warnings are logged.
    Allow,
    /// The parameter is not sent; the backend's own default applies.
    Unset,
}

impl PartialResponse {
    /// The value sent, if any.
    pub fn param(self) -> Option<&'static str> {
        match self {
            PartialResponse::Deny => Some("false"),
            PartialResponse::Allow => Some("true"),
            PartialResponse::Unset => None,
        }
    }
}

impl std::str::FromStr for PartialResponse {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "false" => Ok(PartialResponse::Deny),
            "true" => Ok(PartialResponse::Allow),
            "unset" => Ok(PartialResponse::Unset),
            _ => Err(format!(
                "{s:?} is not one of false (complete answers or an error), true (partial answers allowed) or unset (parameter not sent)"
            )),
        }
    }
}

/// A `Name=Value` header flag (`--prometheus-header=X-Scope-OrgID=tenant-a`), split at the
/// first `=` so values may contain `=` (base64 tokens); no `=` means an empty value, as
/// prometheus-adapter reads it.
pub fn parse_header_flag(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once('=').unwrap_or((text, ""));
    let name = name.trim();
    if name.is_empty() {
        return Err(format!(
            "{text:?} is not Name=Value (for example X-Scope-OrgID=tenant-a)"
        ));
    }
    Ok((name.to_owned(), value.to_owned()))
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
    /// Method for `query` / `query_range`. With `Get`, a request whose URL would be longer than
    /// [`Self::max_get_url_len`] is sent as a POST form instead.
    pub verb: Verb,
    /// Whole-request timeout, connect to last body byte. Time spent waiting for an in-flight slot
    /// is not included, so a busy client does not turn queueing into spurious timeouts.
    pub timeout: Duration,
    /// Cap on concurrent requests, so a burst (range chunks, relists) cannot overload Prometheus.
    pub max_in_flight: usize,
    /// Range queries with more points per series are split (Prometheus rejects > 11,000).
    pub max_points_per_query: u64,
    /// Requests whose GET URL would exceed this many bytes are sent as POST forms: a `pods/*`
    /// request over many pods builds `pod=~"a|b|…"` selectors that proxies and query layers
    /// reject in a URL (HTTP 414, prometheus-adapter #668, Crane #907).
    pub max_get_url_len: usize,
    /// Most series one `/api/v1/series` answer may hold (`limit` is sent one higher, since
    /// some backends truncate silently); an answer with more, or one the backend says it
    /// truncated, is an error rather than a silently incomplete list.
    pub series_limit: Option<usize>,
    /// Thanos' `partial_response` on every request.
    pub partial_response: PartialResponse,
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
            .field("series_limit", &self.series_limit)
            .field("partial_response", &self.partial_response)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("metrics", &self.metrics)
            .finish()
    }
}

/// The `--prometheus-max-get-length` default: 8 KiB is the smallest request-line limit of the
/// common proxies (nginx' default large_client_header_buffers), well under the ~16 KB where
/// query layers start refusing.
pub const DEFAULT_MAX_GET_URL_LEN: usize = 8 * 1024;

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
    /// 11,000 points per range chunk, POST for URLs over 8 KiB, no series limit, complete
    /// answers only (`partial_response=false`), no body limit, no auth, system roots.
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
            max_get_url_len: DEFAULT_MAX_GET_URL_LEN,
            series_limit: None,
            partial_response: PartialResponse::Deny,
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
    fn partial_response_values() {
        assert_eq!("false".parse(), Ok(PartialResponse::Deny));
        assert_eq!("true".parse(), Ok(PartialResponse::Allow));
        assert_eq!("unset".parse(), Ok(PartialResponse::Unset));
        assert_eq!(PartialResponse::default().param(), Some("false"));
        assert_eq!(PartialResponse::Unset.param(), None);
        let bad = "maybe".parse::<PartialResponse>().unwrap_err();
        assert!(bad.contains("unset"), "{bad}");
    }

    #[test]
    fn header_flags_split_at_the_first_equals() {
        assert_eq!(
            parse_header_flag("X-Scope-OrgID=tenant-a"),
            Ok(("X-Scope-OrgID".into(), "tenant-a".into()))
        );
        assert_eq!(
            parse_header_flag("Authorization=Basic dTpw=="),
            Ok(("Authorization".into(), "Basic dTpw==".into()))
        );
        assert_eq!(
            parse_header_flag("X-Empty="),
            Ok(("X-Empty".into(), "".into()))
        );
        assert_eq!(
            parse_header_flag("X-Flag"),
            Ok(("X-Flag".into(), "".into()))
        );
        for bad in ["=v", " =v", ""] {
            assert!(parse_header_flag(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn bad_response_limits_say_why() {
        let negative = parse_response_limit("-1Mi").unwrap_err();
        assert!(negative.contains("negative"), "{negative}");
        assert!(parse_response_limit("lots").is_err());
        assert!(parse_response_limit("").is_err());
    }
}
