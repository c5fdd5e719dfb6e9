//! Who made a request, however it was authenticated.

use std::collections::BTreeMap;

/// An authenticated caller, as `SubjectAccessReview` wants it: from the front proxy's
/// `X-Remote-*` headers or from a `TokenReview`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    /// Empty when the authenticator does not know it (the front proxy does not send one).
    pub uid: String,
    pub groups: Vec<String>,
    /// Keys lower-cased and percent-decoded, as Kubernetes does.
    pub extra: BTreeMap<String, Vec<String>>,
}

const AUTHENTICATED: &str = "system:authenticated";
const UNAUTHENTICATED: &str = "system:unauthenticated";

/// Adds `system:authenticated` unless the user already has it (or `system:unauthenticated`),
/// as the API server's authenticated-group adder does: the default RBAC that lets callers read
/// discovery and `/openapi` (`system:discovery`) is bound to that group.
pub fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    if !user
        .groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        user.groups.push(AUTHENTICATED.to_owned());
    }
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_groups(groups: &[&str]) -> Vec<String> {
        let user = UserInfo {
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..UserInfo::default()
        };
        with_authenticated_group(user).groups
    }

    #[test]
    fn authenticated_group_is_added_once() {
        assert_eq!(with_groups(&[]), vec![AUTHENTICATED]);
        assert_eq!(with_groups(&["devs"]), vec!["devs", AUTHENTICATED]);
        assert_eq!(with_groups(&[AUTHENTICATED]), vec![AUTHENTICATED]);
        assert_eq!(with_groups(&[UNAUTHENTICATED]), vec![UNAUTHENTICATED]);
    }
}
