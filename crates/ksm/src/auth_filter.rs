//! `--auth-filter`: `/metrics` of both listeners only for callers the API server knows and
//! allows, as kube-state-metrics does it (controller-runtime's authentication and
//! authorization filter): the bearer token goes through a TokenReview, the user through a
//! SubjectAccessReview of the non-resource URL (`get` on `/metrics`). No or an unknown token
//! answers 401 `Unauthorized`, a denied user 403; health and readiness paths stay open.
//!
//! Prometheus presents the same token every scrape, so answers are remembered (a minute when
//! accepted, ten seconds when refused), keeping the API server out of the scrape path; the
//! reviews and their bounded caches are core's delegated auth.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ferrocrane_core::server::delegated_auth::{
    Authorizer, CacheConfig, Decision, KubeReviewApi, RequestAttributes, ReviewApi, ReviewError,
    TokenReviewer, bearer_token,
};

const PROTECTED_PATH: &str = "/metrics";
const CACHE: CacheConfig = CacheConfig {
    accepted_ttl: Duration::from_secs(60),
    refused_ttl: Duration::from_secs(10),
    max_entries: 4096,
};

/// What the API server said about a token and a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// No token, or one the API server does not authenticate.
    Unauthenticated,
    Denied {
        user: String,
    },
    /// The reviews themselves failed (API server unreachable): not remembered.
    Unavailable(String),
    /// Too many unknown tokens are under review at once (a flood of guesses).
    Throttled,
}

impl Verdict {
    fn response(&self) -> Option<Response> {
        let (status, body) = match self {
            Verdict::Allowed => return None,
            Verdict::Unauthenticated => (StatusCode::UNAUTHORIZED, "Unauthorized\n".to_string()),
            Verdict::Denied { user } => (
                StatusCode::FORBIDDEN,
                format!("Authorization denied for user {user}\n"),
            ),
            Verdict::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "auth filter unavailable\n".to_string(),
            ),
            Verdict::Throttled => {
                return Some(
                    (
                        StatusCode::TOO_MANY_REQUESTS,
                        [(header::RETRY_AFTER, "1")],
                        "too many token reviews in flight; retry\n",
                    )
                        .into_response(),
                );
            }
        };
        Some((status, Body::from(body)).into_response())
    }
}

pub struct AuthFilter {
    tokens: TokenReviewer,
    authorizer: Authorizer,
}

impl AuthFilter {
    pub fn new(client: kube::Client) -> Self {
        Self::with_reviews(Arc::new(KubeReviewApi::new(client)))
    }

    fn with_reviews(reviews: Arc<dyn ReviewApi>) -> Self {
        AuthFilter {
            tokens: TokenReviewer::new(reviews.clone(), CACHE),
            authorizer: Authorizer::new(reviews, CACHE),
        }
    }

    /// Reviews a token for `verb` on `path`, through the caches.
    pub async fn verdict(&self, token: Option<&str>, verb: &str, path: &str) -> Verdict {
        let Some(token) = token else {
            return Verdict::Unauthenticated;
        };
        let verdict = self.review(token, verb, path).await;
        if let Verdict::Unavailable(e) = &verdict {
            tracing::warn!(error = %e, "auth filter: the API server reviews failed");
        }
        verdict
    }

    async fn review(&self, token: &str, verb: &str, path: &str) -> Verdict {
        let user = match self.tokens.review(token).await {
            Ok(Some(user)) => user,
            Ok(None) => return Verdict::Unauthenticated,
            Err(ReviewError::Throttled) => return Verdict::Throttled,
            Err(e) => return Verdict::Unavailable(e.to_string()),
        };
        let attributes = RequestAttributes::non_resource(verb, path);
        match self.authorizer.authorize(&user, &attributes).await {
            Ok(Decision::Allow) => Verdict::Allowed,
            Ok(Decision::Deny(_)) => Verdict::Denied {
                user: user.username,
            },
            Err(e) => Verdict::Unavailable(e.to_string()),
        }
    }
}

/// axum middleware guarding `/metrics`.
pub async fn require(State(filter): State<Arc<AuthFilter>>, req: Request, next: Next) -> Response {
    if req.uri().path() != PROTECTED_PATH {
        return next.run(req).await;
    }
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
        .map(str::to_string);
    let verdict = filter
        .verdict(token.as_deref(), req.method().as_str(), req.uri().path())
        .await;
    match verdict.response() {
        None => next.run(req).await,
        Some(refusal) => refusal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::server::UserInfo;
    use ferrocrane_core::server::delegated_auth::ReviewError;
    use futures::future::BoxFuture;
    use k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec;

    #[test]
    fn refusals_are_401_403_429_or_503() {
        assert!(Verdict::Allowed.response().is_none());
        let status = |v: Verdict| v.response().unwrap().status();
        assert_eq!(status(Verdict::Unauthenticated), StatusCode::UNAUTHORIZED);
        assert_eq!(
            status(Verdict::Denied { user: "x".into() }),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            status(Verdict::Unavailable("down".into())),
            StatusCode::SERVICE_UNAVAILABLE
        );
        let throttled = Verdict::Throttled.response().unwrap();
        assert_eq!(throttled.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(throttled.headers()[header::RETRY_AFTER], "1");
    }

    /// `prom-token` is Prometheus, allowed on `/metrics`; `other-token` is someone who is not;
    /// `down-token` finds the API server unreachable.
    struct FakeReviews;

    impl ReviewApi for FakeReviews {
        fn review_token<'a>(
            &'a self,
            token: &'a str,
        ) -> BoxFuture<'a, Result<Option<UserInfo>, ReviewError>> {
            let user = |name: &str| UserInfo {
                username: name.into(),
                ..UserInfo::default()
            };
            Box::pin(async move {
                match token {
                    "prom-token" => Ok(Some(user("prometheus"))),
                    "other-token" => Ok(Some(user("mallory"))),
                    "down-token" => Err(ReviewError::TokenReview(kube::Error::Service(
                        "connection refused".into(),
                    ))),
                    _ => Ok(None),
                }
            })
        }

        fn review_access<'a>(
            &'a self,
            spec: SubjectAccessReviewSpec,
        ) -> BoxFuture<'a, Result<Decision, ReviewError>> {
            Box::pin(async move {
                let path = spec.non_resource_attributes.and_then(|a| a.path);
                Ok(
                    if spec.user.as_deref() == Some("prometheus")
                        && path.as_deref() == Some(PROTECTED_PATH)
                    {
                        Decision::Allow
                    } else {
                        Decision::Deny(String::new())
                    },
                )
            })
        }
    }

    #[tokio::test]
    async fn verdicts_follow_the_reviews() {
        let filter = AuthFilter::with_reviews(Arc::new(FakeReviews));
        let verdict = |token| filter.verdict(token, "GET", PROTECTED_PATH);
        assert_eq!(verdict(Some("prom-token")).await, Verdict::Allowed);
        assert_eq!(
            verdict(Some("other-token")).await,
            Verdict::Denied {
                user: "mallory".into()
            }
        );
        assert_eq!(verdict(Some("nope")).await, Verdict::Unauthenticated);
        assert_eq!(verdict(None).await, Verdict::Unauthenticated);
        assert_eq!(
            verdict(Some("down-token")).await,
            Verdict::Unavailable("TokenReview: ServiceError: connection refused".into())
        );
    }
}
