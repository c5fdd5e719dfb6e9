//! Delegated authentication and authorization, as every aggregated API server does it.
//!
//! Authentication, in order:
//! 1. a client certificate verified by the TLS layer against the requestheader CA whose CN is an
//!    allowed front-proxy name: the caller is the one named in `X-Remote-User` /
//!    `X-Remote-Group` / `X-Remote-Extra-*` (a certificate that is not the proxy's is a 401);
//! 2. else a bearer token, checked with a `TokenReview` (cached for the TTL);
//! 3. else 401. Upstream maps that case to `system:anonymous` and lets authorization refuse it
//!    (403); a 401 says more plainly what is missing.
//!
//! Authorization: `system:masters` and the always-allowed paths (`/healthz`, `/livez`,
//! `/readyz` by default, as upstream) skip it; everything else is a `SubjectAccessReview` with
//! resource attributes for API requests and the path for the rest, cached (allowed and denied
//! alike) for the TTL, like upstream's delegating authorizer (10 s each).

mod request_info;

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ferrocrane_core::server::{FrontProxyConfig, PeerCertificates, UserInfo, front_proxy_identity};
use futures::future::BoxFuture;
use http::HeaderMap;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

pub use request_info::{RequestInfo, path_always_allowed};

use crate::api::status::Status;

/// Paths served without authentication or authorization (upstream's
/// `--authorization-always-allow-paths` default).
pub const DEFAULT_ALWAYS_ALLOW_PATHS: &[&str] = &["/healthz", "/readyz", "/livez"];

/// Groups whose members skip authorization (upstream's default).
pub const ALWAYS_ALLOW_GROUPS: &[&str] = &["system:masters"];

/// An authorization answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Denied, with the authorizer's reason (may be empty).
    Deny(String),
}

/// The calls to the API server that delegated auth needs; a trait so the policy around them
/// (ordering, caching, status codes) is tested without an API server.
pub trait Reviewer: Send + Sync {
    /// `Ok(None)`: the token is not valid.
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserInfo>, String>>;
    fn review_access<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<Decision, String>>;
}

/// [`Reviewer`] backed by the API server (`--authentication-kubeconfig`,
/// `--authorization-kubeconfig`).
pub struct KubeReviewer {
    pub authentication: kube::Client,
    pub authorization: kube::Client,
}

impl Reviewer for KubeReviewer {
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserInfo>, String>> {
        Box::pin(async move {
            let api: Api<TokenReview> = Api::all(self.authentication.clone());
            let review = TokenReview {
                spec: TokenReviewSpec {
                    token: token.to_owned(),
                    audiences: None,
                },
                ..TokenReview::default()
            };
            let out = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| format!("TokenReview: {e}"))?;
            let Some(status) = out.status else {
                return Ok(None);
            };
            if status.authenticated != Some(true) {
                return Ok(None);
            }
            let user = status.user.unwrap_or_default();
            Ok(Some(UserInfo {
                username: user.username.unwrap_or_default(),
                groups: user.groups.unwrap_or_default(),
                extra: user.extra.unwrap_or_default().into_iter().collect(),
            }))
        })
    }

    fn review_access<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<Decision, String>> {
        Box::pin(async move {
            let api: Api<SubjectAccessReview> = Api::all(self.authorization.clone());
            let review = SubjectAccessReview {
                spec,
                ..SubjectAccessReview::default()
            };
            let out = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| format!("SubjectAccessReview: {e}"))?;
            let status = out.status.unwrap_or_default();
            if status.allowed {
                Ok(Decision::Allow)
            } else {
                Ok(Decision::Deny(status.reason.unwrap_or_default()))
            }
        })
    }
}

/// The SubjectAccessReview spec for `user` doing `info`.
pub fn access_review_spec(user: &UserInfo, info: &RequestInfo) -> SubjectAccessReviewSpec {
    let mut spec = SubjectAccessReviewSpec {
        user: Some(user.username.clone()),
        groups: Some(user.groups.clone()),
        extra: (!user.extra.is_empty()).then(|| user.extra.clone().into_iter().collect()),
        ..SubjectAccessReviewSpec::default()
    };
    if info.is_resource_request {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        spec.resource_attributes = Some(ResourceAttributes {
            namespace: opt(&info.namespace),
            verb: opt(&info.verb),
            group: Some(info.api_group.clone()),
            version: opt(&info.api_version),
            resource: opt(&info.resource),
            subresource: opt(&info.subresource),
            name: opt(&info.name),
            ..ResourceAttributes::default()
        });
    } else {
        spec.non_resource_attributes = Some(NonResourceAttributes {
            path: Some(info.path.clone()),
            verb: Some(info.verb.clone()),
        });
    }
    spec
}

/// `responsewriters.Forbidden`'s answer for a denied request.
pub fn forbidden(user: &UserInfo, info: &RequestInfo, reason: &str) -> Status {
    let msg = if !info.is_resource_request {
        format!(
            "User {:?} cannot {} path {:?}",
            user.username, info.verb, info.path
        )
    } else {
        let resource = if info.subresource.is_empty() {
            info.resource.clone()
        } else {
            format!("{}/{}", info.resource, info.subresource)
        };
        if info.namespace.is_empty() {
            format!(
                "User {:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
                user.username, info.verb, resource, info.api_group
            )
        } else {
            format!(
                "User {:?} cannot {} resource {:?} in API group {:?} in the namespace {:?}",
                user.username, info.verb, resource, info.api_group, info.namespace
            )
        }
    };
    let msg = if reason.is_empty() {
        msg
    } else {
        format!("{msg}: {reason}")
    };
    if info.is_resource_request {
        Status::forbidden(&info.api_group, &info.resource, &info.name, msg)
    } else {
        Status::forbidden("", "", "", msg)
    }
}

/// A small map whose entries expire; bounded so a flood of distinct tokens or paths cannot grow
/// it without limit.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    ttl: Duration,
    max_entries: usize,
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration, max_entries: usize) -> Self {
        TtlCache {
            ttl,
            max_entries: max_entries.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|(_, at)| now.duration_since(*at) < self.ttl)
            .map(|(v, _)| v.clone())
    }

    pub fn insert(&self, key: K, value: V, now: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.max_entries {
            entries.retain(|_, (_, at)| now.duration_since(*at) < self.ttl);
            if entries.len() >= self.max_entries {
                entries.clear();
            }
        }
        entries.insert(key, (value, now));
    }
}

/// Authentication and authorization settings and state.
pub struct Auth {
    /// `None` when no requestheader CA is configured: no caller is trusted by certificate.
    pub front_proxy: Option<FrontProxyConfig>,
    pub always_allow_paths: Vec<String>,
    pub reviewer: Arc<dyn Reviewer>,
    tokens: TtlCache<String, Option<UserInfo>>,
    decisions: TtlCache<String, Decision>,
    metrics: Option<AuthMetrics>,
}

/// Self-metrics of authn/authz outcomes.
#[derive(Clone)]
pub struct AuthMetrics {
    decisions: prometheus::IntCounterVec,
}

impl AuthMetrics {
    pub fn register(registry: &prometheus::Registry) -> Result<Self, prometheus::Error> {
        let decisions = prometheus::IntCounterVec::new(
            prometheus::Opts::new(
                "metrics_adapter_auth_decisions_total",
                "Requests by authentication/authorization outcome: allowed, always_allowed, unauthenticated, forbidden, error.",
            ),
            &["outcome"],
        )?;
        registry.register(Box::new(decisions.clone()))?;
        Ok(AuthMetrics { decisions })
    }
}

impl Auth {
    pub fn new(
        front_proxy: Option<FrontProxyConfig>,
        always_allow_paths: Vec<String>,
        reviewer: Arc<dyn Reviewer>,
        cache_ttl: Duration,
        metrics: Option<AuthMetrics>,
    ) -> Self {
        Auth {
            front_proxy,
            always_allow_paths,
            reviewer,
            tokens: TtlCache::new(cache_ttl, 10_000),
            decisions: TtlCache::new(cache_ttl, 10_000),
            metrics,
        }
    }

    fn count(&self, outcome: &str) {
        if let Some(m) = &self.metrics {
            m.decisions.with_label_values(&[outcome]).inc();
        }
    }

    /// Who made the request; `Ok(None)` when nobody is identified (401). Every identified
    /// user is in `system:authenticated`, as the API server's authenticated-group adder makes
    /// it: the default RBAC that lets callers read discovery and `/openapi` (`system:discovery`)
    /// is bound to that group, and the aggregator's own requests rely on it.
    pub async fn authenticate(
        &self,
        peer: Option<&PeerCertificates>,
        headers: &HeaderMap,
    ) -> Result<Option<UserInfo>, String> {
        Ok(self
            .authenticate_raw(peer, headers)
            .await?
            .map(with_authenticated_group))
    }

    async fn authenticate_raw(
        &self,
        peer: Option<&PeerCertificates>,
        headers: &HeaderMap,
    ) -> Result<Option<UserInfo>, String> {
        if let Some(proxy) = &self.front_proxy {
            match front_proxy_identity(peer, headers, proxy) {
                Ok(Some(user)) => return Ok(Some(user)),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "client certificate rejected");
                    return Ok(None);
                }
            }
        }
        let Some(token) = bearer_token(headers) else {
            return Ok(None);
        };
        let now = Instant::now();
        if let Some(cached) = self.tokens.get(&token.to_owned(), now) {
            return Ok(cached);
        }
        let user = self.reviewer.review_token(token).await?;
        self.tokens.insert(token.to_owned(), user.clone(), now);
        Ok(user)
    }

    /// Whether `user` may do `info`.
    pub async fn authorize(&self, user: &UserInfo, info: &RequestInfo) -> Result<Decision, String> {
        if user
            .groups
            .iter()
            .any(|g| ALWAYS_ALLOW_GROUPS.contains(&g.as_str()))
        {
            return Ok(Decision::Allow);
        }
        let spec = access_review_spec(user, info);
        // The spec serialises deterministically (BTreeMaps, fixed field order): a good key.
        let key = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
        let now = Instant::now();
        if let Some(d) = self.decisions.get(&key, now) {
            return Ok(d);
        }
        let decision = self.reviewer.review_access(spec).await?;
        self.decisions.insert(key, decision.clone(), now);
        Ok(decision)
    }
}

/// Adds `system:authenticated` unless the user already has it (or `system:unauthenticated`).
pub fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    if !user
        .groups
        .iter()
        .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        user.groups.push("system:authenticated".to_owned());
    }
    user
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The authenticated caller, inserted into the request for handlers that want it.
#[derive(Debug, Clone)]
pub struct Caller(pub UserInfo);

/// Axum middleware enforcing [`Auth`] on every route.
pub async fn middleware(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    if path_always_allowed(&auth.always_allow_paths, &path) {
        auth.count("always_allowed");
        return next.run(req).await;
    }
    let info = RequestInfo::parse(req.method(), &path, req.uri().query());
    let peer = req.extensions().get::<PeerCertificates>().cloned();
    let user = match auth.authenticate(peer.as_ref(), req.headers()).await {
        Ok(Some(user)) => user,
        Ok(None) => {
            auth.count("unauthenticated");
            return Status::unauthorized().into_response();
        }
        Err(e) => {
            // Upstream answers 401 when the token webhook fails, so a flaky API server does not
            // look like a server bug to clients.
            tracing::warn!(error = %e, "authentication failed");
            auth.count("error");
            return Status::unauthorized().into_response();
        }
    };
    match auth.authorize(&user, &info).await {
        Ok(Decision::Allow) => {
            auth.count("allowed");
            req.extensions_mut().insert(Caller(user));
            next.run(req).await
        }
        Ok(Decision::Deny(reason)) => {
            auth.count("forbidden");
            forbidden(&user, &info, &reason).into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, user = %user.username, path = %path, "authorization failed");
            auth.count("error");
            Status::internal(e).into_response()
        }
    }
}

#[cfg(test)]
mod tests;
