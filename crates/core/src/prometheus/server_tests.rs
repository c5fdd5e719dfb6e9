//! Fault injection against a throwaway HTTP server on 127.0.0.1: error bodies, slow answers, bad
//! JSON, and enough of a fake to check request shape (verb, prefix, auth, chunking). Behaviour of a
//! real Prometheus is covered by the e2e crate, not here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use reqwest::Url;

use super::*;

#[derive(Default)]
struct Seen {
    range_calls: AtomicUsize,
    concurrent: AtomicUsize,
    max_concurrent: AtomicUsize,
}

type Params = Vec<(String, String)>;

fn parse_pairs(s: &str) -> Params {
    Url::parse(&format!("http://x/?{s}"))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

fn params(method: &Method, query: Option<String>, body: &Bytes) -> Params {
    if method == Method::POST {
        parse_pairs(&String::from_utf8_lossy(body))
    } else {
        parse_pairs(&query.unwrap_or_default())
    }
}

fn get<'a>(p: &'a Params, k: &str) -> &'a str {
    p.iter()
        .find(|(key, _)| key == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [("content-type", "application/json")], body).into_response()
}

async fn query(method: Method, headers: HeaderMap, RawQuery(q): RawQuery, body: Bytes) -> Response {
    let p = params(&method, q, &body);
    match get(&p, "query") {
        "syntax_error" => json(
            StatusCode::BAD_REQUEST,
            r#"{"status":"error","errorType":"bad_data","error":"1:1: parse error: unexpected end of input"}"#.into(),
        ),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            json(StatusCode::OK, "{}".into())
        }
        "bad_json" => json(StatusCode::OK, r#"{"status":"success","data":{"resultType":"#.into()),
        "proxy" => (StatusCode::BAD_GATEWAY, "<html>502 Bad Gateway</html>").into_response(),
        q => {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let tenant = headers
                .get("x-scope-orgid")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let metric = serde_json::json!({
                "query": q, "method": method.as_str(), "auth": auth, "tenant": tenant,
                "time": get(&p, "time"), "partial_response": get(&p, "partial_response"),
            });
            json(
                StatusCode::OK,
                serde_json::json!({"status":"success","data":{"resultType":"vector",
                    "result":[{"metric": metric, "value":[1.5,"NaN"]}]}})
                .to_string(),
            )
        }
    }
}

/// A matrix with two series on the requested grid: `a` everywhere, `b` only in the first 50 s,
/// so merging must cope with series missing from some chunks.
async fn query_range(
    State(seen): State<Arc<Seen>>,
    method: Method,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    seen.range_calls.fetch_add(1, Ordering::SeqCst);
    let now = seen.concurrent.fetch_add(1, Ordering::SeqCst) + 1;
    seen.max_concurrent.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    seen.concurrent.fetch_sub(1, Ordering::SeqCst);
    let p = params(&method, q, &body);
    let num = |k: &str| get(&p, k).parse::<f64>().unwrap_or(f64::NAN);
    let (start, end, step) = (num("start"), num("end"), num("step"));
    if !(start.is_finite() && end.is_finite() && step > 0.0) {
        return json(
            StatusCode::BAD_REQUEST,
            r#"{"status":"error","errorType":"bad_data","error":"bad range"}"#.into(),
        );
    }
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut t = start;
    while t <= end + 1e-9 {
        a.push(serde_json::json!([t, format!("{t}")]));
        if t < 50.0 {
            b.push(serde_json::json!([t, "1"]));
        }
        t += step;
    }
    let mut result = vec![serde_json::json!({"metric":{"s":"a"},"values":a})];
    if !b.is_empty() {
        result.push(serde_json::json!({"metric":{"s":"b"},"values":b}));
    }
    json(
        StatusCode::OK,
        serde_json::json!({"status":"success","data":{"resultType":"matrix","result":result}})
            .to_string(),
    )
}

/// `{__name__="truncating"}` answers like Thanos or a recent Prometheus given `limit`: at most
/// that many series and a warning; `{__name__="ignoring"}` like a backend without `limit`
/// support: always 10 series; `{__name__="refused"}` a 400 with Prometheus' error. Anything else:
/// one entry describing the request.
async fn series(method: Method, RawQuery(q): RawQuery, body: Bytes) -> Response {
    let p = params(&method, q, &body);
    let matchers = p.iter().filter(|(k, _)| k == "match[]").count();
    let limit: Option<usize> = get(&p, "limit").parse().ok();
    let many = |n: usize| -> Vec<serde_json::Value> {
        (0..n)
            .map(|i| serde_json::json!({"__name__": "m", "i": i.to_string()}))
            .collect()
    };
    let answer = match get(&p, "match[]") {
        "{__name__=\"truncating\"}" => match limit {
            Some(n) if n < 10 => serde_json::json!({"status":"success","data": many(n),
                "warnings": ["results truncated due to limit"]}),
            _ => serde_json::json!({"status":"success","data": many(10)}),
        },
        "{__name__=\"ignoring\"}" => serde_json::json!({"status":"success","data": many(10)}),
        "{__name__=\"refused\"}" => {
            return json(
                StatusCode::BAD_REQUEST,
                r#"{"status":"error","errorType":"bad_data","error":"refused"}"#.into(),
            );
        }
        _ => serde_json::json!({"status":"success","data":[
            {"method": method.as_str(), "matchers": matchers.to_string(), "start": get(&p, "start"),
             "limit": get(&p, "limit"), "partial_response": get(&p, "partial_response")}
        ]}),
    };
    json(StatusCode::OK, answer.to_string())
}

async fn serve() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route("/prefix/api/v1/query", any(query))
        .route("/prefix/api/v1/query_range", any(query_range))
        .route("/prefix/api/v1/series", any(series))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/prefix"), seen)
}

fn only_vector(r: QueryResult) -> InstantSample {
    match r {
        QueryResult::Vector(mut v) if v.len() == 1 => v.remove(0),
        other => panic!("expected one-element vector, got {other:?}"),
    }
}

#[tokio::test]
async fn query_get_and_post_with_auth_and_headers() {
    let (url, _) = serve().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "t0k3n\n").expect("write");

    let mut cfg = PrometheusConfig::new(&url);
    cfg.bearer_token_file = Some(token.clone());
    cfg.headers = vec![("X-Scope-OrgID".into(), "team-a".into())];
    let client = PrometheusClient::new(cfg).expect("client");
    let s = only_vector(
        client
            .query(
                "up{job=\"a b\"}",
                Some(UNIX_EPOCH + Duration::from_millis(1500)),
            )
            .await
            .expect("query"),
    );
    assert_eq!(s.labels["query"], "up{job=\"a b\"}");
    assert_eq!(s.labels["method"], "GET");
    assert_eq!(s.labels["auth"], "Bearer t0k3n");
    assert_eq!(s.labels["tenant"], "team-a");
    assert_eq!(s.labels["time"], "1.500");
    assert!(s.sample.value.is_nan());

    // Rotation: the next request carries the new token.
    std::fs::write(&token, "rotated-token").expect("write");
    let s = only_vector(client.query("x", None).await.expect("query"));
    assert_eq!(s.labels["auth"], "Bearer rotated-token");

    let mut cfg = PrometheusConfig::new(&url);
    cfg.verb = Verb::Post;
    cfg.basic_auth = Some(BasicAuth {
        username: "u".into(),
        password: "p".into(),
    });
    let client = PrometheusClient::new(cfg).expect("client");
    let s = only_vector(client.query("sum(rate(x[5m]))", None).await.expect("query"));
    assert_eq!(s.labels["method"], "POST");
    assert_eq!(s.labels["query"], "sum(rate(x[5m]))");
    assert_eq!(s.labels["auth"], "Basic dTpw");
}

#[tokio::test]
async fn long_queries_switch_to_post() {
    let (url, _) = serve().await;
    let client = PrometheusClient::from_url(&url).expect("client");
    // A pods/* request over a thousand pods: `pod=~"a|b|..."`, ~20 KiB in a URL.
    let pods: Vec<String> = (0..1000).map(|i| format!("web-7d9f8c6b5-{i:05}")).collect();
    let long = format!(
        "sum(rate(http_requests_total{{pod=~\"{}\"}}[2m])) by (pod)",
        pods.join("|")
    );
    assert!(long.len() > 16 * 1024);
    let s = only_vector(client.query(&long, None).await.expect("query"));
    assert_eq!(s.labels["method"], "POST");
    assert_eq!(s.labels["query"], long, "the whole query arrives");
    let s = only_vector(client.query("up", None).await.expect("query"));
    assert_eq!(s.labels["method"], "GET");

    let mut cfg = PrometheusConfig::new(&url);
    cfg.max_get_url_len = 40;
    let client = PrometheusClient::new(cfg).expect("client");
    let s = only_vector(client.query("up", None).await.expect("query"));
    assert_eq!(
        s.labels["method"], "POST",
        "a URL over the configured length"
    );
}

#[tokio::test]
async fn partial_response_is_sent_as_configured() {
    let (url, _) = serve().await;
    for (setting, sent) in [
        (PartialResponse::Deny, "false"),
        (PartialResponse::Allow, "true"),
        (PartialResponse::Unset, ""),
    ] {
        let mut cfg = PrometheusConfig::new(&url);
        cfg.partial_response = setting;
        let client = PrometheusClient::new(cfg).expect("client");
        let s = only_vector(client.query("up", None).await.expect("query"));
        assert_eq!(s.labels["partial_response"], sent, "{setting:?} query");
        let series = client
            .series(&["up".to_string()], None, None)
            .await
            .expect("series");
        assert_eq!(series[0]["partial_response"], sent, "{setting:?} series");
    }
}

#[tokio::test]
async fn series_limits_are_sent_and_truncation_is_an_error() {
    let (url, _) = serve().await;
    let unlimited = PrometheusClient::from_url(&url).expect("client");
    let sent = unlimited
        .series(&["up".to_string()], None, None)
        .await
        .expect("series");
    assert_eq!(sent[0]["limit"], "", "no limit configured, none sent");
    let ten = unlimited
        .series(&["{__name__=\"ignoring\"}".to_string()], None, None)
        .await
        .expect("series");
    assert_eq!(ten.len(), 10);

    let limited = |n| {
        let mut cfg = PrometheusConfig::new(&url);
        cfg.series_limit = Some(n);
        PrometheusClient::new(cfg).expect("client")
    };
    let sent = limited(5)
        .series(&["up".to_string()], None, None)
        .await
        .expect("series");
    assert_eq!(
        sent[0]["limit"], "6",
        "one more than the limit shows a truncation"
    );
    for backend in ["truncating", "ignoring"] {
        let matcher = format!("{{__name__=\"{backend}\"}}");
        let err = limited(5)
            .series(std::slice::from_ref(&matcher), None, None)
            .await
            .unwrap_err();
        assert!(
            matches!(err, PrometheusError::SeriesTruncated { limit: Some(5), .. }),
            "{backend}: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("--prometheus-series-limit"), "{text}");
        let shapes = limited(5)
            .series_shapes(std::slice::from_ref(&matcher), None, None)
            .await;
        assert!(shapes.is_err(), "{backend}: the relist path checks too");
        let within = limited(20)
            .series(std::slice::from_ref(&matcher), None, None)
            .await
            .expect("10 series under a limit of 20");
        assert_eq!(within.len(), 10);
    }
    let err = unlimited
        .series_shapes(&["{__name__=\"refused\"}".to_string()], None, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PrometheusError::Api { status: 400, error_type, .. } if error_type == "bad_data"),
        "an error answer keeps Prometheus' error: {err:?}"
    );
}

#[tokio::test]
async fn api_error_keeps_prometheus_error_type() {
    let (url, _) = serve().await;
    let registry = ::prometheus::Registry::new();
    let mut cfg = PrometheusConfig::new(&url);
    cfg.metrics = Some(MetricsOptions {
        registry: registry.clone(),
        namespace: "test_".into(),
    });
    let client = PrometheusClient::new(cfg).expect("client");
    let err = client.query("syntax_error", None).await.unwrap_err();
    match &err {
        PrometheusError::Api {
            endpoint,
            status,
            error_type,
            error,
        } => {
            assert_eq!(*endpoint, "query");
            assert_eq!(*status, 400);
            assert_eq!(error_type, "bad_data");
            assert!(error.contains("parse error"));
        }
        other => panic!("expected Api error, got {other:?}"),
    }
    assert!(err.to_string().contains("bad_data"), "{err}");

    let err = client.query("proxy", None).await.unwrap_err();
    assert!(
        matches!(&err, PrometheusError::Http { status: 502, body, .. } if body.contains("Bad Gateway")),
        "{err:?}"
    );

    let err = client.query("bad_json", None).await.unwrap_err();
    assert!(matches!(err, PrometheusError::Decode { .. }), "{err:?}");

    let families = registry.gather();
    let hist = families
        .iter()
        .find(|f| f.name() == "test_prometheus_request_duration_seconds")
        .expect("histogram registered");
    let codes: BTreeMap<String, u64> = hist
        .get_metric()
        .iter()
        .map(|m| {
            let code = m
                .get_label()
                .iter()
                .find(|l| l.name() == "code")
                .map(|l| l.value().to_owned())
                .unwrap_or_default();
            (code, m.get_histogram().get_sample_count())
        })
        .collect();
    assert_eq!(codes.get("400"), Some(&1), "{codes:?}");
    assert_eq!(codes.get("502"), Some(&1), "{codes:?}");
    assert_eq!(codes.get("decode_error"), Some(&1), "{codes:?}");
    assert!(
        families
            .iter()
            .any(|f| f.name() == "test_prometheus_requests_in_flight")
    );
}

#[tokio::test]
async fn slow_response_times_out() {
    let (url, _) = serve().await;
    let mut cfg = PrometheusConfig::new(&url);
    cfg.timeout = Duration::from_millis(200);
    let client = PrometheusClient::new(cfg).expect("client");
    let started = std::time::Instant::now();
    let err = client.query("slow", None).await.unwrap_err();
    assert!(matches!(err, PrometheusError::Timeout { .. }), "{err:?}");
    assert!(err.is_transient());
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn connection_refused_is_connect_error() {
    // Bind then drop to get a port that is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let client = PrometheusClient::from_url(format!("http://127.0.0.1:{port}")).expect("client");
    let err = client.query("up", None).await.unwrap_err();
    assert!(matches!(err, PrometheusError::Connect { .. }), "{err:?}");
    assert_eq!(err.metric_code(), "connect_error");
    // The message says what happened, not only reqwest's "error sending request".
    let message = err.to_string();
    assert!(message.contains("Connection refused"), "{message}");
}

#[tokio::test]
async fn long_range_is_split_merged_and_bounded() {
    let (url, seen) = serve().await;
    let mut cfg = PrometheusConfig::new(&url);
    cfg.max_points_per_query = 10;
    cfg.max_in_flight = 2;
    let client = PrometheusClient::new(cfg).expect("client");
    // 0..=200 s every 10 s = 21 points -> chunks of 10, 10, 1.
    let series = client
        .query_range(
            "x",
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::from_secs(200),
            Duration::from_secs(10),
        )
        .await
        .expect("range");
    assert_eq!(seen.range_calls.load(Ordering::SeqCst), 3);
    assert!(seen.max_concurrent.load(Ordering::SeqCst) <= 2);
    assert_eq!(series.len(), 2);
    let a = &series[0];
    assert_eq!(a.labels["s"], "a");
    let ts: Vec<i64> = a.samples.iter().map(|s| s.timestamp_ms).collect();
    let want: Vec<i64> = (0..=20).map(|k| k * 10_000).collect();
    assert_eq!(ts, want);
    assert_eq!(a.samples[20].value, 200.0);
    let b = &series[1];
    assert_eq!(b.samples.len(), 5, "b only exists before t=50s");

    let err = client
        .query_range(
            "x",
            UNIX_EPOCH + Duration::from_secs(10),
            UNIX_EPOCH,
            Duration::from_secs(1),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, PrometheusError::InvalidRequest(_)), "{err:?}");
}

#[tokio::test]
async fn series_switches_to_post_for_long_urls() {
    let (url, _) = serve().await;
    let client = PrometheusClient::from_url(&url).expect("client");
    let short = client
        .series(&["up".to_string()], Some(UNIX_EPOCH), None)
        .await
        .expect("series");
    assert_eq!(short[0]["method"], "GET");
    assert_eq!(short[0]["start"], "0.000");

    let many: Vec<String> = (0..500)
        .map(|i| format!("{{__name__=\"metric_number_{i}\",namespace!=\"\"}}"))
        .collect();
    let long = client.series(&many, None, None).await.expect("series");
    assert_eq!(long[0]["method"], "POST");
    assert_eq!(long[0]["matchers"], "500");

    assert!(matches!(
        client.series(&[], None, None).await,
        Err(PrometheusError::InvalidRequest(_))
    ));
}

#[tokio::test]
async fn oversized_response_is_refused() {
    let (url, _) = serve().await;
    let mut cfg = PrometheusConfig::new(&url);
    cfg.max_response_bytes = Some(64);
    let client = PrometheusClient::new(cfg).expect("client");
    let err = client
        .query("a_query_whose_echo_exceeds_64_bytes", None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PrometheusError::ResponseTooLarge { limit: 64, .. }),
        "{err:?}"
    );
    assert_eq!(err.metric_code(), "too_large");

    // Series answers are decoded as they arrive; the limit holds there too.
    let err = client
        .series_shapes(&["{__name__=\"ignoring\"}".to_string()], None, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PrometheusError::ResponseTooLarge { limit: 64, .. }),
        "{err:?}"
    );

    let mut cfg = PrometheusConfig::new(&url);
    cfg.max_response_bytes = Some(1 << 20);
    let client = PrometheusClient::new(cfg).expect("client");
    client.query("fits", None).await.expect("under the limit");
    let shapes = client
        .series_shapes(&["{__name__=\"ignoring\"}".to_string()], None, None)
        .await
        .expect("under the limit");
    assert_eq!(shapes.series, 10);
}

/// Issue 13: a server (or proxy) announcing a huge Content-Length and then closing. The
/// client once reserved the announced size up front and aborted on the allocation.
#[tokio::test]
async fn an_announced_terabyte_is_not_reserved() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = conn.read(&mut request).await;
            let _ = conn
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000000000\r\n\r\n{\"status\":",
                )
                .await;
        }
    });
    let client =
        PrometheusClient::new(PrometheusConfig::new(format!("http://{addr}"))).expect("client");
    let err = client.query("up", None).await.unwrap_err();
    assert!(
        matches!(err, PrometheusError::Transport { .. }),
        "a truncated body is a transport error: {err:?}"
    );
    let err = client
        .series_shapes(&["up".to_string()], None, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PrometheusError::Transport { .. }),
        "a truncated body is a transport error when streamed too: {err:?}"
    );
}

#[test]
fn debug_output_hides_secrets() {
    let mut cfg = PrometheusConfig::new("http://p");
    cfg.headers = vec![("X-Api-Key".into(), "s3cr3t-header".into())];
    cfg.basic_auth = Some(BasicAuth {
        username: "u".into(),
        password: "s3cr3t-password".into(),
    });
    let dbg = format!("{cfg:?}");
    assert!(dbg.contains("X-Api-Key"), "{dbg}");
    assert!(!dbg.contains("s3cr3t"), "{dbg}");
}
