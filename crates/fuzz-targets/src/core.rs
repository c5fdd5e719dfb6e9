//! Targets for ferrocrane-core's parsers and decoders.

use std::sync::{Arc, LazyLock};

use ferrocrane_core::duration::GoDuration;
use ferrocrane_core::exposition::format_float;
use ferrocrane_core::exposition::parse::{parse_document, parse_value};
use ferrocrane_core::prometheus::{decode_query, decode_series, decode_series_shapes};
use ferrocrane_core::promql::{
    QueryTemplate, ResourceLabelTemplate, parse_label_selector, parse_object_label_selector,
};
use ferrocrane_core::quantity::{Quantity, approximate_f64};
use ferrocrane_core::server::{FrontProxyConfig, PeerCertificates, front_proxy_identity};
use http::{HeaderMap, HeaderName, HeaderValue};
use rustls_pki_types::CertificateDer;

/// Kubernetes quantities: parse, the exact form and apimachinery's float.
pub fn quantity(s: &str) {
    if let Ok(q) = Quantity::parse(s) {
        let _ = q.to_string();
    }
    let _ = approximate_f64(s);
}

/// Go durations (`1h30m`, `1.5s`, `-2us`): what parses prints back to the same duration.
#[allow(clippy::panic, reason = "a fuzz target reports a finding by panicking")]
pub fn duration(s: &str) {
    if let Ok(d) = GoDuration::parse(s) {
        let printed = d.to_string();
        if GoDuration::parse(&printed).ok() != Some(d) {
            panic!("{s:?} printed as {printed:?}, which does not parse back to {d:?}");
        }
    }
}

/// Kubernetes label selectors as the adapter and ksm read them from requests and flags.
pub fn label_selector(s: &str) {
    let _ = parse_label_selector(s);
    let _ = parse_object_label_selector(s);
}

/// Prometheus HTTP API answers (query, series, errors), as any backend or proxy sends them.
pub fn prometheus_response(body: &[u8]) {
    let _ = decode_query(body);
    let _ = decode_series(body);
    let _ = decode_series_shapes(body);
}

/// The exposition format: a float written by our writer parses back to itself, and the
/// strict reader never panics on a document.
#[allow(clippy::panic, reason = "a fuzz target reports a finding by panicking")]
pub fn exposition(data: &[u8]) {
    if let Some(bits) = data.first_chunk::<8>() {
        let v = f64::from_le_bytes(*bits);
        let text = format_float(v);
        match parse_value(&text) {
            Ok(back) if back == v || (back.is_nan() && v.is_nan()) => {}
            Ok(back) => panic!("{v:?} written as {text:?} reads back as {back:?}"),
            Err(e) => panic!("{v:?} written as {text:?} does not read back: {e}"),
        }
    }
    if let Ok(doc) = std::str::from_utf8(data) {
        let _ = parse_document(doc);
    }
}

/// prometheus-adapter's Go-template queries and resource label templates.
pub fn promql_template(s: &str) {
    let _ = QueryTemplate::parse(s);
    let _ = ResourceLabelTemplate::parse(s);
}

#[allow(
    clippy::expect_used,
    reason = "fixed certificates of the harness itself; failing to make one is a broken harness, not a finding"
)]
fn certificate(common_name: Option<&str>) -> PeerCertificates {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
        .expect("certificate parameters without names");
    params.distinguished_name = rcgen::DistinguishedName::new();
    match common_name {
        Some(cn) => params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn),
        None => params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "org"),
    }
    let key = rcgen::KeyPair::generate().expect("a key pair");
    let cert = params.self_signed(&key).expect("a self-signed certificate");
    PeerCertificates(Arc::new(vec![CertificateDer::from(cert.der().to_vec())]))
}

static PROXY: LazyLock<PeerCertificates> =
    LazyLock::new(|| certificate(Some("front-proxy-client")));
static OTHER: LazyLock<PeerCertificates> = LazyLock::new(|| certificate(Some("system:admin")));
static NO_NAME: LazyLock<PeerCertificates> = LazyLock::new(|| certificate(None));

/// Which peer presents itself (`who % 4`) and the request's headers as (name, value) bytes.
pub type FrontProxyInput<'a> = (u8, Vec<(&'a [u8], &'a [u8])>);

/// The front-proxy authenticator (the adapter's `--requestheader-*`) under arbitrary headers:
/// without a client certificate every `X-Remote-*` header is ignored; a certificate that is not
/// the front proxy's (another common name, none at all) never authenticates; with the proxy's
/// certificate the user is exactly the first non-empty `X-Remote-User`. `who` picks the peer.
#[allow(clippy::panic, reason = "a fuzz target reports a finding by panicking")]
pub fn front_proxy((who, pairs): FrontProxyInput<'_>) {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            headers.append(n, v);
        }
    }
    let config = FrontProxyConfig {
        allowed_names: vec!["front-proxy-client".into()],
        ..FrontProxyConfig::default()
    };
    match who % 4 {
        0 => {
            let got = front_proxy_identity(None, &headers, &config);
            if got != Ok(None) {
                panic!("headers without a certificate authenticated: {got:?}");
            }
        }
        1 => {
            if let Ok(Some(user)) = front_proxy_identity(Some(&PROXY), &headers, &config) {
                let first = headers
                    .get_all("x-remote-user")
                    .iter()
                    .find(|v| !v.is_empty())
                    .and_then(|v| v.to_str().ok());
                if Some(user.username.as_str()) != first {
                    panic!(
                        "authenticated as {:?}, the first X-Remote-User is {first:?}",
                        user.username
                    );
                }
            }
        }
        2 => {
            if front_proxy_identity(Some(&OTHER), &headers, &config).is_ok() {
                panic!("a certificate with another common name authenticated");
            }
        }
        _ => {
            if front_proxy_identity(Some(&NO_NAME), &headers, &config).is_ok() {
                panic!("a certificate without a common name authenticated");
            }
        }
    }
}
