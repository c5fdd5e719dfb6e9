//! The caching policy of [`TokenReviewer`] and [`Authorizer`] against a fake API server.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec;

use super::*;

/// Token `alice-token` is alice, anything else unknown; alice may do anything, others nothing.
/// `down` makes every call fail, as an unreachable API server would.
#[derive(Default)]
struct FakeApi {
    token_calls: AtomicUsize,
    access_calls: AtomicUsize,
    down: AtomicBool,
    specs: Mutex<Vec<SubjectAccessReviewSpec>>,
}

fn unreachable() -> kube::Error {
    kube::Error::Service("connection refused".into())
}

impl ReviewApi for FakeApi {
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserInfo>, ReviewError>> {
        self.token_calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if self.down.load(Ordering::SeqCst) {
                return Err(ReviewError::TokenReview(unreachable()));
            }
            Ok((token == "alice-token").then(alice))
        })
    }

    fn review_access<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<Decision, ReviewError>> {
        self.access_calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if self.down.load(Ordering::SeqCst) {
                return Err(ReviewError::AccessReview(unreachable()));
            }
            let allowed = spec.user.as_deref() == Some("alice");
            self.specs.lock().unwrap().push(spec);
            Ok(if allowed {
                Decision::Allow
            } else {
                Decision::Deny("no RBAC policy matched".into())
            })
        })
    }
}

fn alice() -> UserInfo {
    UserInfo {
        username: "alice".into(),
        ..UserInfo::default()
    }
}

fn bob() -> UserInfo {
    UserInfo {
        username: "bob".into(),
        ..UserInfo::default()
    }
}

/// ksm's lifetimes: a minute when accepted, ten seconds when refused.
const KSM: CacheConfig = CacheConfig {
    accepted_ttl: Duration::from_secs(60),
    refused_ttl: Duration::from_secs(10),
    max_entries: 16,
};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn metrics() -> RequestAttributes {
    RequestAttributes::non_resource("GET", "/metrics")
}

#[tokio::test]
async fn accepted_tokens_are_remembered_longer_than_unknown_ones() {
    let api = Arc::new(FakeApi::default());
    let tokens = TokenReviewer::new(api.clone(), KSM);
    let t0 = Instant::now();
    assert_eq!(
        tokens.review_at("alice-token", t0).await.unwrap(),
        Some(alice())
    );
    assert_eq!(tokens.review_at("nope", t0).await.unwrap(), None);
    assert_eq!(api.token_calls.load(Ordering::SeqCst), 2);

    let t1 = t0 + secs(30);
    assert_eq!(
        tokens.review_at("alice-token", t1).await.unwrap(),
        Some(alice())
    );
    assert_eq!(
        api.token_calls.load(Ordering::SeqCst),
        2,
        "alice still cached"
    );
    assert_eq!(tokens.review_at("nope", t1).await.unwrap(), None);
    assert_eq!(
        api.token_calls.load(Ordering::SeqCst),
        3,
        "refusal expired after 10 s"
    );

    tokens
        .review_at("alice-token", t0 + secs(60))
        .await
        .unwrap();
    assert_eq!(
        api.token_calls.load(Ordering::SeqCst),
        4,
        "acceptance expired after 60 s"
    );
}

#[tokio::test]
async fn allowed_and_denied_decisions_have_their_own_lifetimes() {
    let api = Arc::new(FakeApi::default());
    let authorizer = Authorizer::new(api.clone(), KSM);
    let t0 = Instant::now();
    assert_eq!(
        authorizer
            .authorize_at(&alice(), &metrics(), t0)
            .await
            .unwrap(),
        Decision::Allow
    );
    assert_eq!(
        authorizer
            .authorize_at(&bob(), &metrics(), t0)
            .await
            .unwrap(),
        Decision::Deny("no RBAC policy matched".into())
    );
    // Another path is another question.
    let other = RequestAttributes::non_resource("GET", "/healthz");
    authorizer.authorize_at(&alice(), &other, t0).await.unwrap();
    assert_eq!(api.access_calls.load(Ordering::SeqCst), 3);

    let t1 = t0 + secs(10);
    authorizer
        .authorize_at(&alice(), &metrics(), t1)
        .await
        .unwrap();
    authorizer
        .authorize_at(&bob(), &metrics(), t1)
        .await
        .unwrap();
    assert_eq!(
        api.access_calls.load(Ordering::SeqCst),
        4,
        "only bob asked again"
    );

    let spec = api.specs.lock().unwrap()[0].clone();
    assert_eq!(spec.user.as_deref(), Some("alice"));
    let nra = spec.non_resource_attributes.unwrap();
    assert_eq!(
        (nra.verb.as_deref(), nra.path.as_deref()),
        (Some("get"), Some("/metrics"))
    );
}

#[tokio::test]
async fn failures_are_reported_and_never_remembered() {
    let api = Arc::new(FakeApi::default());
    let tokens = TokenReviewer::new(api.clone(), KSM);
    let authorizer = Authorizer::new(api.clone(), KSM);
    api.down.store(true, Ordering::SeqCst);
    let t0 = Instant::now();
    let e = tokens.review_at("alice-token", t0).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "TokenReview: ServiceError: connection refused"
    );
    let e = authorizer
        .authorize_at(&alice(), &metrics(), t0)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "SubjectAccessReview: ServiceError: connection refused"
    );

    api.down.store(false, Ordering::SeqCst);
    assert_eq!(
        tokens.review_at("alice-token", t0).await.unwrap(),
        Some(alice())
    );
    assert_eq!(
        authorizer
            .authorize_at(&alice(), &metrics(), t0)
            .await
            .unwrap(),
        Decision::Allow
    );
    assert_eq!(api.token_calls.load(Ordering::SeqCst), 2);
    assert_eq!(api.access_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn zero_ttl_asks_every_time() {
    let api = Arc::new(FakeApi::default());
    let tokens = TokenReviewer::new(api.clone(), CacheConfig::uniform(Duration::ZERO, 16));
    let t0 = Instant::now();
    tokens.review_at("alice-token", t0).await.unwrap();
    tokens.review_at("alice-token", t0).await.unwrap();
    assert_eq!(api.token_calls.load(Ordering::SeqCst), 2);
}

/// Every TokenReview takes 10 s (virtual time): alice-token is alice, others unknown.
struct SlowApi;

impl ReviewApi for SlowApi {
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserInfo>, ReviewError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok((token == "alice-token").then(alice))
        })
    }

    fn review_access<'a>(
        &'a self,
        _spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<Decision, ReviewError>> {
        Box::pin(async { Ok(Decision::Allow) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_unknown_tokens_is_throttled_and_known_ones_never_wait() {
    let reviewer = Arc::new(TokenReviewer::new(Arc::new(SlowApi), KSM));
    assert_eq!(reviewer.review("alice-token").await.unwrap(), Some(alice()));
    // Made-up tokens fill every review slot...
    let flood: Vec<_> = (0..MAX_CONCURRENT_TOKEN_REVIEWS)
        .map(|i| {
            let r = reviewer.clone();
            tokio::spawn(async move { r.review(&format!("guess-{i}")).await })
        })
        .collect();
    tokio::task::yield_now().await;
    // ...so one more waits its 2 s and is throttled, not sent to the API server,
    let started = tokio::time::Instant::now();
    let refused = reviewer.review("guess-extra").await;
    assert!(
        matches!(refused, Err(ReviewError::Throttled)),
        "{refused:?}"
    );
    assert_eq!(started.elapsed(), MAX_TOKEN_REVIEW_WAIT);
    // while a remembered token is answered at once.
    let started = tokio::time::Instant::now();
    assert_eq!(reviewer.review("alice-token").await.unwrap(), Some(alice()));
    assert_eq!(started.elapsed(), Duration::ZERO);
    for f in flood {
        assert_eq!(
            f.await.unwrap().unwrap(),
            None,
            "the flood itself is reviewed"
        );
    }
}
