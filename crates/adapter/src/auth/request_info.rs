//! What a request asks for, in the terms Kubernetes authorizes: apiserver's `RequestInfo`.

use ferrocrane_core::server::delegated_auth::{RequestAttributes, ResourceRequest};
use ferrocrane_core::server::{UrlPart, percent_decode};

/// The attributes of a request, as kube-apiserver's `RequestInfoFactory` derives them from the
/// method and path. A request under `/apis/{group}/{version}/...` with at least a resource is a
/// resource request; everything else (discovery documents, `/openapi`, `/metrics`) is a
/// non-resource request authorized by path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    /// Whether authorization is by resource attributes.
    pub is_resource_request: bool,
    /// The path as received (non-resource authorization uses it).
    pub path: String,
    /// `get`, `list`, `watch`, `create`, ... for resource requests; the lower-cased method
    /// otherwise.
    pub verb: String,
    /// API group (`custom.metrics.k8s.io`).
    pub api_group: String,
    /// API version (`v1beta1`).
    pub api_version: String,
    /// Namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// Resource (`pods`, or for external metrics the metric name).
    pub resource: String,
    /// Subresource (for custom metrics the metric name).
    pub subresource: String,
    /// Object name (`*` for every object).
    pub name: String,
    /// The path segments from the resource on (namespace prefix removed).
    pub parts: Vec<String>,
}

/// Namespace subresources, which keep `namespaces/{name}/{sub}` a request on the namespace.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

impl RequestInfo {
    /// Derives the attributes of `method path?query`.
    pub fn parse(method: &http::Method, path: &str, query: Option<&str>) -> Self {
        let mut info = RequestInfo {
            path: path.to_owned(),
            verb: method.as_str().to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let decoded: Vec<String> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .map(|p| percent_decode(p, UrlPart::PathSegment))
            .collect();
        let parts: Vec<&str> = decoded.iter().map(String::as_str).collect();
        let rest: &[&str] = match parts.as_slice() {
            ["apis", group, version, rest @ ..] if !rest.is_empty() => {
                info.api_group = (*group).to_owned();
                info.api_version = (*version).to_owned();
                rest
            }
            ["api", version, rest @ ..] if !rest.is_empty() => {
                info.api_version = (*version).to_owned();
                rest
            }
            _ => return info,
        };
        info.is_resource_request = true;
        info.verb = match *method {
            http::Method::POST => "create",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            http::Method::HEAD | http::Method::GET => "get",
            _ => info.verb.as_str(),
        }
        .to_owned();
        let mut current = rest;
        if current[0] == "namespaces" && current.len() > 1 {
            info.namespace = current[1].to_owned();
            if current.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&current[2]) {
                current = &current[2..];
            }
        }
        info.parts = current.iter().map(|s| (*s).to_owned()).collect();
        if let Some(r) = current.first() {
            info.resource = (*r).to_owned();
        }
        if let Some(n) = current.get(1) {
            info.name = (*n).to_owned();
        }
        if let Some(s) = current.get(2) {
            info.subresource = (*s).to_owned();
        }
        if info.name.is_empty() && info.verb == "get" {
            let watch = query.is_some_and(|q| {
                q.split('&')
                    .any(|kv| kv == "watch=true" || kv == "watch=1" || kv == "watch")
            });
            info.verb = if watch { "watch" } else { "list" }.to_owned();
        }
        info
    }
}

impl RequestInfo {
    /// The attributes a `SubjectAccessReview` asks about.
    pub fn attributes(&self) -> RequestAttributes {
        if !self.is_resource_request {
            return RequestAttributes::NonResource {
                verb: self.verb.clone(),
                path: self.path.clone(),
            };
        }
        RequestAttributes::Resource(ResourceRequest {
            verb: self.verb.clone(),
            group: self.api_group.clone(),
            version: self.api_version.clone(),
            namespace: self.namespace.clone(),
            resource: self.resource.clone(),
            subresource: self.subresource.clone(),
            name: self.name.clone(),
        })
    }
}

/// Whether `path` matches one of the always-allowed patterns: exact, or a prefix when the
/// pattern ends in `*` (the `--authorization-always-allow-paths` syntax).
pub fn path_always_allowed(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => p == path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn get(path: &str) -> RequestInfo {
        RequestInfo::parse(&Method::GET, path, None)
    }

    #[test]
    fn custom_metric_requests() {
        let r = get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/http_requests");
        assert!(r.is_resource_request);
        assert_eq!(
            (
                r.verb.as_str(),
                r.api_group.as_str(),
                r.api_version.as_str(),
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str(),
                r.subresource.as_str()
            ),
            (
                "get",
                "custom.metrics.k8s.io",
                "v1beta2",
                "ns1",
                "pods",
                "*",
                "http_requests"
            )
        );

        // kubectl escapes `*`; Go's URL.Path (what Kubernetes authorizes) is decoded.
        let r = get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/%2A/rps");
        assert_eq!(r.name, "*");

        let r = get("/apis/custom.metrics.k8s.io/v1beta1/nodes/n1/load");
        assert_eq!(r.namespace, "");
        assert_eq!((r.resource.as_str(), r.name.as_str()), ("nodes", "n1"));
        assert_eq!(r.subresource, "load");

        // namespaces/{ns}/metrics/{m}: authorized as resource "metrics" named m in ns.
        let r = get("/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns1/metrics/queue");
        assert_eq!(
            (
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str(),
                r.verb.as_str()
            ),
            ("ns1", "metrics", "queue", "get")
        );
    }

    #[test]
    fn external_and_resource_metric_requests_are_lists() {
        let r = get("/apis/external.metrics.k8s.io/v1beta1/namespaces/ns1/queue_depth");
        assert_eq!(
            (r.verb.as_str(), r.resource.as_str(), r.namespace.as_str()),
            ("list", "queue_depth", "ns1")
        );
        let r = get("/apis/metrics.k8s.io/v1beta1/nodes");
        assert_eq!((r.verb.as_str(), r.resource.as_str()), ("list", "nodes"));
        let r = get("/apis/metrics.k8s.io/v1beta1/nodes/n1");
        assert_eq!((r.verb.as_str(), r.name.as_str()), ("get", "n1"));
        let r = RequestInfo::parse(
            &Method::GET,
            "/apis/metrics.k8s.io/v1beta1/pods",
            Some("watch=true"),
        );
        assert_eq!(r.verb, "watch");
        let r = get("/apis/metrics.k8s.io/v1beta1/namespaces/ns1");
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.namespace.as_str()),
            ("namespaces", "ns1", "ns1")
        );
    }

    #[test]
    fn discovery_and_other_paths_are_non_resource() {
        for p in [
            "/apis",
            "/apis/custom.metrics.k8s.io",
            "/apis/custom.metrics.k8s.io/v1beta1",
            "/openapi/v2",
            "/metrics",
            "/",
        ] {
            let r = get(p);
            assert!(!r.is_resource_request, "{p}");
            assert_eq!(r.verb, "get");
            assert_eq!(r.path, p);
        }
        assert_eq!(
            RequestInfo::parse(&Method::POST, "/metrics", None).verb,
            "post"
        );
    }

    #[test]
    fn always_allowed_paths() {
        let pats = vec!["/healthz".to_owned(), "/debug/*".to_owned()];
        assert!(path_always_allowed(&pats, "/healthz"));
        assert!(!path_always_allowed(&pats, "/healthz/x"));
        assert!(path_always_allowed(&pats, "/debug/pprof"));
        assert!(!path_always_allowed(&pats, "/metrics"));
    }
}
