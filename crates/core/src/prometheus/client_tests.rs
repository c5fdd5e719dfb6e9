//! Unit tests of the client's URL building, timestamps and response interpretation.

use std::time::{Duration, UNIX_EPOCH};

use reqwest::Url;

use super::PrometheusError;
use super::client::*;
use super::config::PrometheusConfig;
use super::endpoint::*;
use super::interpret::*;
use super::response::{decode_query, decode_series};

fn url(s: &str) -> Url {
    parse_base_url(s).expect("valid")
}

#[test]
fn endpoint_urls_keep_path_prefix() {
    for (base, want) in [
        ("http://prom:9090", "http://prom:9090/api/v1/query"),
        ("http://prom:9090/", "http://prom:9090/api/v1/query"),
        ("https://h/prometheus", "https://h/prometheus/api/v1/query"),
        ("https://h/a/b/", "https://h/a/b/api/v1/query"),
    ] {
        assert_eq!(endpoint_url(&url(base), Endpoint::Query).as_str(), want);
    }
}

#[test]
fn bad_base_urls() {
    for bad in [
        "",
        "prom:9090",
        "ftp://prom",
        "http://prom/?x=1",
        "http://prom/#f",
        "mailto:x@y",
    ] {
        assert!(parse_base_url(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn get_url_encodes_params() {
    let u = get_url(
        &url("http://p/x"),
        Endpoint::Series,
        &[
            ("match[]", "up{job=~\"a|b\"}".into()),
            ("match[]", "x".into()),
        ],
    );
    assert_eq!(
        u.as_str(),
        "http://p/x/api/v1/series?match%5B%5D=up%7Bjob%3D%7E%22a%7Cb%22%7D&match%5B%5D=x"
    );
}

#[test]
fn timestamps() {
    assert_eq!(format_timestamp_ms(0), "0.000");
    assert_eq!(format_timestamp_ms(1_435_781_451_781), "1435781451.781");
    assert_eq!(format_timestamp_ms(15_000), "15.000");
    assert_eq!(format_timestamp_ms(-1500), "-1.5");
    assert!(system_time_ms(UNIX_EPOCH - Duration::from_secs(1), "t").is_err());
}

#[test]
fn interpret_statuses() {
    let e = interpret(
        Endpoint::Query,
        422,
        br#"{"status":"error","errorType":"execution","error":"too many samples"}"#,
        decode_query,
    )
    .unwrap_err();
    assert!(
        matches!(&e, PrometheusError::Api { status: 422, error_type, .. } if error_type == "execution"),
        "{e:?}"
    );
    assert_eq!(e.metric_code(), "422");
    let e = interpret(
        Endpoint::Query,
        502,
        b"<html>bad gateway</html>",
        decode_query,
    )
    .unwrap_err();
    assert!(
        matches!(e, PrometheusError::Http { status: 502, .. }),
        "{e:?}"
    );
    assert!(e.is_transient());
    let e = interpret(Endpoint::Series, 200, b"{", decode_series).unwrap_err();
    assert!(matches!(e, PrometheusError::Decode { .. }), "{e:?}");
    let long = "x".repeat(5000);
    let e = interpret(Endpoint::Query, 500, long.as_bytes(), decode_query).unwrap_err();
    assert!(e.to_string().len() < 700, "{}", e.to_string().len());
}

#[test]
fn config_errors() {
    let mut c = PrometheusConfig::new("http://127.0.0.1:1");
    c.max_in_flight = 0;
    assert!(PrometheusClient::new(c).is_err());
    let mut c = PrometheusConfig::new("http://127.0.0.1:1");
    c.headers = vec![("bad header".into(), "v".into())];
    assert!(PrometheusClient::new(c).is_err());
    let mut c = PrometheusConfig::new("http://127.0.0.1:1");
    c.client_cert_file = Some("/nonexistent/cert.pem".into());
    assert!(PrometheusClient::new(c).is_err());
    let mut c = PrometheusConfig::new("http://127.0.0.1:1");
    c.ca_file = Some("/nonexistent/ca.pem".into());
    let e = PrometheusClient::new(c).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");
}
