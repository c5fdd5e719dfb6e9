//! A loopback proxy in front of a Prometheus that answers every instant query at one fixed
//! evaluation time, whatever time (if any) the client asked for.
//!
//! Two adapters asked the same question a few milliseconds apart send Prometheus different
//! `time`s; `rate()` over the same samples then extrapolates differently in the last float
//! digits, and a value truncated to a milli-quantity can differ by one. Pinning the time makes
//! both see exactly the same answer, so the comparison is about the adapters alone.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The proxy; stops serving when dropped.
pub struct PinnedPrometheus {
    /// The proxy's base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PinnedPrometheus {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Upstream {
    url: String,
    /// The evaluation time, in Prometheus' seconds syntax.
    at: String,
    http: reqwest::Client,
}

impl PinnedPrometheus {
    /// Proxies to the Prometheus at `upstream` (base URL), answering `/api/v1/query` at
    /// `at_unix_seconds`.
    pub async fn start(upstream: &str, at_unix_seconds: i64) -> Result<Self> {
        let state = Upstream {
            url: upstream.trim_end_matches('/').to_owned(),
            at: at_unix_seconds.to_string(),
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()?,
        };
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .context("binding the pinned-time proxy")?;
        let url = format!("http://{}", listener.local_addr()?);
        let app = axum::Router::new().fallback(forward).with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, task })
    }
}

/// `params` (an `application/x-www-form-urlencoded` string) with `time` replaced by `at`.
pub fn pin_time(params: &str, at: &str) -> String {
    let mut out: Vec<String> = params
        .split('&')
        .filter(|kv| !kv.is_empty() && kv.split('=').next() != Some("time"))
        .map(str::to_owned)
        .collect();
    out.push(format!("time={at}"));
    out.join("&")
}

async fn forward(State(up): State<Upstream>, request: Request) -> Response {
    match forward_inner(&up, request).await {
        Ok(r) => r,
        Err(e) => (StatusCode::BAD_GATEWAY, format!("pinned proxy: {e:#}")).into_response(),
    }
}

async fn forward_inner(up: &Upstream, request: Request) -> Result<Response> {
    let (parts, body) = request.into_parts();
    let body: Bytes = axum::body::to_bytes(body, 64 << 20).await?;
    let path = parts.uri.path().to_owned();
    let instant = path.ends_with("/api/v1/query");
    let mut query = parts.uri.query().unwrap_or("").to_owned();
    let mut body = body.to_vec();
    if instant {
        if parts.method == Method::POST {
            body = pin_time(&String::from_utf8_lossy(&body), &up.at).into_bytes();
        } else {
            query = pin_time(&query, &up.at);
        }
    }
    relay(&up.http, &up.url, parts, &path, &query, body).await
}

/// Sends a request to the Prometheus at `base_url` (with the client's content type, accept and
/// authorization headers) and returns its answer as is.
pub(crate) async fn relay(
    http: &reqwest::Client,
    base_url: &str,
    parts: axum::http::request::Parts,
    path: &str,
    query: &str,
    body: Vec<u8>,
) -> Result<Response> {
    let url = if query.is_empty() {
        format!("{base_url}{path}")
    } else {
        format!("{base_url}{path}?{query}")
    };
    let mut headers = HeaderMap::new();
    for name in [header::CONTENT_TYPE, header::ACCEPT, header::AUTHORIZATION] {
        if let Some(v) = parts.headers.get(&name) {
            headers.insert(name, v.clone());
        }
    }
    let answer = http
        .request(parts.method, url)
        .headers(headers)
        .body(body)
        .send()
        .await?;
    let status = answer.status();
    let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
    let bytes = answer.bytes().await?;
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    if let Some(ct) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::pin_time;

    #[test]
    fn replaces_or_adds_the_time_parameter() {
        assert_eq!(pin_time("query=up&time=17.5", "100"), "query=up&time=100");
        assert_eq!(pin_time("query=up", "100"), "query=up&time=100");
        assert_eq!(pin_time("", "100"), "time=100");
        assert_eq!(
            pin_time("time=1&query=a%26time%3D2&timeout=5s", "9"),
            "query=a%26time%3D2&timeout=5s&time=9"
        );
    }
}
