//! Delegated authentication and authorization: `TokenReview` and `SubjectAccessReview`, cached.
//!
//! The API server is asked who a bearer token belongs to and whether that user may do what a
//! request asks, and the answers are remembered for a while.
//!
//! This is what Kubernetes' delegating authenticator and authorizer do for aggregated API
//! servers and for controller-runtime's metrics filter; every ferrocrane service that guards an
//! endpoint with the cluster's own RBAC goes through here. The policy around it (which paths
//! are open, which status code a refusal gets, what the body says) stays with each service.
//!
//! * [`bearer`]: the token of an `Authorization: Bearer ...` header;
//! * [`attributes`]: what a request asks to do, and the `SubjectAccessReview` spec for it;
//! * [`review_api`]: the two calls to the API server, behind a trait so the policy is tested
//!   without one;
//! * [`cached`]: [`TokenReviewer`] and [`Authorizer`], the calls through a [`TtlCache`] whose
//!   lifetimes for accepted and refused answers are configured separately; failed calls are never
//!   remembered.

mod attributes;
mod bearer;
mod cached;
mod review_api;
mod ttl_cache;
mod user;

pub use attributes::{RequestAttributes, ResourceRequest, access_review_spec};
pub use bearer::{bearer_token, request_bearer_token};
pub use cached::{
    Authorizer, CacheConfig, MAX_CONCURRENT_TOKEN_REVIEWS, MAX_TOKEN_REVIEW_WAIT, TokenReviewer,
};
pub use review_api::{Decision, KubeReviewApi, ReviewApi, ReviewError};
pub use ttl_cache::TtlCache;
pub use user::{UserInfo, with_authenticated_group};

#[cfg(test)]
mod tests;
