//! `--auth-filter`: `/metrics` of both listeners only for callers the API server knows and
//! allows, as kube-state-metrics does it (controller-runtime's authentication and
//! authorization filter): the bearer token goes through a TokenReview, the user through a
//! SubjectAccessReview of the non-resource URL (`get` on `/metrics`). No or an unknown token
//! answers 401 `Unauthorized`, a denied user 403; health and readiness paths stay open.
//!
//! Prometheus presents the same token every scrape, so outcomes are remembered per token and
//! request (a minute when allowed, ten seconds when refused), keeping the API server out of
//! the scrape path; the cache is bounded and emptied when full.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

const PROTECTED_PATH: &str = "/metrics";
const ALLOWED_TTL: Duration = Duration::from_secs(60);
const REFUSED_TTL: Duration = Duration::from_secs(10);
const MAX_CACHED: usize = 4096;

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
        };
        Some((status, Body::from(body)).into_response())
    }
}

/// The SubjectAccessReview for `user` doing `verb` on the non-resource `path` (pure).
pub fn access_review(user: &UserInfo, verb: &str, path: &str) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_string()),
                verb: Some(verb.to_ascii_lowercase()),
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The bearer token of an `Authorization` header value.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

type CacheKey = (String, String, String);

pub struct AuthFilter {
    client: kube::Client,
    cache: Mutex<HashMap<CacheKey, (Instant, Verdict)>>,
}

impl AuthFilter {
    pub fn new(client: kube::Client) -> Self {
        AuthFilter {
            client,
            cache: Mutex::default(),
        }
    }

    fn cached(&self, key: &CacheKey, now: Instant) -> Option<Verdict> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let (at, verdict) = cache.get(key)?;
        let ttl = if *verdict == Verdict::Allowed {
            ALLOWED_TTL
        } else {
            REFUSED_TTL
        };
        (now.duration_since(*at) < ttl).then(|| verdict.clone())
    }

    fn remember(&self, key: CacheKey, verdict: &Verdict, now: Instant) {
        if matches!(verdict, Verdict::Unavailable(_)) {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, (now, verdict.clone()));
    }

    /// Reviews a token for `verb` on `path`, through the cache.
    pub async fn verdict(&self, token: Option<&str>, verb: &str, path: &str) -> Verdict {
        let Some(token) = token else {
            return Verdict::Unauthenticated;
        };
        let key = (token.to_string(), verb.to_string(), path.to_string());
        let now = Instant::now();
        if let Some(v) = self.cached(&key, now) {
            return v;
        }
        let verdict = self.review(token, verb, path).await;
        if let Verdict::Unavailable(e) = &verdict {
            tracing::warn!(error = %e, "auth filter: the API server reviews failed");
        }
        self.remember(key, &verdict, now);
        verdict
    }

    async fn review(&self, token: &str, verb: &str, path: &str) -> Verdict {
        let tokens: Api<TokenReview> = Api::all(self.client.clone());
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                ..Default::default()
            },
            ..Default::default()
        };
        let status = match tokens.create(&PostParams::default(), &review).await {
            Ok(r) => r.status.unwrap_or_default(),
            Err(e) => return Verdict::Unavailable(format!("TokenReview: {e}")),
        };
        let user = match status.user {
            Some(user) if status.authenticated == Some(true) => user,
            _ => return Verdict::Unauthenticated,
        };
        let reviews: Api<SubjectAccessReview> = Api::all(self.client.clone());
        match reviews
            .create(&PostParams::default(), &access_review(&user, verb, path))
            .await
        {
            Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => Verdict::Allowed,
            Ok(_) => Verdict::Denied {
                user: user.username.unwrap_or_default(),
            },
            Err(e) => Verdict::Unavailable(format!("SubjectAccessReview: {e}")),
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

    #[test]
    fn bearer_tokens_are_read_from_the_header() {
        assert_eq!(bearer_token("Bearer abc.def"), Some("abc.def"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("abc"), None);
    }

    #[test]
    fn the_access_review_names_the_user_and_the_url() {
        let user = UserInfo {
            username: Some("system:serviceaccount:monitoring:prometheus".into()),
            uid: Some("u-1".into()),
            groups: Some(vec!["system:serviceaccounts".into()]),
            extra: None,
        };
        let r = serde_json::to_value(access_review(&user, "GET", "/metrics")).unwrap();
        assert_eq!(
            r["spec"],
            serde_json::json!({
                "user": "system:serviceaccount:monitoring:prometheus",
                "uid": "u-1",
                "groups": ["system:serviceaccounts"],
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            })
        );
    }

    #[test]
    fn refusals_are_401_403_or_503() {
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
    }
}
