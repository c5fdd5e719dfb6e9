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
//!
//! The reviews, their caches and the bearer-token parsing are core's
//! [`ferrocrane_core::server::delegated_auth`]; what is here is the adapter's policy (which
//! identities count, which paths are open) and its `metav1.Status` answers.

mod request_info;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ferrocrane_core::server::delegated_auth::{
    Authorizer, CacheConfig, Decision, ReviewApi, ReviewError, TokenReviewer, request_bearer_token,
    with_authenticated_group,
};
use ferrocrane_core::server::{FrontProxyConfig, PeerCertificates, UserInfo, front_proxy_identity};
use http::HeaderMap;

pub use request_info::{RequestInfo, path_always_allowed};

use crate::status::Status;

/// Paths served without authentication or authorization (upstream's
/// `--authorization-always-allow-paths` default).
pub const DEFAULT_ALWAYS_ALLOW_PATHS: &[&str] = &["/healthz", "/readyz", "/livez"];

/// Groups whose members skip authorization (upstream's default).
pub const ALWAYS_ALLOW_GROUPS: &[&str] = &["system:masters"];

/// Bound on each review cache, so a flood of distinct tokens or requests stays small.
const MAX_CACHED: usize = 10_000;

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

/// Authentication and authorization settings and state.
pub struct Auth {
    /// `None` when no requestheader CA is configured: no caller is trusted by certificate.
    pub front_proxy: Option<FrontProxyConfig>,
    pub always_allow_paths: Vec<String>,
    tokens: TokenReviewer,
    authorizer: Authorizer,
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
                "Requests by authentication/authorization outcome: allowed, always_allowed, unauthenticated, forbidden, throttled, error.",
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
        reviews: Arc<dyn ReviewApi>,
        cache_ttl: Duration,
        metrics: Option<AuthMetrics>,
    ) -> Self {
        // Upstream's `--authentication-token-webhook-cache-ttl` is used for both caches and for
        // accepted and refused answers alike (the delegating authorizer's defaults are equal).
        let cache = CacheConfig::uniform(cache_ttl, MAX_CACHED);
        Auth {
            front_proxy,
            always_allow_paths,
            tokens: TokenReviewer::new(reviews.clone(), cache),
            authorizer: Authorizer::new(reviews, cache),
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
    ) -> Result<Option<UserInfo>, ReviewError> {
        Ok(self
            .authenticate_raw(peer, headers)
            .await?
            .map(with_authenticated_group))
    }

    async fn authenticate_raw(
        &self,
        peer: Option<&PeerCertificates>,
        headers: &HeaderMap,
    ) -> Result<Option<UserInfo>, ReviewError> {
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
        match request_bearer_token(headers) {
            Some(token) => self.tokens.review(token).await,
            None => Ok(None),
        }
    }

    /// Whether `user` may do `info`.
    pub async fn authorize(
        &self,
        user: &UserInfo,
        info: &RequestInfo,
    ) -> Result<Decision, ReviewError> {
        if user
            .groups
            .iter()
            .any(|g| ALWAYS_ALLOW_GROUPS.contains(&g.as_str()))
        {
            return Ok(Decision::Allow);
        }
        self.authorizer.authorize(user, &info.attributes()).await
    }
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
        Err(ReviewError::Throttled) => {
            auth.count("throttled");
            let mut refusal = Status::too_many_requests("too many token reviews in flight; retry")
                .into_response();
            refusal.headers_mut().insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from_static("1"),
            );
            return refusal;
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
            Status::internal(e.to_string()).into_response()
        }
    }
}

#[cfg(test)]
mod tests;
