//! The front-proxy authenticator (the adapter's `--requestheader-*`) under arbitrary headers:
//! without a client certificate every `X-Remote-*` header is ignored; a certificate that is not
//! the front proxy's (another common name, none at all) never authenticates; with the proxy's
//! certificate the user is exactly the first non-empty `X-Remote-User`.
#![no_main]
use std::sync::{Arc, LazyLock};

use ferrocrane_core::server::{FrontProxyConfig, PeerCertificates, front_proxy_identity};
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use rustls_pki_types::CertificateDer;

fn certificate(common_name: Option<&str>) -> PeerCertificates {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    match common_name {
        Some(cn) => params.distinguished_name.push(rcgen::DnType::CommonName, cn),
        None => params.distinguished_name.push(rcgen::DnType::OrganizationName, "org"),
    }
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    PeerCertificates(Arc::new(vec![CertificateDer::from(cert.der().to_vec())]))
}

static PROXY: LazyLock<PeerCertificates> = LazyLock::new(|| certificate(Some("front-proxy-client")));
static OTHER: LazyLock<PeerCertificates> = LazyLock::new(|| certificate(Some("system:admin")));
static NO_NAME: LazyLock<PeerCertificates> = LazyLock::new(|| certificate(None));

fuzz_target!(|input: (u8, Vec<(&[u8], &[u8])>)| {
    let (who, pairs) = input;
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
        0 => assert_eq!(
            front_proxy_identity(None, &headers, &config),
            Ok(None),
            "headers without a certificate authenticated"
        ),
        1 => {
            if let Ok(Some(user)) = front_proxy_identity(Some(&PROXY), &headers, &config) {
                let first = headers
                    .get_all("x-remote-user")
                    .iter()
                    .find(|v| !v.is_empty())
                    .and_then(|v| v.to_str().ok());
                assert_eq!(Some(user.username.as_str()), first);
            }
        }
        2 => assert!(front_proxy_identity(Some(&OTHER), &headers, &config).is_err()),
        _ => assert!(front_proxy_identity(Some(&NO_NAME), &headers, &config).is_err()),
    }
});
