//! `/openapi/v2` and `/openapi/v3`: minimal but valid documents.
//!
//! kube-apiserver's aggregator downloads both from every APIService backend and merges them into
//! its own; it skips a 404 quietly but logs (and retries) a body it cannot parse. Nothing in
//! `kubectl get --raw`, `kubectl top` or the HPA reads these schemas, so the documents declare the
//! served group-versions with no definitions: valid for the aggregator, honest about what they
//! describe.

use serde_json::{Value, json};

const TITLE: &str = "metrics-adapter";

/// The Swagger 2.0 document.
pub fn v2() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": TITLE, "version": "1.0.0"},
        "paths": {},
        "definitions": {}
    })
}

/// The OpenAPI v3 discovery document: one entry per served group-version.
pub fn v3_discovery(group_versions: &[String]) -> Value {
    let paths: serde_json::Map<String, Value> = group_versions
        .iter()
        .map(|gv| {
            (
                format!("apis/{gv}"),
                json!({"serverRelativeURL": format!("/openapi/v3/apis/{gv}")}),
            )
        })
        .collect();
    json!({ "paths": paths })
}

/// The OpenAPI v3 document of one group-version.
pub fn v3_group_version() -> Value {
    json!({
        "openapi": "3.0.0",
        "info": {"title": TITLE, "version": "1.0.0"},
        "paths": {},
        "components": {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        assert_eq!(v2()["swagger"], "2.0");
        let d = v3_discovery(&["custom.metrics.k8s.io/v1beta2".to_owned()]);
        assert_eq!(
            d["paths"]["apis/custom.metrics.k8s.io/v1beta2"]["serverRelativeURL"],
            "/openapi/v3/apis/custom.metrics.k8s.io/v1beta2"
        );
        assert_eq!(v3_group_version()["openapi"], "3.0.0");
    }
}
