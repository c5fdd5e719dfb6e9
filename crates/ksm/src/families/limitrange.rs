//! `kube_limitrange*`. Upstream walks each constraint's resources in Go map order,
//! which varies between scrapes; here they come sorted by resource name.

use std::collections::BTreeMap;

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::LimitRange;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use super::util::{created, quantity_value};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

fn limits(r: &LimitRange) -> Vec<Metric> {
    let mut ms = Vec::new();
    for item in r.spec.iter().flat_map(|s| &s.limits) {
        let constraints: [(&str, Option<&BTreeMap<String, KubeQuantity>>); 5] = [
            ("min", item.min.as_ref()),
            ("max", item.max.as_ref()),
            ("default", item.default.as_ref()),
            ("defaultRequest", item.default_request.as_ref()),
            (
                "maxLimitRequestRatio",
                item.max_limit_request_ratio.as_ref(),
            ),
        ];
        for (constraint, map) in constraints {
            for (resource, q) in map.into_iter().flatten() {
                if let Some(v) = quantity_value(q) {
                    ms.push(sample(
                        &["resource", "type", "constraint"],
                        vec![resource.clone(), item.type_.clone(), constraint.to_string()],
                        v,
                    ));
                }
            }
        }
    }
    ms
}

pub fn families() -> ResourceFamilies<LimitRange> {
    ResourceFamilies {
        resource: "limitranges",
        identity_keys: &["namespace", "limitrange"],
        identity: |r| {
            vec![
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_limitrange",
                help: "Information about limit range.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| limits(r),
            },
            FamilySpec {
                name: "kube_limitrange_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| created(&r.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    #[test]
    fn golden_quotatest() {
        let r: LimitRange = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "quotaTest", "namespace": "testNS", "creationTimestamp": "2017-07-14T02:40:00Z" },
            "spec": { "limits": [{
                "type": "Pod",
                "min": { "memory": "2100Mi" },
                "max": { "memory": "2100Mi" },
                "default": { "memory": "2100Mi", "cpu": "250m" },
                "defaultRequest": { "memory": "2100Mi" },
                "maxLimitRequestRatio": { "memory": "2100Mi" }
            }] }
        }))
        .expect("valid limitrange");
        let want = r#"# HELP kube_limitrange [STABLE] Information about limit range.
# TYPE kube_limitrange gauge
kube_limitrange{namespace="testNS",limitrange="quotaTest",resource="memory",type="Pod",constraint="min"} 2.2020096e+09
kube_limitrange{namespace="testNS",limitrange="quotaTest",resource="memory",type="Pod",constraint="max"} 2.2020096e+09
kube_limitrange{namespace="testNS",limitrange="quotaTest",resource="cpu",type="Pod",constraint="default"} 0.25
kube_limitrange{namespace="testNS",limitrange="quotaTest",resource="memory",type="Pod",constraint="default"} 2.2020096e+09
kube_limitrange{namespace="testNS",limitrange="quotaTest",resource="memory",type="Pod",constraint="defaultRequest"} 2.2020096e+09
kube_limitrange{namespace="testNS",limitrange="quotaTest",resource="memory",type="Pod",constraint="maxLimitRequestRatio"} 2.2020096e+09
# HELP kube_limitrange_created [STABLE] Unix creation timestamp
# TYPE kube_limitrange_created gauge
kube_limitrange_created{namespace="testNS",limitrange="quotaTest"} 1.5e+09
"#;
        assert_eq!(
            families().render_document(&r, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn without_spec_emits_nothing() {
        let r: LimitRange = serde_json::from_value(
            serde_json::json!({ "metadata": { "name": "empty", "namespace": "ns" } }),
        )
        .expect("valid limitrange");
        let doc = families().render_document(&r, &FamilyContext::default());
        assert_eq!(
            doc.lines().filter(|l| !l.starts_with('#')).count(),
            0,
            "{doc}"
        );
    }
}
