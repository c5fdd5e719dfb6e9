//! The metrics port: `/metrics` (text 0.0.4 or OpenMetrics by Accept, gzip on request,
//! `?resources=` / `?exclude_resources=` filters), `/healthz`, `/livez` and an index page.
//!
//! Custom resource stores are written after the built-in ones, with the same format,
//! filters (by their plural, e.g. `?resources=foos`) and compression.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ferrocrane_core::exposition::{Format, negotiate};
use serde::Deserialize;

use crate::pieces::PiecePool;
use crate::store::{MetricsStore, SharedServing, scrape_stores};
use crate::telemetry::Telemetry;

#[derive(Clone)]
pub struct MetricsState {
    /// Swapped whole when a reload has built new stores.
    pub serving: SharedServing,
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

/// Bytes a scrape hands to the connection at a time: large enough that the per-piece cost
/// vanishes, small enough that concurrent scrapes of a big cluster do not each hold a copy
/// of the whole document.
const CHUNK: usize = 256 * 1024;

/// Buffers for plain pieces: a piece is filled up to [`CHUNK`] plus the object's lines that
/// crossed it. A few per scraper in flight (the channel's, the one filling, hyper's).
static PIECES: PiecePool = PiecePool::new(CHUNK + CHUNK / 4, 16);

/// The stores a query selects, in order.
fn selected<'a>(
    stores: &'a [Arc<MetricsStore>],
    query: &ScrapeQuery,
) -> Vec<&'a Arc<MetricsStore>> {
    let include = split_list(&query.resources);
    let exclude = split_list(&query.exclude_resources).unwrap_or_default();
    stores
        .iter()
        .filter(|s| {
            include
                .as_ref()
                .is_none_or(|inc| inc.contains(s.resource()))
        })
        .filter(|s| !exclude.contains(s.resource()))
        .collect()
}

/// Writes the selected stores into one buffer; the whole document at once, for tests.
pub fn render(stores: &[Arc<MetricsStore>], query: &ScrapeQuery, format: Format) -> Vec<u8> {
    let selected = selected(stores, query);
    let mut out = Vec::with_capacity(selected.iter().map(|s| s.size_hint()).sum::<usize>() + 16);
    for store in selected {
        store.write_all(&mut out, format);
    }
    out.extend_from_slice(format.terminator());
    out
}

/// Where a streamed scrape's pieces go: gzipped or not, into the response body.
struct Sink {
    gzip: Option<flate2::write::GzEncoder<Vec<u8>>>,
    tx: tokio::sync::mpsc::Sender<std::io::Result<Bytes>>,
}

impl Sink {
    /// Sends what `buf` holds (leaving it empty); false when the client is gone.
    fn emit(&mut self, buf: &mut Vec<u8>) -> bool {
        let piece = match &mut self.gzip {
            Some(enc) => {
                if let Err(e) = enc.write_all(buf) {
                    let _ = self.tx.blocking_send(Err(e));
                    return false;
                }
                buf.clear();
                Bytes::from(std::mem::take(enc.get_mut()))
            }
            None => PIECES.bytes(std::mem::replace(buf, PIECES.take())),
        };
        piece.is_empty() || self.tx.blocking_send(Ok(piece)).is_ok()
    }

    fn finish(mut self, buf: &mut Vec<u8>) {
        if !self.emit(buf) {
            return;
        }
        if let Some(enc) = self.gzip.take() {
            let tail = enc.finish();
            let _ = self.tx.blocking_send(tail.map(Bytes::from));
        }
    }
}

/// Streams the selected stores (gzipped when asked) into a response body, a piece at a
/// time from a blocking thread; `done` runs when the last piece is handed over.
fn stream(
    stores: Vec<Arc<MetricsStore>>,
    query: ScrapeQuery,
    format: Format,
    gzip: bool,
    done: impl FnOnce() + Send + 'static,
) -> Body {
    // A few pieces in flight: a slow client slows the writer instead of growing a queue.
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        let mut sink = Sink {
            gzip: gzip.then(|| {
                flate2::write::GzEncoder::new(
                    Vec::with_capacity(CHUNK / 4),
                    flate2::Compression::fast(),
                )
            }),
            tx,
        };
        let mut buf = PIECES.take();
        let mut complete = true;
        for store in selected(&stores, &query) {
            if !store.write_chunked(&mut buf, format, CHUNK, &mut |b| sink.emit(b)) {
                complete = false;
                break;
            }
        }
        if complete {
            buf.extend_from_slice(format.terminator());
            sink.finish(&mut buf);
        }
        done();
    });
    Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (piece, rx))
    }))
}

async fn metrics(
    State(state): State<MetricsState>,
    Query(query): Query<ScrapeQuery>,
    headers: HeaderMap,
) -> Response {
    let started = Instant::now();
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let negotiated = negotiate(accept);
    let format = negotiated.format;
    let serving = state
        .serving
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let stores = scrape_stores(&serving);
    let wants_gzip = serving.gzip
        && headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    // Streamed: a scrape holds a piece of the document at a time, not all of it (with a
    // 10,000-pod cluster the document is ~100 MB, and Prometheus plus a debugging curl
    // would otherwise double that).
    let duration = state.telemetry.scrape_duration.clone();
    let body = stream(stores, query, format, wants_gzip, move || {
        duration
            .with_label_values(&["get"])
            .observe(started.elapsed().as_secs_f64());
    });
    let mut response = body.into_response();
    if wants_gzip {
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&negotiated.content_type)
            .unwrap_or_else(|_| HeaderValue::from_static(format.content_type())),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, configmap};
    use crate::store::Serving;
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
    fn custom_resource_stores_follow_the_built_in_ones() {
        use crate::custom_resource::{CompiledResource, CustomResourceStateConfig};
        let config = CustomResourceStateConfig::parse(
            "crs.yaml",
            "kind: CustomResourceStateMetrics\nspec:\n  resources:\n  - groupVersionKind: {group: example.com, version: v1, kind: Foo}\n    metrics:\n    - name: size\n      help: Foo size\n      each:\n        type: Gauge\n        gauge:\n          path: [spec, size]\n",
        )
        .expect("config");
        let resource = &config.spec.resources[0];
        let compiled =
            CompiledResource::compile(resource, &resource.group_version_kind).expect("compile");
        let custom_store = Arc::new(compiled.new_store("foos"));
        custom_store.upsert(
            "u1",
            compiled.render(&serde_json::json!({"metadata": {"uid": "u1"}, "spec": {"size": 4}})),
        );
        let custom = crate::custom_resource::CustomResourceStores::default();
        custom.insert("0/example.com/v1/Foo".into(), custom_store);
        let serving = Serving {
            stores: vec![store()],
            custom: Some(custom),
            gzip: false,
        };
        let stores = scrape_stores(&serving);
        let text = String::from_utf8(render(&stores, &ScrapeQuery::default(), Format::Text004))
            .expect("utf8");
        let builtin = text.find("kube_configmap_info").expect("built-in family");
        let cr = text
            .find("kube_customresource_size{customresource_group=\"example.com\",customresource_kind=\"Foo\",customresource_version=\"v1\"} 4")
            .expect("custom family");
        assert!(builtin < cr, "{text}");
        let only = ScrapeQuery {
            resources: Some("foos".into()),
            exclude_resources: None,
        };
        let text = String::from_utf8(render(&stores, &only, Format::OpenMetrics)).expect("utf8");
        assert!(text.contains("kube_customresource_size") && !text.contains("kube_configmap"));
        assert!(text.ends_with("# EOF\n"));
    }

    /// Many objects, so the document spans several pieces.
    fn big_store() -> Arc<MetricsStore> {
        let families = configmap::families();
        let enabled: Vec<usize> = (0..families.families.len()).collect();
        let store = Arc::new(MetricsStore::new(&families, &enabled));
        for i in 0..5000 {
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {
                "name": format!("configmap-{i}"), "namespace": "n", "uid": format!("u{i}"),
                "resourceVersion": "1", "creationTimestamp": "2024-01-01T00:00:00Z"}}))
            .expect("cm");
            store.upsert(
                &format!("u{i}"),
                families.render(&cm, &FamilyContext::default(), &enabled),
            );
        }
        store
    }

    #[tokio::test]
    async fn streamed_body_is_the_document_plain_and_gzipped() {
        use std::io::Read;
        let stores = vec![big_store()];
        for format in [Format::Text004, Format::OpenMetrics] {
            let whole = render(&stores, &ScrapeQuery::default(), format);
            assert!(whole.len() > 2 * CHUNK, "{} bytes", whole.len());
            let plain = stream(stores.clone(), ScrapeQuery::default(), format, false, || {});
            let plain = axum::body::to_bytes(plain, usize::MAX).await.expect("body");
            assert_eq!(plain.as_ref(), whole.as_slice());
            let gz = stream(stores.clone(), ScrapeQuery::default(), format, true, || {});
            let gz = axum::body::to_bytes(gz, usize::MAX).await.expect("body");
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(gz.as_ref())
                .read_to_end(&mut out)
                .expect("gunzip");
            assert_eq!(out, whole);
        }
    }
}
