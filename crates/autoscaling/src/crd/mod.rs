//! The autoscaling CustomResourceDefinitions, wire-compatible with gocrane/api v0.11.

pub mod autoscaling;
pub mod prediction;

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// What a CRD declares, for tests that compare it with Crane's.
pub mod inspect {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    /// The first version's printer columns as [name, type, JSONPath].
    pub fn columns(crd: &CustomResourceDefinition) -> Vec<[String; 3]> {
        crd.spec
            .versions
            .first()
            .and_then(|v| v.additional_printer_columns.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|c| [c.name, c.type_, c.json_path])
            .collect()
    }

    /// The first version's OpenAPI schema as JSON (`null` without one).
    pub fn schema(crd: &CustomResourceDefinition) -> serde_json::Value {
        crd.spec
            .versions
            .first()
            .and_then(|v| v.schema.as_ref())
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_default()
    }
}
