use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::routing::get;
use ferrocrane_core::server::delegated_auth::access_review_spec;
use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec;
use rustls::pki_types::{CertificateDer, pem::PemObject};
use tower::ServiceExt;

use super::*;

/// Tokens `alice-token` (group team-a) and `bob-token`; alice may do anything, bob nothing.
#[derive(Default)]
struct FakeReviewer {
    token_calls: AtomicUsize,
    access_calls: AtomicUsize,
    fail_access: bool,
    /// Every TokenReview takes 10 s (tests run on virtual time).
    slow_tokens: bool,
}

impl ReviewApi for FakeReviewer {
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserInfo>, ReviewError>> {
        self.token_calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if self.slow_tokens {
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            Ok(match token {
                "alice-token" => Some(UserInfo {
                    username: "alice".into(),
                    groups: vec!["team-a".into()],
                    ..UserInfo::default()
                }),
                "bob-token" => Some(UserInfo {
                    username: "bob".into(),
                    ..UserInfo::default()
                }),
                _ => None,
            })
        })
    }

    fn review_access<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<Decision, ReviewError>> {
        self.access_calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if self.fail_access {
                return Err(ReviewError::AccessReview(kube::Error::Service(
                    "connection refused".into(),
                )));
            }
            Ok(if spec.user.as_deref() == Some("alice") {
                Decision::Allow
            } else {
                Decision::Deny("no RBAC policy matched".into())
            })
        })
    }
}

fn app(reviewer: Arc<FakeReviewer>, proxy: Option<FrontProxyConfig>) -> Router {
    let auth = Arc::new(Auth::new(
        proxy,
        DEFAULT_ALWAYS_ALLOW_PATHS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        reviewer,
        Duration::from_secs(10),
        None,
    ));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .fallback(|req: Request| async move {
            let who = req
                .extensions()
                .get::<Caller>()
                .map(|c| c.0.username.clone())
                .unwrap_or_default();
            format!("hello {who}")
        })
        .layer(axum::middleware::from_fn_with_state(auth, middleware))
}

async fn call(
    app: &Router,
    path: &str,
    headers: &[(&str, &str)],
    peer: Option<PeerCertificates>,
) -> (u16, String) {
    let mut req = http::Request::get(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut req = req.body(Body::empty()).unwrap();
    if let Some(p) = peer {
        req.extensions_mut().insert(p);
    }
    let resp = app.clone().oneshot(req).await.unwrap();
    let code = resp.status().as_u16();
    let body = to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    (code, String::from_utf8_lossy(&body).into_owned())
}

fn peer_cert() -> PeerCertificates {
    let (chain, _) = ferrocrane_core::server::generate_self_signed("proxy", &[], &[]).unwrap();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    PeerCertificates(Arc::new(certs))
}

const CUSTOM: &str = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/rps";

#[tokio::test]
async fn probes_need_no_credentials_everything_else_does() {
    let reviewer = Arc::new(FakeReviewer::default());
    let app = app(reviewer.clone(), Some(FrontProxyConfig::default()));
    assert_eq!(call(&app, "/healthz", &[], None).await, (200, "ok".into()));
    let (code, body) = call(&app, CUSTOM, &[], None).await;
    assert_eq!(code, 401);
    assert!(body.contains("\"reason\":\"Unauthorized\""), "{body}");
    // X-Remote-User without the proxy's certificate is ignored, not trusted.
    let (code, _) = call(&app, CUSTOM, &[("X-Remote-User", "alice")], None).await;
    assert_eq!(code, 401);
    assert_eq!(reviewer.access_calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn front_proxy_identity_is_authorized_by_sar() {
    let reviewer = Arc::new(FakeReviewer::default());
    let app = app(reviewer.clone(), Some(FrontProxyConfig::default()));
    let (code, body) = call(
        &app,
        CUSTOM,
        &[("X-Remote-User", "alice"), ("X-Remote-Group", "team-a")],
        Some(peer_cert()),
    )
    .await;
    assert_eq!((code, body.as_str()), (200, "hello alice"));

    let (code, body) = call(&app, CUSTOM, &[("X-Remote-User", "bob")], Some(peer_cert())).await;
    assert_eq!(code, 403);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        "pods.custom.metrics.k8s.io \"*\" is forbidden: User \"bob\" cannot get resource \"pods/rps\" in API group \"custom.metrics.k8s.io\" in the namespace \"ns1\": no RBAC policy matched"
    );

    // Cached: the same question again does not ask the API server.
    let before = reviewer.access_calls.load(Ordering::SeqCst);
    call(&app, CUSTOM, &[("X-Remote-User", "bob")], Some(peer_cert())).await;
    assert_eq!(reviewer.access_calls.load(Ordering::SeqCst), before);

    // system:masters skips the review.
    let (code, _) = call(
        &app,
        CUSTOM,
        &[
            ("X-Remote-User", "root"),
            ("X-Remote-Group", "system:masters"),
        ],
        Some(peer_cert()),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(reviewer.access_calls.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn certificate_with_a_name_not_allowed_is_rejected() {
    let reviewer = Arc::new(FakeReviewer::default());
    let proxy = FrontProxyConfig {
        allowed_names: vec!["front-proxy-client".into()],
        ..FrontProxyConfig::default()
    };
    let app = app(reviewer, Some(proxy));
    let (code, _) = call(
        &app,
        CUSTOM,
        &[("X-Remote-User", "alice")],
        Some(peer_cert()),
    )
    .await;
    assert_eq!(code, 401);
}

#[tokio::test]
async fn bearer_tokens_go_through_token_review_once() {
    let reviewer = Arc::new(FakeReviewer::default());
    let app = app(reviewer.clone(), None);
    let auth = [("Authorization", "Bearer alice-token")];
    assert_eq!(call(&app, "/metrics", &auth, None).await.0, 200);
    assert_eq!(call(&app, "/metrics", &auth, None).await.0, 200);
    assert_eq!(reviewer.token_calls.load(Ordering::SeqCst), 1);
    let (code, body) = call(
        &app,
        "/metrics",
        &[("Authorization", "Bearer bob-token")],
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert!(
        body.contains("forbidden: User \\\"bob\\\" cannot get path \\\"/metrics\\\""),
        "{body}"
    );
    assert_eq!(
        call(&app, "/metrics", &[("Authorization", "Bearer nope")], None)
            .await
            .0,
        401
    );
}

#[tokio::test]
async fn authorizer_failure_is_a_500_not_an_allow() {
    let reviewer = Arc::new(FakeReviewer {
        fail_access: true,
        ..FakeReviewer::default()
    });
    let app = app(reviewer, None);
    let (code, body) = call(
        &app,
        CUSTOM,
        &[("Authorization", "Bearer alice-token")],
        None,
    )
    .await;
    assert_eq!(code, 500, "{body}");
}

#[test]
fn review_specs() {
    let user = UserInfo {
        username: "u".into(),
        groups: vec!["g".into()],
        ..UserInfo::default()
    };
    let info = RequestInfo::parse(&http::Method::GET, CUSTOM, None);
    let spec = access_review_spec(&user, &info.attributes());
    let ra = spec.resource_attributes.unwrap();
    assert_eq!(ra.group.as_deref(), Some("custom.metrics.k8s.io"));
    assert_eq!(ra.resource.as_deref(), Some("pods"));
    assert_eq!(ra.subresource.as_deref(), Some("rps"));
    assert_eq!(ra.name.as_deref(), Some("*"));
    assert_eq!(ra.namespace.as_deref(), Some("ns1"));
    assert_eq!(ra.verb.as_deref(), Some("get"));
    let info = RequestInfo::parse(
        &http::Method::GET,
        "/apis/custom.metrics.k8s.io/v1beta1",
        None,
    );
    let spec = access_review_spec(&user, &info.attributes());
    assert!(spec.resource_attributes.is_none());
    let nra = spec.non_resource_attributes.unwrap();
    assert_eq!(
        nra.path.as_deref(),
        Some("/apis/custom.metrics.k8s.io/v1beta1")
    );
}

#[tokio::test]
async fn authenticated_users_are_in_system_authenticated() {
    let reviewer = Arc::new(FakeReviewer::default());
    let auth = Auth::new(
        Some(FrontProxyConfig::default()),
        vec![],
        reviewer,
        Duration::from_secs(10),
        None,
    );
    let mut headers = HeaderMap::new();
    headers.insert("X-Remote-User", "system:aggregator".parse().unwrap());
    let user = auth
        .authenticate(Some(&peer_cert()), &headers)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(user.groups, vec!["system:authenticated"]);
    headers.insert("X-Remote-Group", "system:authenticated".parse().unwrap());
    let user = auth
        .authenticate(Some(&peer_cert()), &headers)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(user.groups, vec!["system:authenticated"]);
}

/// A flood of made-up bearer tokens occupies every TokenReview slot; the next caller gets
/// 429 with Retry-After instead of another call to the API server.
#[tokio::test(start_paused = true)]
async fn a_flood_of_unknown_tokens_is_answered_429() {
    let reviewer = Arc::new(FakeReviewer {
        slow_tokens: true,
        ..FakeReviewer::default()
    });
    let app = app(reviewer.clone(), None);
    let flood: Vec<_> = (0..ferrocrane_core::server::delegated_auth::MAX_CONCURRENT_TOKEN_REVIEWS)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                let auth = format!("Bearer guess-{i}");
                call(&app, CUSTOM, &[("Authorization", auth.as_str())], None).await
            })
        })
        .collect();
    tokio::task::yield_now().await;
    let req = http::Request::get(CUSTOM)
        .header("Authorization", "Bearer guess-extra")
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()[http::header::RETRY_AFTER], "1");
    let body = to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    assert!(
        String::from_utf8_lossy(&body).contains("\"reason\":\"TooManyRequests\""),
        "{body:?}"
    );
    for f in flood {
        assert_eq!(
            f.await.unwrap().0,
            401,
            "the flood's own tokens are unknown"
        );
    }
    assert_eq!(
        reviewer.token_calls.load(Ordering::SeqCst),
        ferrocrane_core::server::delegated_auth::MAX_CONCURRENT_TOKEN_REVIEWS
    );
}
