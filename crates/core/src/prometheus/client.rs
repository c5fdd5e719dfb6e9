//! The HTTP client proper: request building, auth, concurrency limit, timeouts, decoding.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use super::PrometheusError;
use super::config::{BasicAuth, PartialResponse, PrometheusConfig, Verb};
use super::endpoint::{
    Endpoint, endpoint_url, format_timestamp_ms, get_url, parse_base_url, system_time_ms,
};
use super::interpret::{interpret, interpret_decoded, interpret_error, interpret_read};
use super::metrics::ClientMetrics;
use super::range::{Chunk, merge_chunks, plan_chunks, point_count};
use super::remote_read::{RawMatcher, RawSeries, ReadFormat, encode_request};
use super::response::{
    DecodeError, Decoded, Labels, QueryResult, RangeSeries, decode_build_version, decode_query,
};
use super::series_shapes::SeriesShapes;
use super::streamed::{StreamError, decode_streamed};
use super::tls::{TlsSettings, client_config};
use super::token::TokenFile;

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
        self.series_as(matchers, start, end).await
    }

    /// [`Self::series`] reduced to distinct names and label names as the answer is read: what
    /// discovery needs, in memory proportional to the metrics, not to the series.
    pub async fn series_shapes(
        &self,
        matchers: &[String],
        start: Option<SystemTime>,
        end: Option<SystemTime>,
    ) -> Result<SeriesShapes, PrometheusError> {
        self.series_as(matchers, start, end).await
    }

    /// `/api/v1/series` with the configured limit (sent as `limit` + 1). More series than the
    /// limit, or a warning that the backend truncated the answer, is an error: a relist that
    /// silently misses series makes metrics disappear from discovery.
    async fn series_as<T: SeriesCount + DeserializeOwned + Send + 'static>(
        &self,
        matchers: &[String],
        start: Option<SystemTime>,
        end: Option<SystemTime>,
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
        let (data, warnings) = self.call_streamed::<T>(Endpoint::Series, params).await?;
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
        params: Vec<(&str, String)>,
        decode: fn(&[u8]) -> Result<Decoded<T>, DecodeError>,
    ) -> Result<(T, Vec<String>), PrometheusError> {
        let req = self.request_for(endpoint, &self.with_partial_response(params));
        self.exchange(endpoint, req, |resp| async move {
            let (status, _, body) = self.whole_body(endpoint, resp).await?;
            interpret(endpoint, status, &body, decode)
        })
        .await
    }

    /// [`Self::call_keeping_warnings`] with a success decoded while it arrives (see
    /// `streamed`), for answers too large to hold whole; error answers are read whole.
    async fn call_streamed<T: DeserializeOwned + Send + 'static>(
        &self,
        endpoint: Endpoint,
        params: Vec<(&str, String)>,
    ) -> Result<(T, Vec<String>), PrometheusError> {
        let req = self.request_for(endpoint, &self.with_partial_response(params));
        self.exchange(endpoint, req, |resp| async move {
            let status = resp.status().as_u16();
            if !(200..300).contains(&status) {
                let (_, _, body) = self.whole_body(endpoint, resp).await?;
                return Err(interpret_error(endpoint, status, &body));
            }
            let limit = self.inner.max_response_bytes.unwrap_or(usize::MAX);
            if resp.content_length().is_some_and(|n| n > limit as u64) {
                return Err(PrometheusError::ResponseTooLarge {
                    endpoint: endpoint.as_str(),
                    limit,
                });
            }
            let mut received = 0usize;
            let chunks = futures::stream::unfold(resp, |mut resp| async move {
                let chunk = resp.chunk().await.transpose()?;
                Some((chunk, resp))
            })
            .map(|chunk| {
                let chunk = chunk.map_err(|e| self.classify(endpoint, e))?;
                received += chunk.len();
                if received > limit {
                    return Err(PrometheusError::ResponseTooLarge {
                        endpoint: endpoint.as_str(),
                        limit,
                    });
                }
                Ok(chunk)
            });
            let decoded = match decode_streamed::<T, _>(chunks).await {
                Ok(decoded) => Ok(decoded),
                Err(StreamError::Body(e)) => return Err(e),
                Err(StreamError::Decode(e)) => Err(e),
            };
            interpret_decoded(endpoint, status, decoded)
        })
        .await
    }

    fn with_partial_response<'a>(
        &self,
        mut params: Vec<(&'a str, String)>,
    ) -> Vec<(&'a str, String)> {
        if let Some(value) = self.inner.partial_response.param() {
            params.push(("partial_response", value.to_owned()));
        }
        params
    }

    /// One request under the in-flight limit and the timeout, timed in the client's metrics:
    /// `read` turns the answer into the result or the most specific error.
    async fn exchange<T, F, Fut>(
        &self,
        endpoint: Endpoint,
        req: reqwest::RequestBuilder,
        read: F,
    ) -> Result<T, PrometheusError>
    where
        F: FnOnce(reqwest::Response) -> Fut,
        Fut: Future<Output = Result<T, PrometheusError>>,
    {
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
        let answer = async { read(self.send(endpoint, req).await?).await };
        let result = tokio::time::timeout(inner.timeout, answer)
            .await
            .unwrap_or(Err(PrometheusError::Timeout {
                endpoint: endpoint.as_str(),
                timeout: inner.timeout,
            }));
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
        self.exchange(Endpoint::Read, req, |resp| async move {
            let (status, content_type, body) = self.whole_body(Endpoint::Read, resp).await?;
            interpret_read(status, &content_type, &body, start_ms, end_ms)
        })
        .await
    }

    /// Sends with the configured headers and credentials; the answer's body is still to read.
    async fn send(
        &self,
        endpoint: Endpoint,
        mut req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, PrometheusError> {
        let inner = &self.inner;
        req = req.headers(inner.headers.clone());
        if let Some(token) = &inner.token {
            req = req.bearer_auth(token.token()?);
        } else if let Some(basic) = &inner.basic_auth {
            req = req.basic_auth(&basic.username, Some(&basic.password));
        }
        req.send().await.map_err(|e| self.classify(endpoint, e))
    }

    fn classify(&self, endpoint: Endpoint, e: reqwest::Error) -> PrometheusError {
        let endpoint = endpoint.as_str();
        if e.is_timeout() {
            PrometheusError::Timeout {
                endpoint,
                timeout: self.inner.timeout,
            }
        } else if e.is_connect() {
            PrometheusError::Connect {
                endpoint,
                source: e,
            }
        } else {
            PrometheusError::Transport {
                endpoint,
                source: e,
            }
        }
    }

    /// (status, Content-Type, body) of an answer, within the response size limit.
    async fn whole_body(
        &self,
        endpoint: Endpoint,
        mut resp: reqwest::Response,
    ) -> Result<(u16, String, Bytes), PrometheusError> {
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        // Chunk by chunk into one buffer sized from Content-Length: each chunk (and the
        // connection's read buffer behind it) is released once copied, so a large answer is
        // held about once, not twice as collecting the chunks and joining them would.
        let limit = self.inner.max_response_bytes.unwrap_or(usize::MAX);
        let too_large = || PrometheusError::ResponseTooLarge {
            endpoint: endpoint.as_str(),
            limit,
        };
        if resp.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_large());
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
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.classify(endpoint, e))? {
            if buf.len() + chunk.len() > limit {
                return Err(too_large());
            }
            buf.extend_from_slice(&chunk);
        }
        Ok((status, content_type, buf.freeze()))
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
