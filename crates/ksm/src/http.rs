//! The metrics port: `/metrics` (text 0.0.4 or OpenMetrics by Accept, gzip on request,
//! `?resources=` / `?exclude_resources=` filters), `/healthz`, `/livez` and an index page.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ferrocrane_core::exposition::{Format, negotiate};
use serde::Deserialize;

use crate::store::MetricsStore;
use crate::telemetry::Telemetry;

#[derive(Clone)]
pub struct MetricsState {
    pub stores: Arc<Vec<Arc<MetricsStore>>>,
    pub gzip: bool,
    pub telemetry: Telemetry,
}

#[derive(Debug, Default, Deserialize)]
pub struct ScrapeQuery {
    /// Comma-separated resources to include (all when absent).
    pub resources: Option<String>,
    /// Comma-separated resources to leave out.
    pub exclude_resources: Option<String>,
}

pub fn router(state: MetricsState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "OK" }))
        .route("/livez", get(|| async { "OK" }))
        .route("/", get(index))
        .with_state(state)
}

async fn index() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<html><head><title>Kube Metrics Server</title></head><body><h1>Kube Metrics</h1>\
         <ul><li><a href='/metrics'>metrics</a></li><li><a href='/healthz'>healthz</a></li>\
         <li><a href='/livez'>livez</a></li></ul></body></html>",
    )
}

fn split_list(s: &Option<String>) -> Option<HashSet<&str>> {
    s.as_deref().map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .collect()
    })
}

/// Writes the selected stores into one buffer; separated from the handler for tests.
pub fn render(stores: &[Arc<MetricsStore>], query: &ScrapeQuery, format: Format) -> Vec<u8> {
    let include = split_list(&query.resources);
    let exclude = split_list(&query.exclude_resources).unwrap_or_default();
    let selected: Vec<&Arc<MetricsStore>> = stores
        .iter()
        .filter(|s| {
            include
                .as_ref()
                .is_none_or(|inc| inc.contains(s.resource()))
        })
        .filter(|s| !exclude.contains(s.resource()))
        .collect();
    let mut out = Vec::with_capacity(selected.iter().map(|s| s.size_hint()).sum::<usize>() + 16);
    for store in selected {
        store.write_all(&mut out, format);
    }
    out.extend_from_slice(format.terminator());
    out
}

async fn metrics(
    State(state): State<MetricsState>,
    Query(query): Query<ScrapeQuery>,
    headers: HeaderMap,
) -> Response {
    let started = Instant::now();
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = negotiate(accept);
    let stores = state.stores.clone();
    // Copying bytes is cheap but not free; keep it off the async workers.
    let body = tokio::task::spawn_blocking(move || render(&stores, &query, format))
        .await
        .unwrap_or_default();
    let wants_gzip = state.gzip
        && headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let mut response = if wants_gzip {
        match gzip(&body) {
            Ok(compressed) => {
                let mut r = compressed.into_response();
                r.headers_mut()
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                r
            }
            Err(e) => {
                tracing::error!(error = %e, "gzip failed");
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            }
        }
    } else {
        body.into_response()
    };
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    state
        .telemetry
        .scrape_duration
        .with_label_values(&["get"])
        .observe(started.elapsed().as_secs_f64());
    response
}

fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 8),
        flate2::Compression::fast(),
    );
    enc.write_all(body)?;
    enc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, configmap};
    use k8s_openapi::api::core::v1::ConfigMap;

    fn store() -> Arc<MetricsStore> {
        let families = configmap::families();
        let enabled: Vec<usize> = vec![
            families
                .family_index("kube_configmap_info")
                .expect("family"),
        ];
        let store = Arc::new(MetricsStore::new(&families, &enabled));
        let cm: ConfigMap = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "a", "namespace": "n", "uid": "u"}}),
        )
        .expect("cm");
        store.upsert(
            "u",
            families.render(&cm, &FamilyContext::default(), &enabled),
        );
        store
    }

    #[test]
    fn openmetrics_ends_with_eof_and_text_does_not() {
        let stores = vec![store()];
        let om = render(&stores, &ScrapeQuery::default(), Format::OpenMetrics);
        assert!(String::from_utf8_lossy(&om).ends_with("# EOF\n"));
        let text = render(&stores, &ScrapeQuery::default(), Format::Text004);
        assert!(!String::from_utf8_lossy(&text).contains("# EOF"));
    }

    #[test]
    fn resource_filters() {
        let stores = vec![store()];
        let q = |r: Option<&str>, x: Option<&str>| ScrapeQuery {
            resources: r.map(String::from),
            exclude_resources: x.map(String::from),
        };
        assert!(!render(&stores, &q(Some("configmaps"), None), Format::Text004).is_empty());
        assert!(render(&stores, &q(Some("pods"), None), Format::Text004).is_empty());
        assert!(render(&stores, &q(None, Some("configmaps")), Format::Text004).is_empty());
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let body = render(&[store()], &ScrapeQuery::default(), Format::Text004);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gzip(&body).expect("gzip")[..])
            .read_to_end(&mut out)
            .expect("gunzip");
        assert_eq!(out, body);
    }
}
