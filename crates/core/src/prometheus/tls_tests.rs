//! HTTPS against a throwaway mTLS server on 127.0.0.1 with a test CA, proving the hand-built
//! rustls config actually reaches reqwest (`tls_backend_preconfigured` silently falls back to an
//! "unknown backend" error if the types do not line up).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

struct Pki {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    server: Arc<rustls::ServerConfig>,
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).expect("write pem");
    p
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "ferrocrane test CA");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().expect("key");
    let mut server_params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("params");
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_cert = server_params
        .signed_by(&server_key, &issuer)
        .expect("server cert");

    let client_key = KeyPair::generate().expect("key");
    let mut client_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    client_params
        .distinguished_name
        .push(DnType::CommonName, "ferrocrane");
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_cert = client_params
        .signed_by(&client_key, &issuer)
        .expect("client cert");

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_cert.der().clone()).expect("add ca");
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .expect("client verifier");
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from(server_cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
        )
        .expect("server config");

    Pki {
        ca: write(dir.path(), "ca.pem", &ca_cert.pem()),
        client_cert: write(dir.path(), "client.pem", &client_cert.pem()),
        client_key: write(dir.path(), "client-key.pem", &client_key.serialize_pem()),
        server: Arc::new(server),
        _dir: dir,
    }
}

/// Answers every TLS connection with one fixed HTTP/1.1 vector response, then closes.
async fn serve_tls(config: Arc<rustls::ServerConfig>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let body = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"tls":"yes"},"value":[1,"1"]}]}}"#;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(resp.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    format!("https://127.0.0.1:{}", addr.port())
}

fn with_client_cert(url: &str, pki: &Pki) -> PrometheusConfig {
    let mut c = PrometheusConfig::new(url);
    c.client_cert_file = Some(pki.client_cert.clone());
    c.client_key_file = Some(pki.client_key.clone());
    c
}

#[tokio::test]
async fn mutual_tls_with_ca_file() {
    let pki = pki();
    let url = serve_tls(pki.server.clone()).await;
    let mut cfg = with_client_cert(&url, &pki);
    cfg.ca_file = Some(pki.ca.clone());
    let client = PrometheusClient::new(cfg).expect("client");
    match client.query("up", None).await.expect("query over mTLS") {
        QueryResult::Vector(v) => assert_eq!(v[0].labels["tls"], "yes"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn server_rejects_missing_client_cert() {
    let pki = pki();
    let url = serve_tls(pki.server.clone()).await;
    let mut cfg = PrometheusConfig::new(&url);
    cfg.ca_file = Some(pki.ca.clone());
    let client = PrometheusClient::new(cfg).expect("client");
    let err = client.query("up", None).await.unwrap_err();
    assert!(
        matches!(
            err,
            PrometheusError::Connect { .. } | PrometheusError::Transport { .. }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn unknown_ca_fails_and_insecure_skip_verify_connects() {
    let pki = pki();
    let url = serve_tls(pki.server.clone()).await;
    // System roots do not contain the test CA.
    let client = PrometheusClient::new(with_client_cert(&url, &pki)).expect("client");
    let err = client.query("up", None).await.unwrap_err();
    assert!(matches!(err, PrometheusError::Connect { .. }), "{err:?}");

    let mut cfg = with_client_cert(&url, &pki);
    cfg.insecure_skip_verify = true;
    let client = PrometheusClient::new(cfg).expect("client");
    client.query("up", None).await.expect("insecure query");
}

#[test]
fn bad_pem_files_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = write(dir.path(), "junk.pem", "not a certificate\n");
    let mut cfg = PrometheusConfig::new("https://127.0.0.1:1");
    cfg.ca_file = Some(junk.clone());
    let e = PrometheusClient::new(cfg).unwrap_err().to_string();
    assert!(
        e.contains("junk.pem") && e.contains("no PEM certificate"),
        "{e}"
    );

    let pki = pki();
    let mut cfg = PrometheusConfig::new("https://127.0.0.1:1");
    cfg.client_cert_file = Some(pki.client_cert.clone());
    cfg.client_key_file = Some(junk);
    let e = PrometheusClient::new(cfg).unwrap_err().to_string();
    assert!(e.contains("junk.pem") && e.contains("private key"), "{e}");
}
