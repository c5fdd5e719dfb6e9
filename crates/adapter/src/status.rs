//! `metav1.Status` error answers, worded as the Go API machinery words them: clients (kubectl,
//! the HPA controller's events) show the message verbatim.

use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde::Serialize;

/// A `Status` object with its HTTP code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub kind: &'static str,
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub metadata: EmptyMeta,
    pub status: &'static str,
    pub message: String,
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<StatusDetails>>,
    pub code: u16,
}

/// `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EmptyMeta {}

/// `metav1.StatusDetails` (only the fields these errors set).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StatusDetails {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
}

/// `metav1.StatusCause` (message only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusCause {
    pub message: String,
}

impl Status {
    fn failure(code: StatusCode, reason: &'static str, message: String) -> Self {
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: EmptyMeta {},
            status: "Failure",
            message,
            reason,
            details: None,
            code: code.as_u16(),
        }
    }

    /// `NewMetricNotFoundError`: `the server could not find the metric M for R`.
    pub fn metric_not_found(group_resource: &str, metric: &str) -> Self {
        Self::failure(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("the server could not find the metric {metric} for {group_resource}"),
        )
    }

    /// `NewMetricNotFoundForError`: `... for R NAME`.
    pub fn metric_not_found_for(group_resource: &str, metric: &str, name: &str) -> Self {
        Self::failure(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("the server could not find the metric {metric} for {group_resource} {name}"),
        )
    }

    /// A plain 404 for a path no API serves (`404 page not found` in Go is text; a Status is
    /// what clients of an API group expect).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::failure(StatusCode::NOT_FOUND, "NotFound", message.into())
    }

    /// What Go's API server answers for a path under `/apis` that no API serves:
    /// `NewNotFound` of nothing, with its empty `details`.
    pub fn route_not_found() -> Self {
        let mut s = Self::not_found("the server could not find the requested resource");
        s.details = Some(Box::default());
        s
    }

    /// `NewBadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::failure(StatusCode::BAD_REQUEST, "BadRequest", message.into())
    }

    /// `NewInternalError(err)`: the message is prefixed and the error repeated as a cause.
    pub fn internal(error: impl Into<String>) -> Self {
        let error = error.into();
        let mut s = Self::failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            format!("Internal error occurred: {error}"),
        );
        s.details = Some(Box::new(StatusDetails {
            causes: vec![StatusCause { message: error }],
            ..StatusDetails::default()
        }));
        s
    }

    /// `responsewriters.Unauthorized`.
    pub fn unauthorized() -> Self {
        Self::failure(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "Unauthorized".to_owned(),
        )
    }

    /// `NewTooManyRequests`: the caller should retry after `Retry-After` seconds.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self::failure(
            StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequests",
            message.into(),
        )
    }

    /// `NewServiceUnavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            message.into(),
        )
    }

    /// `NewForbidden(group-resource, name, reason)` as `responsewriters.Forbidden` builds it.
    pub fn forbidden(group: &str, resource: &str, name: &str, message: String) -> Self {
        let gr = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        let message = if gr.is_empty() {
            format!("forbidden: {message}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {message}")
        } else {
            format!("{gr} {name:?} is forbidden: {message}")
        };
        let mut s = Self::failure(StatusCode::FORBIDDEN, "Forbidden", message);
        s.details = Some(Box::new(StatusDetails {
            name: name.to_owned(),
            group: group.to_owned(),
            kind: resource.to_owned(),
            causes: Vec::new(),
        }));
        s
    }

    /// The HTTP status code.
    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Status {
    fn into_response(self) -> Response {
        json_response(self.status_code(), &self)
    }
}

/// A JSON body with the content type the API machinery sends.
pub fn json_response<T: Serialize>(code: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (code, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding response: {e}"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_upstream_json() {
        let s = Status::metric_not_found("pods", "http_requests");
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "the server could not find the metric http_requests for pods",
                "reason": "NotFound", "code": 404
            })
        );
        assert_eq!(
            Status::metric_not_found_for("deployments.apps", "m", "web").message,
            "the server could not find the metric m for deployments.apps web"
        );
    }

    #[test]
    fn internal_and_forbidden_wording() {
        let s = serde_json::to_value(Status::internal("unable to fetch metrics")).unwrap();
        assert_eq!(
            s["message"],
            "Internal error occurred: unable to fetch metrics"
        );
        assert_eq!(
            s["details"]["causes"][0]["message"],
            "unable to fetch metrics"
        );
        assert_eq!(s["code"], 500);

        let f = Status::forbidden(
            "custom.metrics.k8s.io",
            "pods",
            "*",
            "User \"bob\" cannot get resource \"pods/m\"".into(),
        );
        assert_eq!(
            f.message,
            "pods.custom.metrics.k8s.io \"*\" is forbidden: User \"bob\" cannot get resource \"pods/m\""
        );
        assert_eq!(f.code, 403);
        assert_eq!(
            Status::forbidden("", "", "", "User \"x\" cannot get path \"/metrics\"".into()).message,
            "forbidden: User \"x\" cannot get path \"/metrics\""
        );
    }
}
