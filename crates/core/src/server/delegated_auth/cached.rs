//! The reviews through a cache: a scraper or the aggregator presents the same credentials over
//! and over, and the API server should not be asked each time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::attributes::{RequestAttributes, access_review_spec};
use super::review_api::{Decision, ReviewApi, ReviewError};
use super::ttl_cache::TtlCache;
use super::user::UserInfo;

/// How long answers are remembered. Accepted and refused answers have their own lifetimes (a
/// refusal is usually kept shorter, so a freshly granted permission takes effect soon); answers
/// the API server failed to give are never remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// An authenticated token, an allowed request.
    pub accepted_ttl: Duration,
    /// An unknown token, a denied request.
    pub refused_ttl: Duration,
    /// Bound on each cache's entries.
    pub max_entries: usize,
}

impl CacheConfig {
    /// One lifetime for every answer, as kube-apiserver's `--authentication-token-webhook-cache-ttl`.
    pub fn uniform(ttl: Duration, max_entries: usize) -> Self {
        CacheConfig {
            accepted_ttl: ttl,
            refused_ttl: ttl,
            max_entries,
        }
    }
}

/// TokenReviews in flight at once for tokens not in the cache. Each is an API server call a
/// client causes with any string it sends: a flood of made-up tokens must not become a flood
/// on the API server.
pub const MAX_CONCURRENT_TOKEN_REVIEWS: usize = 8;
/// How long a token waits for one of those slots before the request is throttled.
pub const MAX_TOKEN_REVIEW_WAIT: Duration = Duration::from_secs(2);

/// Who a bearer token belongs to, asked with a `TokenReview`.
pub struct TokenReviewer {
    api: Arc<dyn ReviewApi>,
    config: CacheConfig,
    cache: TtlCache<String, Option<UserInfo>>,
    in_flight: tokio::sync::Semaphore,
}

impl TokenReviewer {
    pub fn new(api: Arc<dyn ReviewApi>, config: CacheConfig) -> Self {
        TokenReviewer {
            api,
            config,
            cache: TtlCache::new(config.max_entries),
            in_flight: tokio::sync::Semaphore::new(MAX_CONCURRENT_TOKEN_REVIEWS),
        }
    }

    /// The token's user; `Ok(None)` when the API server does not know the token.
    pub async fn review(&self, token: &str) -> Result<Option<UserInfo>, ReviewError> {
        self.review_at(token, Instant::now()).await
    }

    /// [`Self::review`] at a given time, so tests drive the clock.
    pub async fn review_at(
        &self,
        token: &str,
        now: Instant,
    ) -> Result<Option<UserInfo>, ReviewError> {
        let key = token.to_owned();
        if let Some(cached) = self.cache.get(&key, now) {
            return Ok(cached);
        }
        let _slot = tokio::time::timeout(MAX_TOKEN_REVIEW_WAIT, self.in_flight.acquire())
            .await
            .map_err(|_| ReviewError::Throttled)?
            .map_err(|_| ReviewError::Throttled)?;
        // Another request may have reviewed the same token while this one waited.
        if let Some(cached) = self.cache.get(&key, now) {
            return Ok(cached);
        }
        let user = self.api.review_token(token).await?;
        let ttl = if user.is_some() {
            self.config.accepted_ttl
        } else {
            self.config.refused_ttl
        };
        self.cache.insert(key, user.clone(), ttl, now);
        Ok(user)
    }
}

/// Whether a user may do what a request asks, asked with a `SubjectAccessReview`.
pub struct Authorizer {
    api: Arc<dyn ReviewApi>,
    config: CacheConfig,
    cache: TtlCache<String, Decision>,
}

impl Authorizer {
    pub fn new(api: Arc<dyn ReviewApi>, config: CacheConfig) -> Self {
        Authorizer {
            api,
            config,
            cache: TtlCache::new(config.max_entries),
        }
    }

    /// Whether `user` may do `attributes`.
    pub async fn authorize(
        &self,
        user: &UserInfo,
        attributes: &RequestAttributes,
    ) -> Result<Decision, ReviewError> {
        self.authorize_at(user, attributes, Instant::now()).await
    }

    /// [`Self::authorize`] at a given time, so tests drive the clock.
    pub async fn authorize_at(
        &self,
        user: &UserInfo,
        attributes: &RequestAttributes,
        now: Instant,
    ) -> Result<Decision, ReviewError> {
        let spec = access_review_spec(user, attributes);
        // The spec serialises deterministically (BTreeMaps, fixed field order): a good key, and
        // one that holds the user and the request together.
        let key = serde_json::to_string(&spec)?;
        if let Some(decision) = self.cache.get(&key, now) {
            return Ok(decision);
        }
        let decision = self.api.review_access(spec).await?;
        let ttl = match decision {
            Decision::Allow => self.config.accepted_ttl,
            Decision::Deny(_) => self.config.refused_ttl,
        };
        self.cache.insert(key, decision.clone(), ttl, now);
        Ok(decision)
    }
}
