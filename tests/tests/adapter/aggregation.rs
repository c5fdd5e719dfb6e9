//! The aggregation layer is real: an APIService backed by a test server built on
//! ferrocrane-core's TLS serving becomes Available, and kube-apiserver proxies
//! `kubectl get --raw /apis/<group>/<version>` to it with a verified front-proxy client
//! certificate and the caller's identity in X-Remote-User / X-Remote-Group.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use axum::extract::{Extension, Path};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use ferrocrane_core::server::{
    ClientAuth, FrontProxyConfig, PeerCertificates, TlsServerConfig, UserInfo,
    front_proxy_identity, generate_self_signed, serve,
};
use ferrocrane_e2e::{Cluster, wait_until};
use k8s_openapi::ByteString;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<UserInfo>>>);

/// Everything but a verified front-proxy caller gets 401: a request that bypassed
/// kube-apiserver must never be trusted with an X-Remote-User it wrote itself.
async fn discovery(
    Path((group, version)): Path<(String, String)>,
    peer: Option<Extension<PeerCertificates>>,
    Extension(proxy): Extension<Arc<FrontProxyConfig>>,
    Extension(seen): Extension<Seen>,
    headers: HeaderMap,
) -> impl IntoResponse {
    let Some(Extension(peer)) = peer else {
        return (
            StatusCode::UNAUTHORIZED,
            "client certificate required".to_string(),
        )
            .into_response();
    };
    match front_proxy_identity(Some(&peer), &headers, &proxy) {
        Ok(user) => {
            if let (Some(user), Ok(mut seen)) = (user, seen.0.lock()) {
                seen.push(user);
            }
            let body = serde_json::json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": format!("{group}/{version}"),
                "resources": [{
                    "name": "widgets", "singularName": "widget", "namespaced": true,
                    "kind": "Widget", "verbs": ["get", "list"]
                }]
            });
            axum::Json(body).into_response()
        }
        Err(e) => (StatusCode::UNAUTHORIZED, e.to_string()).into_response(),
    }
}

fn pem_blocks(pem: &str) -> Vec<String> {
    pem.split_inclusive("-----END CERTIFICATE-----\n")
        .map(str::to_string)
        .filter(|b| b.contains("BEGIN"))
        .collect()
}

#[tokio::test]
async fn aggregated_api_is_proxied_with_a_verified_front_proxy_identity() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("smoke-agg").await?;
    let client = cluster.client().await?;
    let service = "smoke-agg";
    let group = format!("{}.e2e.ferrocrane.io", ns.name);
    let version = "v1";

    // Serving cert for the name the aggregator verifies: <service>.<namespace>.svc.
    let dir = std::env::temp_dir().join(format!("ferrocrane-agg-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let dns = format!("{service}.{}.svc", ns.name);
    let (chain, key) =
        generate_self_signed(&dns, &["127.0.0.1".parse()?], std::slice::from_ref(&dns))?;
    let ca_bundle = pem_blocks(&chain)
        .get(1)
        .cloned()
        .context("self-signed chain has no CA")?;
    std::fs::write(dir.join("tls.crt"), &chain)?;
    std::fs::write(dir.join("tls.key"), &key)?;
    let tls = TlsServerConfig {
        cert_file: dir.join("tls.crt"),
        key_file: dir.join("tls.key"),
        client_ca_file: Some(cluster.env.path("FRONT_PROXY_CA")?),
        client_auth: ClientAuth::Optional,
    }
    .load()?;
    let proxy = Arc::new(FrontProxyConfig {
        allowed_names: vec![cluster.env.var("FRONT_PROXY_ALLOWED_NAMES")?.to_string()],
        ..Default::default()
    });
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/apis/{group}/{version}", axum::routing::get(discovery))
        .layer(Extension(proxy))
        .layer(Extension(seen.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, Some(tls), app, async {
        let _ = stopped.await;
    }));

    // A request that skips kube-apiserver is refused even with a forged X-Remote-User.
    let direct = reqwest::Client::builder()
        .tls_backend_preconfigured(insecure_client_tls()?)
        .build()?
        .get(format!("https://127.0.0.1:{port}/apis/{group}/{version}"))
        .header("X-Remote-User", "forged")
        .send()
        .await?;
    assert_eq!(direct.status(), reqwest::StatusCode::UNAUTHORIZED);

    // ExternalName: the aggregator (routing off) dials localhost:<port>, verifying the cert as <svc>.<ns>.svc.
    let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(serde_json::json!({
        "metadata": { "name": service },
        "spec": { "type": "ExternalName", "externalName": "localhost", "ports": [{ "port": port, "protocol": "TCP" }] }
    }))?;
    Api::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &svc)
        .await?;
    let apiservices: Api<APIService> = Api::all(client.clone());
    let name = format!("{version}.{group}");
    let apiservice = APIService {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        spec: Some(APIServiceSpec {
            group: Some(group.clone()),
            version: Some(version.to_string()),
            service: Some(ServiceReference {
                namespace: Some(ns.name.clone()),
                name: Some(service.to_string()),
                port: Some(i32::from(port)),
            }),
            ca_bundle: Some(ByteString(ca_bundle.into_bytes())),
            group_priority_minimum: 100,
            version_priority: 100,
            ..Default::default()
        }),
        ..Default::default()
    };
    apiservices
        .create(&PostParams::default(), &apiservice)
        .await?;
    let result = async {
        wait_until("APIService Available", Duration::from_secs(90), || async {
            let obj = apiservices.get(&name).await?;
            let available = obj
                .status
                .and_then(|s| s.conditions)
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Available" && c.status == "True");
            Ok(available.then_some(()))
        })
        .await?;

        let path = format!("/apis/{group}/{version}");
        let mut kubectl = cluster.kubectl()?;
        kubectl.args(["get", "--raw", &path]);
        let out = tokio::task::spawn_blocking(move || kubectl.output()).await??;
        anyhow::ensure!(
            out.status.success(),
            "kubectl get --raw {path} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let body: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        // Checked with ensure!, not assert!: a panic here would skip the APIService's
        // deletion below, and an unavailable APIService breaks discovery for every other test.
        anyhow::ensure!(
            body["groupVersion"] == format!("{group}/{version}"),
            "{body}"
        );
        anyhow::ensure!(body["resources"][0]["kind"] == "Widget", "{body}");

        let users = seen.0.lock().map(|s| s.clone()).unwrap_or_default();
        let admin = users
            .iter()
            .find(|u| u.username == "ferrocrane-admin")
            .with_context(|| {
                format!("no request arrived with X-Remote-User ferrocrane-admin; saw {users:?}")
            })?;
        anyhow::ensure!(
            admin.groups.iter().any(|g| g == "system:masters"),
            "groups: {:?}",
            admin.groups
        );
        Ok::<_, anyhow::Error>(())
    }
    .await;

    let _ = apiservices.delete(&name, &DeleteParams::default()).await;
    let _ = stop.send(());
    let _ = server.await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// For the one direct request above: it must reach the handler, not fail TLS verification.
fn insecure_client_tls() -> Result<rustls::ClientConfig> {
    #[derive(Debug)]
    struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);
    impl rustls::client::danger::ServerCertVerifier for AcceptAny {
        fn verify_server_cert(
            &self,
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &[rustls::pki_types::CertificateDer<'_>],
            _: &rustls::pki_types::ServerName<'_>,
            _: &[u8],
            _: rustls::pki_types::UnixTime,
        ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &rustls::pki_types::CertificateDer<'_>,
            d: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(
                m,
                c,
                d,
                &self.0.signature_verification_algorithms,
            )
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &rustls::pki_types::CertificateDer<'_>,
            d: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(
                m,
                c,
                d,
                &self.0.signature_verification_algorithms,
            )
        }
        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}
