//! What a workload's pod template asks for, read from the object as JSON (the controller holds
//! targets of any kind as dynamic objects; `craned recommend` serializes its typed ones).

use ferrocrane_core::quantity::Quantity;
use serde_json::Value;

/// A container of the pod template with its requests, rounded up as apimachinery's
/// `MilliValue` (CPU) and `Value` (memory) round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateContainer {
    pub name: String,
    pub cpu_millis: Option<i64>,
    pub memory_bytes: Option<i64>,
}

/// `spec.template.spec.containers` of a workload (any kind with a pod template).
pub fn template_containers(obj: &Value) -> Vec<TemplateContainer> {
    let Some(cs) = obj
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    cs.iter()
        .filter_map(|c| {
            let name = c.get("name")?.as_str()?.to_string();
            let req = |r: &str| {
                c.pointer(&format!("/resources/requests/{r}"))
                    .and_then(|q| match q {
                        Value::String(s) => Quantity::parse(s).ok(),
                        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
                        _ => None,
                    })
            };
            Some(TemplateContainer {
                name,
                cpu_millis: req("cpu").map(|q| q.milli_value()),
                memory_bytes: req("memory").map(|q| q.value()),
            })
        })
        .collect()
}

/// `spec.replicas`, defaulting to 1 as the API server does.
pub fn spec_replicas(obj: &Value) -> i32 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .map(|r| i32::try_from(r.clamp(0, i64::from(i32::MAX))).unwrap_or(i32::MAX))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use serde_json::json;

    fn by_name(cs: &[TemplateContainer]) -> BTreeMap<&str, &TemplateContainer> {
        cs.iter().map(|c| (c.name.as_str(), c)).collect()
    }

    #[test]
    fn template_requests_are_read() {
        let d = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "app", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
            {"name": "side", "resources": {"requests": {"cpu": 1}}},
            {"name": "bare"},
        ]}}}});
        let cs = template_containers(&d);
        let m = by_name(&cs);
        assert_eq!(m["app"].cpu_millis, Some(250));
        assert_eq!(m["app"].memory_bytes, Some(512 * 1024 * 1024));
        assert_eq!(m["side"].cpu_millis, Some(1000));
        assert_eq!(m["bare"].cpu_millis, None);
        assert_eq!(spec_replicas(&d), 3);
        assert_eq!(spec_replicas(&json!({})), 1);
        assert!(template_containers(&json!({"spec": {}})).is_empty());
    }

    #[test]
    fn requests_round_like_apimachinery() {
        let d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "0.1001", "memory": "1.5Gi"}}},
            {"name": "b"}
        ]}}}});
        assert_eq!(
            template_containers(&d),
            vec![
                TemplateContainer {
                    name: "a".into(),
                    cpu_millis: Some(101),
                    memory_bytes: Some(1_610_612_736)
                },
                TemplateContainer {
                    name: "b".into(),
                    cpu_millis: None,
                    memory_bytes: None
                },
            ]
        );
    }
}
