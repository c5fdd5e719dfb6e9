//! The HTTP client proper: request building, auth, concurrency limit, timeouts, decoding.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use tokio::sync::Semaphore;

use super::PrometheusError;
use super::config::{BasicAuth, PartialResponse, PrometheusConfig, Verb};
use super::metrics::ClientMetrics;
use super::range::{Chunk, merge_chunks, plan_chunks, point_count};
use super::remote_read::{
    RawMatcher, RawSeries, ReadFormat, decode_chunks, decode_samples, encode_request,
};
use super::response::{
    DecodeError, Decoded, Labels, QueryResult, RangeSeries, SeriesShapes, decode_build_version,
    decode_error_body, decode_query, decode_series, decode_series_shapes,
};
use super::tls::{TlsSettings, client_config};
use super::token::TokenFile;

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

/// How much of a non-JSON error body is kept in [`PrometheusError::Http`]: enough to recognise a
/// proxy's error page, not enough to flood logs.
const ERROR_BODY_SNIPPET: usize = 512;

/// An async client for the Prometheus HTTP API. Cheap to clone; clones share the connection
/// pool, the in-flight limit and the metrics.
#[derive(Clone)]
pub struct PrometheusClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base: Url,
    token: Option<TokenFile>,
    basic_auth: Option<BasicAuth>,
    headers: HeaderMap,
    verb: Verb,
    timeout: Duration,
    max_points: u64,
    max_get_url_len: usize,
    series_limit: Option<usize>,
    partial_response: PartialResponse,
    max_response_bytes: Option<usize>,
    permits: Semaphore,
    metrics: Option<ClientMetrics>,
}

impl std::fmt::Debug for PrometheusClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusClient")
            .field("base", &self.inner.base.as_str())
            .finish_non_exhaustive()
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

impl PrometheusClient {
    /// Builds a client. Reads the token, CA and client-cert files now so a misconfiguration fails
    /// at startup with the file name, not on the first query.
    pub fn new(config: PrometheusConfig) -> Result<Self, PrometheusError> {
        let base = parse_base_url(&config.url)?;
        if config.max_in_flight == 0 {
            return Err(PrometheusError::Config(
                "max in-flight requests must be at least 1".into(),
            ));
        }
        if config.timeout.is_zero() {
            return Err(PrometheusError::Config("timeout must be positive".into()));
        }
        if config.bearer_token_file.is_some() && config.basic_auth.is_some() {
            return Err(PrometheusError::Config(
                "bearer token file and basic auth are mutually exclusive".into(),
            ));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                PrometheusError::Config(format!("invalid header name {name:?}: {e}"))
            })?;
            let mut v = HeaderValue::from_str(value).map_err(|e| {
                PrometheusError::Config(format!("invalid value for header {name:?}: {e}"))
            })?;
            v.set_sensitive(true);
            headers.append(n, v);
        }
        let tls = client_config(&TlsSettings {
            ca_file: config.ca_file.as_deref(),
            client_cert_file: config.client_cert_file.as_deref(),
            client_key_file: config.client_key_file.as_deref(),
            insecure_skip_verify: config.insecure_skip_verify,
            want_native_roots: base.scheme() == "https",
        })?;
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| PrometheusError::Config(format!("cannot build HTTP client: {e}")))?;
        let token = config
            .bearer_token_file
            .as_deref()
            .map(TokenFile::new)
            .transpose()?;
        let metrics = config
            .metrics
            .as_ref()
            .map(|m| ClientMetrics::register(&m.registry, &m.namespace))
            .transpose()?;
        Ok(PrometheusClient {
            inner: Arc::new(Inner {
                http,
                base,
                token,
                basic_auth: config.basic_auth,
                headers,
                verb: config.verb,
                timeout: config.timeout,
                max_points: config.max_points_per_query,
                max_get_url_len: config.max_get_url_len,
                series_limit: config.series_limit,
                partial_response: config.partial_response,
                max_response_bytes: config.max_response_bytes,
                permits: Semaphore::new(config.max_in_flight),
                metrics,
            }),
        })
    }

    /// A client with all defaults, for tests and simple setups.
    pub fn from_url(url: impl Into<String>) -> Result<Self, PrometheusError> {
        Self::new(PrometheusConfig::new(url))
    }

    /// Instant query at `time` (Prometheus' "now" when `None`).
    pub async fn query(
        &self,
        promql: &str,
        time: Option<SystemTime>,
    ) -> Result<QueryResult, PrometheusError> {
        let mut params = vec![("query", promql.to_owned())];
        if let Some(t) = time {
            params.push(("time", format_timestamp_ms(system_time_ms(t, "time")?)));
        }
        self.call(Endpoint::Query, params, decode_query).await
    }

    /// Range query over `[start, end]` every `step`, returned as one series per label set with
    /// samples in time order. Ranges above the configured max points per series are split into
    /// chunks that run in parallel (bounded by the in-flight limit) and are merged back.
    pub async fn query_range(
        &self,
        promql: &str,
        start: SystemTime,
        end: SystemTime,
        step: Duration,
    ) -> Result<Vec<RangeSeries>, PrometheusError> {
        let start_ms = system_time_ms(start, "start")?;
        let end_ms = system_time_ms(end, "end")?;
        let step_ms = i64::try_from(step.as_millis()).unwrap_or(i64::MAX);
        if step_ms < 1 {
            return Err(PrometheusError::InvalidRequest(
                "step must be at least 1ms".into(),
            ));
        }
        let chunks = plan_chunks(start_ms, end_ms, step_ms, self.inner.max_points)
            .map_err(PrometheusError::InvalidRequest)?;
        if chunks.len() > 1 {
            tracing::debug!(
                points = point_count(start_ms, end_ms, step_ms),
                chunks = chunks.len(),
                "splitting range query"
            );
        }
        let results = futures::future::try_join_all(
            chunks
                .iter()
                .map(|c| self.query_range_chunk(promql, *c, step_ms)),
        )
        .await?;
        if results.len() == 1 {
            return Ok(results.into_iter().next().unwrap_or_default());
        }
        Ok(merge_chunks(results))
    }

    async fn query_range_chunk(
        &self,
        promql: &str,
        chunk: Chunk,
        step_ms: i64,
    ) -> Result<Vec<RangeSeries>, PrometheusError> {
        let params = vec![
            ("query", promql.to_owned()),
            ("start", format_timestamp_ms(chunk.start_ms)),
            ("end", format_timestamp_ms(chunk.end_ms)),
            ("step", format_timestamp_ms(step_ms)),
        ];
        match self
            .call(Endpoint::QueryRange, params, decode_query)
            .await?
        {
            QueryResult::Matrix(m) => Ok(m),
            other => Err(PrometheusError::UnexpectedResultType {
                endpoint: Endpoint::QueryRange.as_str(),
                got: other.result_type(),
            }),
        }
    }

    /// Label sets of the series matching any of `matchers` (each a series selector such as
    /// `{__name__=~"http_.*",namespace!=""}`), optionally limited to `[start, end]`.
    pub async fn series(
        &self,
        matchers: &[String],
        start: Option<SystemTime>,
        end: Option<SystemTime>,
    ) -> Result<Vec<Labels>, PrometheusError> {
        self.series_as(matchers, start, end, decode_series).await
    }

    /// [`Self::series`] reduced to distinct names and label names as the answer is read: what
    /// discovery needs, in memory proportional to the metrics, not to the series.
    pub async fn series_shapes(
        &self,
        matchers: &[String],
        start: Option<SystemTime>,
        end: Option<SystemTime>,
    ) -> Result<SeriesShapes, PrometheusError> {
        self.series_as(matchers, start, end, decode_series_shapes)
            .await
    }

    /// `/api/v1/series` with the configured limit (sent as `limit` + 1). More series than the
    /// limit, or a warning that the backend truncated the answer, is an error: a relist that
    /// silently misses series makes metrics disappear from discovery.
    async fn series_as<T: SeriesCount>(
        &self,
        matchers: &[String],
        start: Option<SystemTime>,
        end: Option<SystemTime>,
        decode: fn(&[u8]) -> Result<Decoded<T>, DecodeError>,
    ) -> Result<T, PrometheusError> {
        if matchers.is_empty() {
            return Err(PrometheusError::InvalidRequest(
                "series needs at least one matcher".into(),
            ));
        }
        let mut params: Vec<(&str, String)> =
            matchers.iter().map(|m| ("match[]", m.clone())).collect();
        if let Some(s) = start {
            params.push(("start", format_timestamp_ms(system_time_ms(s, "start")?)));
        }
        if let Some(e) = end {
            params.push(("end", format_timestamp_ms(system_time_ms(e, "end")?)));
        }
        // One more than the limit: VictoriaMetrics truncates to `limit` without a word, so
        // only an answer longer than the limit proves there was more.
        let limit = self.inner.series_limit;
        if let Some(n) = limit {
            params.push(("limit", n.saturating_add(1).to_string()));
        }
        let (data, warnings) = self
            .call_keeping_warnings(Endpoint::Series, params, decode)
            .await?;
        let truncated = warnings.iter().find(|w| w.contains("truncated"));
        if let Some(warning) = truncated {
            return Err(PrometheusError::SeriesTruncated {
                limit,
                detail: format!("the backend warned: {warning}"),
            });
        }
        if let Some(n) = limit
            && data.series_count() > n
        {
            return Err(PrometheusError::SeriesTruncated {
                limit,
                detail: format!("{} series answered", data.series_count()),
            });
        }
        Ok(data)
    }

    /// A GET, or a POST form when so configured or when the GET URL would be longer than the
    /// configured length (the URL is built once, to measure it and to send it).
    fn request_for(
        &self,
        endpoint: Endpoint,
        params: &[(&str, String)],
    ) -> reqwest::RequestBuilder {
        let inner = &self.inner;
        let post = || {
            inner
                .http
                .request(Method::POST, endpoint_url(&inner.base, endpoint))
                .form(params)
        };
        if inner.verb == Verb::Post {
            return post();
        }
        let url = get_url(&inner.base, endpoint, params);
        let len = url.as_str().len();
        if len > inner.max_get_url_len {
            tracing::debug!(
                endpoint = endpoint.as_str(),
                url_len = len,
                "sending as POST: the GET URL would be too long"
            );
            post()
        } else {
            inner.http.request(Method::GET, url)
        }
    }

    /// One HTTP request with permit, auth, timeout, metrics and decoding; the backend's
    /// warnings are logged.
    async fn call<T>(
        &self,
        endpoint: Endpoint,
        params: Vec<(&str, String)>,
        decode: fn(&[u8]) -> Result<Decoded<T>, DecodeError>,
    ) -> Result<T, PrometheusError> {
        let (data, _) = self.call_keeping_warnings(endpoint, params, decode).await?;
        Ok(data)
    }

    /// [`Self::call`], also returning the warnings (after logging them).
    async fn call_keeping_warnings<T>(
        &self,
        endpoint: Endpoint,
        mut params: Vec<(&str, String)>,
        decode: fn(&[u8]) -> Result<Decoded<T>, DecodeError>,
    ) -> Result<(T, Vec<String>), PrometheusError> {
        let inner = &self.inner;
        if let Some(value) = inner.partial_response.param() {
            params.push(("partial_response", value.to_owned()));
        }
        let req = self.request_for(endpoint, &params);
        self.exchange(endpoint, req, |status, _, body| {
            interpret(endpoint, status, body, decode)
        })
        .await
    }

    /// One request under the in-flight limit, timed in the client's metrics: `read` turns
    /// (status, Content-Type, body) into the answer or the most specific error.
    async fn exchange<T>(
        &self,
        endpoint: Endpoint,
        req: reqwest::RequestBuilder,
        read: impl FnOnce(u16, &str, &[u8]) -> Result<T, PrometheusError>,
    ) -> Result<T, PrometheusError> {
        let inner = &self.inner;
        let waited = Instant::now();
        // The semaphore is never closed, so acquire only fails if that invariant breaks; map it
        // to an error rather than panicking.
        let _permit = inner
            .permits
            .acquire()
            .await
            .map_err(|_| PrometheusError::Config("in-flight limiter closed".into()))?;
        let metrics = inner.metrics.as_ref();
        if let Some(m) = metrics {
            m.queue_wait.observe(waited.elapsed().as_secs_f64());
            m.in_flight.inc();
        }
        let started = Instant::now();
        let result = self
            .send(endpoint, req)
            .await
            .and_then(|(status, content_type, body)| read(status, &content_type, &body));
        if let Some(m) = metrics {
            m.in_flight.dec();
            let code = match &result {
                Ok(_) => "200".to_owned(),
                Err(e) => e.metric_code(),
            };
            m.duration
                .with_label_values(&[endpoint.as_str(), code.as_str()])
                .observe(started.elapsed().as_secs_f64());
        }
        result
    }

    /// The server's version (`/api/v1/status/buildinfo`): PromQL's window edges changed in
    /// Prometheus 3.
    pub async fn build_version(&self) -> Result<String, PrometheusError> {
        self.call(Endpoint::BuildInfo, Vec::new(), decode_build_version)
            .await
    }

    /// Raw samples of the series matching `matchers` over `[start_ms, end_ms]`, through the
    /// remote-read API (`/api/v1/read`). A backend without it (Thanos Query, VictoriaMetrics,
    /// a proxy) answers [`PrometheusError::RemoteReadUnsupported`], so callers can fall back to
    /// `query_range`.
    pub async fn read(
        &self,
        matchers: &[RawMatcher],
        start_ms: i64,
        end_ms: i64,
        format: ReadFormat,
    ) -> Result<Vec<RawSeries>, PrometheusError> {
        let inner = &self.inner;
        let req = inner
            .http
            .post(endpoint_url(&inner.base, Endpoint::Read))
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .header(reqwest::header::CONTENT_ENCODING, "snappy")
            .header("X-Prometheus-Remote-Read-Version", "0.1.0")
            .body(encode_request(matchers, start_ms, end_ms, format));
        self.exchange(Endpoint::Read, req, |status, content_type, body| {
            interpret_read(status, content_type, body, start_ms, end_ms)
        })
        .await
    }

    /// Sends with the configured headers and credentials, within the timeout and the response
    /// size limit: (status, Content-Type, body).
    async fn send(
        &self,
        endpoint: Endpoint,
        mut req: reqwest::RequestBuilder,
    ) -> Result<(u16, String, Bytes), PrometheusError> {
        let inner = &self.inner;
        let name = endpoint.as_str();
        req = req.headers(inner.headers.clone());
        if let Some(token) = &inner.token {
            req = req.bearer_auth(token.token()?);
        } else if let Some(basic) = &inner.basic_auth {
            req = req.basic_auth(&basic.username, Some(&basic.password));
        }
        let classify = |e: reqwest::Error| {
            if e.is_timeout() {
                PrometheusError::Timeout {
                    endpoint: name,
                    timeout: inner.timeout,
                }
            } else if e.is_connect() {
                PrometheusError::Connect {
                    endpoint: name,
                    source: e,
                }
            } else {
                PrometheusError::Transport {
                    endpoint: name,
                    source: e,
                }
            }
        };
        let exchange = async {
            let mut resp = req.send().await.map_err(classify)?;
            let status = resp.status().as_u16();
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            // Chunk by chunk into one buffer sized from Content-Length: each chunk (and the
            // connection's read buffer behind it) is released once copied, so a large answer
            // (a relist's /api/v1/series) is held about once, not twice as collecting the
            // chunks and joining them would.
            let limit = inner.max_response_bytes.unwrap_or(usize::MAX);
            let too_large = PrometheusError::ResponseTooLarge {
                endpoint: name,
                limit,
            };
            if resp.content_length().is_some_and(|n| n > limit as u64) {
                return Err(too_large);
            }
            // Content-Length is the server's claim, not bytes received: a proxy announcing a
            // terabyte must not make us reserve one. Past this the buffer grows as data comes.
            const MAX_UP_FRONT: u64 = 16 << 20;
            let expected = resp
                .content_length()
                .unwrap_or(0)
                .min(limit as u64)
                .min(MAX_UP_FRONT) as usize;
            let mut buf = BytesMut::with_capacity(expected);
            while let Some(chunk) = resp.chunk().await.map_err(classify)? {
                if buf.len() + chunk.len() > limit {
                    return Err(too_large);
                }
                buf.extend_from_slice(&chunk);
            }
            let body = buf.freeze();
            Ok::<_, PrometheusError>((status, content_type, body))
        };
        tokio::time::timeout(inner.timeout, exchange)
            .await
            .map_err(|_| PrometheusError::Timeout {
                endpoint: name,
                timeout: inner.timeout,
            })?
    }
}

/// Turns status + body into a value (and the backend's warnings, logged here) or the most
/// specific error. Prometheus sends error JSON with 400/422/503; anything else non-2xx is most
/// likely a proxy, and its body is kept as a snippet.
pub(super) fn interpret<T>(
    endpoint: Endpoint,
    status: u16,
    body: &[u8],
    decode: fn(&[u8]) -> Result<Decoded<T>, DecodeError>,
) -> Result<(T, Vec<String>), PrometheusError> {
    let name = endpoint.as_str();
    if !(200..300).contains(&status) {
        return Err(match decode_error_body(body) {
            Some((error_type, error)) => PrometheusError::Api {
                endpoint: name,
                status,
                error_type,
                error,
            },
            None => PrometheusError::Http {
                endpoint: name,
                status,
                body: snippet(body),
            },
        });
    }
    match decode(body) {
        Ok(d) => {
            for w in &d.warnings {
                tracing::warn!(endpoint = name, warning = %w, "Prometheus returned a warning");
            }
            Ok((d.data, d.warnings))
        }
        Err(DecodeError::Api { error_type, error }) => Err(PrometheusError::Api {
            endpoint: name,
            status,
            error_type,
            error,
        }),
        Err(e) => Err(PrometheusError::Decode {
            endpoint: name,
            reason: e.to_string(),
        }),
    }
}

/// A remote-read answer: the format the server chose (its Content-Type), decoded; a status
/// that says the backend has no remote read becomes [`PrometheusError::RemoteReadUnsupported`].
pub(super) fn interpret_read(
    status: u16,
    content_type: &str,
    body: &[u8],
    start_ms: i64,
    end_ms: i64,
) -> Result<Vec<RawSeries>, PrometheusError> {
    let name = Endpoint::Read.as_str();
    if !(200..300).contains(&status) {
        let text = snippet(body);
        // 404/405/501: no such endpoint; VictoriaMetrics answers 400 "unsupported path"; a
        // proxy that lets only queries through, 403 (range queries then say whether they
        // are forbidden too).
        let unsupported = matches!(status, 403 | 404 | 405 | 501)
            || (status == 400 && text.contains("unsupported path"));
        return Err(if unsupported {
            PrometheusError::RemoteReadUnsupported { status, body: text }
        } else {
            PrometheusError::Http {
                endpoint: name,
                status,
                body: text,
            }
        });
    }
    let decoded = if content_type.starts_with("application/x-streamed-protobuf") {
        decode_chunks(body, start_ms, end_ms)
    } else if content_type.starts_with("application/x-protobuf") {
        decode_samples(body)
    } else {
        return Err(PrometheusError::RemoteReadUnsupported {
            status,
            body: format!("answered {content_type:?}, not protobuf"),
        });
    };
    decoded.map_err(|e| PrometheusError::Decode {
        endpoint: name,
        reason: e.to_string(),
    })
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim();
    match trimmed.char_indices().nth(ERROR_BODY_SNIPPET) {
        Some((i, _)) => format!("{}...", &trimmed[..i]),
        None => trimmed.to_owned(),
    }
}

/// How many series a decoded `/api/v1/series` answer holds, for the limit check.
pub(super) trait SeriesCount {
    fn series_count(&self) -> usize;
}

impl SeriesCount for Vec<Labels> {
    fn series_count(&self) -> usize {
        self.len()
    }
}

impl SeriesCount for SeriesShapes {
    fn series_count(&self) -> usize {
        self.series
    }
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
