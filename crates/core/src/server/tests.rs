//! Socket-level tests of `serve`: TLS with and without client certificates, front-proxy
//! identity seen by a handler, and graceful drain.

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use axum::{Extension, Router, http::HeaderMap, http::StatusCode, routing::get};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio::{net::TcpListener, sync::oneshot};

use super::*;

struct Pki {
    ca_pem: String,
    server: (String, String),
    front_proxy: (String, String),
    other_client: (String, String),
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::default();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "test-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf = |cn: &str, sans: Vec<String>, eku: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![eku];
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    Pki {
        ca_pem: ca.pem(),
        server: leaf(
            "localhost",
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        ),
        front_proxy: leaf(
            "front-proxy-client",
            vec![],
            ExtendedKeyUsagePurpose::ClientAuth,
        ),
        other_client: leaf("kubelet", vec![], ExtendedKeyUsagePurpose::ClientAuth),
    }
}

fn write_server_files(dir: &Path, pki: &Pki, client_auth: ClientAuth) -> TlsServerConfig {
    std::fs::write(dir.join("tls.crt"), &pki.server.0).unwrap();
    std::fs::write(dir.join("tls.key"), &pki.server.1).unwrap();
    std::fs::write(dir.join("ca.crt"), &pki.ca_pem).unwrap();
    TlsServerConfig {
        cert_file: dir.join("tls.crt"),
        key_file: dir.join("tls.key"),
        client_ca_file: Some(dir.join("ca.crt")),
        client_auth,
    }
}

fn client(pki: &Pki, identity: Option<&(String, String)>) -> reqwest::Client {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca_pem.as_bytes()).unwrap())
        .unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    // reqwest leaves ALPN of a preconfigured config alone; offer h2 so the server picks it.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .build()
        .unwrap()
}

/// A client for plain HTTP; reqwest still wants a TLS backend (no process-default provider).
fn plain_client() -> reqwest::Client {
    let config = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .build()
        .unwrap()
}

/// An aggregated-API-style app: `/whoami` answers the front-proxy identity or 401.
fn aggregated_app() -> Router {
    let proxy = Arc::new(FrontProxyConfig {
        allowed_names: vec!["front-proxy-client".into()],
        ..FrontProxyConfig::default()
    });
    Router::new()
        .route(
            "/whoami",
            get(
                move |peer: Option<Extension<PeerCertificates>>, headers: HeaderMap| async move {
                    match front_proxy_identity(peer.as_ref().map(|p| &p.0), &headers, &proxy) {
                        Ok(Some(user)) => (
                            StatusCode::OK,
                            format!("{} {}", user.username, user.groups.join(",")),
                        ),
                        Ok(None) => (StatusCode::UNAUTHORIZED, "anonymous".to_string()),
                        Err(e) => (StatusCode::UNAUTHORIZED, e.to_string()),
                    }
                },
            ),
        )
        .route(
            "/cn",
            get(|peer: Option<Extension<PeerCertificates>>| async move {
                peer.and_then(|p| p.common_name())
                    .unwrap_or_else(|| "none".into())
            }),
        )
        .merge(admin_router(AdminState::default()))
}

async fn start(
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Router,
    options: ServeOptions,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), ServerError>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(serve_with(
        listener,
        tls,
        app,
        async move {
            let _ = rx.await;
        },
        options,
    ));
    (addr, tx, handle)
}

#[tokio::test]
async fn tls_with_optional_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let tls = write_server_files(dir.path(), &pki, ClientAuth::Optional)
        .load()
        .unwrap();
    let (addr, stop, handle) = start(Some(tls), aggregated_app(), ServeOptions::default()).await;
    let url = |path: &str| format!("https://localhost:{}{path}", addr.port());

    // Front proxy: certificate verified, CN allowed, headers trusted. HTTP/2 via ALPN.
    let proxy = client(&pki, Some(&pki.front_proxy));
    let resp = proxy
        .get(url("/whoami"))
        .header("X-Remote-User", "alice")
        .header("X-Remote-Group", "devs")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "alice devs");
    let cn = proxy
        .get(url("/cn"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(cn, "front-proxy-client");

    // No certificate (a kubelet probe): let in, but the headers mean nothing.
    let anonymous = client(&pki, None);
    let resp = anonymous.get(url("/healthz")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let resp = anonymous
        .get(url("/whoami"))
        .header("X-Remote-User", "admin")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.text().await.unwrap(), "anonymous");

    // A certificate from the same CA but not the proxy's name.
    let other = client(&pki, Some(&pki.other_client));
    let resp = other
        .get(url("/whoami"))
        .header("X-Remote-User", "admin")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert!(resp.text().await.unwrap().contains("kubelet"));

    stop.send(()).unwrap();
    handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn tls_required_client_certificate_rejects_anonymous() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let tls = write_server_files(dir.path(), &pki, ClientAuth::Required)
        .load()
        .unwrap();
    let (addr, stop, handle) = start(Some(tls), aggregated_app(), ServeOptions::default()).await;
    let url = format!("https://localhost:{}/cn", addr.port());

    assert!(client(&pki, None).get(&url).send().await.is_err());
    let cn = client(&pki, Some(&pki.other_client))
        .get(&url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(cn, "kubelet");

    stop.send(()).unwrap();
    handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn plain_http_has_no_peer() {
    let (addr, stop, handle) = start(None, aggregated_app(), ServeOptions::default()).await;
    let http = plain_client();
    let body = http
        .get(format!("http://{addr}/cn"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(body, "none");
    stop.send(()).unwrap();
    handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn shutdown_drains_in_flight_and_refuses_new_connections() {
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let started_tx = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    let app = Router::new().route(
        "/slow",
        get(move || {
            let started_tx = started_tx.clone();
            async move {
                if let Some(tx) = started_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                "done"
            }
        }),
    );
    let (addr, stop, handle) = start(None, app, ServeOptions::default()).await;

    let http = plain_client();
    let in_flight = tokio::spawn(http.get(format!("http://{addr}/slow")).send());
    started_rx.await.unwrap();
    stop.send(()).unwrap();

    // The listener closes promptly while the slow request is still running.
    let mut refused = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "new connections must be refused after shutdown");
    assert!(
        !handle.is_finished(),
        "serve must wait for the in-flight request"
    );

    let resp = in_flight.await.unwrap().unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "done");
    handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn drain_deadline_is_enforced() {
    let app = Router::new().route(
        "/hang",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "never"
        }),
    );
    let options = ServeOptions {
        drain_timeout: Duration::from_millis(200),
        ..ServeOptions::default()
    };
    let (addr, stop, handle) = start(None, app, options).await;
    let _in_flight = tokio::spawn(plain_client().get(format!("http://{addr}/hang")).send());
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("serve returns after the drain deadline")
        .unwrap();
    assert!(matches!(result, Err(ServerError::DrainTimeout(_))));
}

/// Issue 13: a client that sends half a request line and then nothing is disconnected after
/// the header-read timeout instead of holding its connection forever.
#[tokio::test]
async fn a_slowloris_is_disconnected_after_the_header_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let options = ServeOptions {
        header_read_timeout: Some(Duration::from_millis(200)),
        ..ServeOptions::default()
    };
    let app = Router::new().route("/", get(|| async { "ok" }));
    let (addr, _stop, _handle) = start(None, app, options).await;
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection");
    // hyper answers 408 to a header timeout or just closes (or resets).
    if read.is_ok() {
        assert!(
            rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"),
            "{rest:?}"
        );
    }
}

/// A handler slower than the write timeout is answered 503, naming the limit.
#[tokio::test]
async fn a_slow_handler_is_answered_503() {
    let options = ServeOptions {
        write_timeout: Some(Duration::from_millis(200)),
        ..ServeOptions::default()
    };
    let app = Router::new().route(
        "/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "late"
        }),
    );
    let (addr, _stop, _handle) = start(None, app, options).await;
    let resp = tokio::time::timeout(
        Duration::from_secs(5),
        plain_client().get(format!("http://{addr}/slow")).send(),
    )
    .await
    .expect("answered")
    .unwrap();
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(resp.text().await.unwrap().contains("write timeout"));
}

/// A handler that panics answers its request 500; the server keeps serving, on the same
/// connection too.
#[tokio::test]
async fn a_panicking_handler_fails_only_its_request() {
    #[allow(clippy::panic)]
    async fn boom() -> &'static str {
        panic!("a bug met by this request")
    }
    let app = Router::new()
        .route("/boom", get(boom))
        .route("/fine", get(|| async { "fine" }));
    let (addr, _stop, _handle) = start(None, app, ServeOptions::default()).await;
    let client = plain_client();
    let resp = client
        .get(format!("http://{addr}/boom"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(resp.text().await.unwrap().contains("internal error"));
    for _ in 0..3 {
        let resp = client
            .get(format!("http://{addr}/fine"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.text().await.unwrap(), "fine");
    }
}

/// With one connection allowed, a client that requests a large body and reads none of it
/// gives its connection up after the write timeout, and the next client is served.
#[tokio::test]
async fn a_client_that_stops_reading_releases_its_connection() {
    use tokio::io::AsyncWriteExt;
    let options = ServeOptions {
        write_timeout: Some(Duration::from_millis(300)),
        max_connections: 1,
        ..ServeOptions::default()
    };
    let app = Router::new()
        .route("/big", get(|| async { vec![b'x'; 64 << 20] }))
        .route("/small", get(|| async { "small" }));
    let (addr, _stop, _handle) = start(None, app, options).await;
    let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let resp = tokio::time::timeout(
        Duration::from_secs(10),
        plain_client().get(format!("http://{addr}/small")).send(),
    )
    .await
    .expect("served once the stalled connection is dropped")
    .unwrap();
    assert_eq!(resp.text().await.unwrap(), "small");
    drop(stalled);
}

/// A client that trickles the first bytes (the ones hyper reads to tell HTTP/1 from HTTP/2,
/// before its own header clock starts) is held to the header-read timeout too.
#[tokio::test]
async fn a_trickled_preface_is_disconnected_after_the_header_timeout() {
    use tokio::io::AsyncWriteExt;
    let options = ServeOptions {
        header_read_timeout: Some(Duration::from_millis(300)),
        ..ServeOptions::default()
    };
    let app = Router::new().route("/", get(|| async { "ok" }));
    let (addr, _stop, _handle) = start(None, app, options).await;
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    let started = std::time::Instant::now();
    let mut closed = false;
    for byte in b"GET / HTTP/1.1\r\nHost: x\r\n".iter().cycle().take(200) {
        if slow.write_all(std::slice::from_ref(byte)).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(closed, "the server never closed the trickling connection");
    // Closed after the 300 ms deadline (noticed by the second write after it), well before
    // the 2.4 s the 24 preface bytes take to trickle in plus hyper's own 300 ms.
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}
