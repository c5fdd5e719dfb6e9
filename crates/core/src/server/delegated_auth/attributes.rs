//! What a request asks to do, and the `SubjectAccessReview` that asks whether it may.

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReviewSpec,
};

use super::user::UserInfo;

/// A request on an API resource. Empty strings are "not set" (the core group is `""`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceRequest {
    /// `get`, `list`, `watch`, `create`, ...
    pub verb: String,
    pub group: String,
    pub version: String,
    /// Empty for cluster-scoped requests.
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    /// The object's name; empty for collections.
    pub name: String,
}

/// What a request asks to do, in the two shapes Kubernetes authorizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestAttributes {
    Resource(ResourceRequest),
    /// Anything else (`/metrics`, discovery documents), authorized by path and the lower-case
    /// HTTP method.
    NonResource {
        verb: String,
        path: String,
    },
}

impl RequestAttributes {
    /// `method` on the non-resource URL `path`; the verb is the method in lower case, as
    /// Kubernetes authorizes non-resource requests.
    pub fn non_resource(method: &str, path: &str) -> Self {
        RequestAttributes::NonResource {
            verb: method.to_ascii_lowercase(),
            path: path.to_owned(),
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// The `SubjectAccessReview` spec asking whether `user` may do `attributes`. Empty fields are
/// left out, as the Go client's `omitempty` tags leave them out.
pub fn access_review_spec(
    user: &UserInfo,
    attributes: &RequestAttributes,
) -> SubjectAccessReviewSpec {
    let mut spec = SubjectAccessReviewSpec {
        user: non_empty(&user.username),
        uid: non_empty(&user.uid),
        groups: (!user.groups.is_empty()).then(|| user.groups.clone()),
        extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
        ..SubjectAccessReviewSpec::default()
    };
    match attributes {
        RequestAttributes::Resource(r) => {
            spec.resource_attributes = Some(ResourceAttributes {
                namespace: non_empty(&r.namespace),
                verb: non_empty(&r.verb),
                group: non_empty(&r.group),
                version: non_empty(&r.version),
                resource: non_empty(&r.resource),
                subresource: non_empty(&r.subresource),
                name: non_empty(&r.name),
                ..ResourceAttributes::default()
            });
        }
        RequestAttributes::NonResource { verb, path } => {
            spec.non_resource_attributes = Some(NonResourceAttributes {
                path: non_empty(path),
                verb: non_empty(verb),
            });
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_review_names_the_user_and_the_url() {
        let user = UserInfo {
            username: "system:serviceaccount:monitoring:prometheus".into(),
            uid: "u-1".into(),
            groups: vec!["system:serviceaccounts".into()],
            ..UserInfo::default()
        };
        let spec = access_review_spec(&user, &RequestAttributes::non_resource("GET", "/metrics"));
        assert_eq!(
            serde_json::to_value(spec).unwrap(),
            serde_json::json!({
                "user": "system:serviceaccount:monitoring:prometheus",
                "uid": "u-1",
                "groups": ["system:serviceaccounts"],
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            })
        );
    }

    #[test]
    fn resource_requests_carry_every_set_attribute() {
        let user = UserInfo {
            username: "u".into(),
            groups: vec!["g".into()],
            extra: [("scopes".to_owned(), vec!["a".to_owned()])].into(),
            ..UserInfo::default()
        };
        let request = ResourceRequest {
            verb: "get".into(),
            group: "custom.metrics.k8s.io".into(),
            version: "v1beta2".into(),
            namespace: "ns1".into(),
            resource: "pods".into(),
            subresource: "rps".into(),
            name: "*".into(),
        };
        let spec = access_review_spec(&user, &RequestAttributes::Resource(request));
        assert_eq!(
            serde_json::to_value(spec).unwrap(),
            serde_json::json!({
                "user": "u",
                "groups": ["g"],
                "extra": {"scopes": ["a"]},
                "resourceAttributes": {
                    "verb": "get", "group": "custom.metrics.k8s.io", "version": "v1beta2",
                    "namespace": "ns1", "resource": "pods", "subresource": "rps", "name": "*",
                },
            })
        );
    }

    #[test]
    fn unset_attributes_are_left_out() {
        let request = ResourceRequest {
            verb: "list".into(),
            version: "v1".into(),
            resource: "nodes".into(),
            ..ResourceRequest::default()
        };
        let spec = access_review_spec(&UserInfo::default(), &RequestAttributes::Resource(request));
        assert_eq!(
            serde_json::to_value(spec).unwrap(),
            serde_json::json!({
                "resourceAttributes": {"verb": "list", "version": "v1", "resource": "nodes"},
            })
        );
    }
}
