//! The two questions delegated auth asks the API server.

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};

use super::user::UserInfo;

/// An authorization answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Denied, with the authorizer's reason (may be empty).
    Deny(String),
}

/// A review the API server could not answer: the caller is neither accepted nor refused.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("TokenReview: {0}")]
    TokenReview(#[source] kube::Error),
    #[error("SubjectAccessReview: {0}")]
    AccessReview(#[source] kube::Error),
    /// Too many unknown tokens are being reviewed at once (a flood of guesses): the caller
    /// should answer 429 and let the client retry; remembered tokens are not affected.
    #[error("too many token reviews in flight; try again")]
    Throttled,
    /// The spec could not be turned into its cache key (it always serializes in practice).
    #[error("{0}")]
    CacheKey(#[from] serde_json::Error),
}

/// The calls to the API server; a trait so the policy around them (caching, status codes) is
/// tested without an API server.
pub trait ReviewApi: Send + Sync {
    /// `Ok(None)`: the token is not valid.
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserInfo>, ReviewError>>;

    fn review_access<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<Decision, ReviewError>>;
}

/// [`ReviewApi`] backed by the API server; the two clients may differ
/// (`--authentication-kubeconfig`, `--authorization-kubeconfig`).
#[derive(Clone)]
pub struct KubeReviewApi {
    pub authentication: kube::Client,
    pub authorization: kube::Client,
}

impl KubeReviewApi {
    /// Both reviews through one client.
    pub fn new(client: kube::Client) -> Self {
        KubeReviewApi {
            authentication: client.clone(),
            authorization: client,
        }
    }
}

impl ReviewApi for KubeReviewApi {
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserInfo>, ReviewError>> {
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
                .map_err(ReviewError::TokenReview)?;
            Ok(out.status.and_then(authenticated_user))
        })
    }

    fn review_access<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<Decision, ReviewError>> {
        Box::pin(async move {
            let api: Api<SubjectAccessReview> = Api::all(self.authorization.clone());
            let review = SubjectAccessReview {
                spec,
                ..SubjectAccessReview::default()
            };
            let out = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(ReviewError::AccessReview)?;
            let status = out.status.unwrap_or_default();
            Ok(if status.allowed {
                Decision::Allow
            } else {
                Decision::Deny(status.reason.unwrap_or_default())
            })
        })
    }
}

/// The user of an answered `TokenReview`, `None` unless it says authenticated. An authenticated
/// answer without a user is an empty user, as Go's webhook authenticator reads it.
fn authenticated_user(
    status: k8s_openapi::api::authentication::v1::TokenReviewStatus,
) -> Option<UserInfo> {
    if status.authenticated != Some(true) {
        return None;
    }
    let user = status.user.unwrap_or_default();
    Some(UserInfo {
        username: user.username.unwrap_or_default(),
        uid: user.uid.unwrap_or_default(),
        groups: user.groups.unwrap_or_default(),
        extra: user.extra.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo as ReviewedUser};

    #[test]
    fn only_authenticated_reviews_name_a_user() {
        assert_eq!(authenticated_user(TokenReviewStatus::default()), None);
        let refused = TokenReviewStatus {
            authenticated: Some(false),
            user: Some(ReviewedUser {
                username: Some("mallory".into()),
                ..ReviewedUser::default()
            }),
            ..TokenReviewStatus::default()
        };
        assert_eq!(authenticated_user(refused), None);
        let accepted = TokenReviewStatus {
            authenticated: Some(true),
            user: Some(ReviewedUser {
                username: Some("alice".into()),
                uid: Some("u-1".into()),
                groups: Some(vec!["system:authenticated".into()]),
                extra: Some([("scopes".to_owned(), vec!["a".to_owned()])].into()),
            }),
            ..TokenReviewStatus::default()
        };
        let user = authenticated_user(accepted).unwrap();
        assert_eq!(
            (user.username.as_str(), user.uid.as_str()),
            ("alice", "u-1")
        );
        assert_eq!(user.groups, vec!["system:authenticated"]);
        assert_eq!(user.extra["scopes"], vec!["a"]);
        let without_user = TokenReviewStatus {
            authenticated: Some(true),
            ..TokenReviewStatus::default()
        };
        assert_eq!(authenticated_user(without_user), Some(UserInfo::default()));
    }
}
