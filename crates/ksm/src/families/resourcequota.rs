//! `kube_resourcequota*`. Upstream walks `status.hard` and `status.used` in Go map
//! order, which varies between scrapes; here they come sorted by resource name.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::ResourceQuota;

use super::util::{annotations_family, created, labels_family, quantity_value};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

fn quota(r: &ResourceQuota) -> Vec<Metric> {
    let status = r.status.as_ref();
    let sections = [
        ("hard", status.and_then(|s| s.hard.as_ref())),
        ("used", status.and_then(|s| s.used.as_ref())),
    ];
    let mut ms = Vec::new();
    for (kind, map) in sections {
        for (resource, q) in map.into_iter().flatten() {
            if let Some(v) = quantity_value(q) {
                ms.push(sample(
                    &["resource", "type"],
                    vec![resource.clone(), kind.to_string()],
                    v,
                ));
            }
        }
    }
    ms
}

pub fn families() -> ResourceFamilies<ResourceQuota> {
    ResourceFamilies {
        resource: "resourcequotas",
        identity_keys: &["namespace", "resourcequota"],
        identity: |r| {
            vec![
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_resourcequota_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| created(&r.metadata),
            },
            FamilySpec {
                name: "kube_resourcequota",
                help: "Information about resource quota.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| quota(r),
            },
            FamilySpec {
                name: "kube_resourcequota_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| annotations_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_resourcequota_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| labels_family(&r.metadata, ctx),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    #[test]
    fn golden_quota() {
        let r: ResourceQuota = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "quotaTest", "namespace": "testNS", "creationTimestamp": "2017-07-14T02:40:00Z",
                "labels": { "hello": "world" }
            },
            "status": {
                "hard": { "cpu": "4.3", "memory": "2.1G", "storage": "10G", "pods": "9", "requests.cpu": "8m" },
                "used": { "cpu": "2.1", "memory": "500M", "pods": "2", "requests.cpu": "1" }
            }
        }))
        .expect("valid resourcequota");
        let want = r#"# HELP kube_resourcequota_created [STABLE] Unix creation timestamp
# TYPE kube_resourcequota_created gauge
kube_resourcequota_created{namespace="testNS",resourcequota="quotaTest"} 1.5e+09
# HELP kube_resourcequota [STABLE] Information about resource quota.
# TYPE kube_resourcequota gauge
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="cpu",type="hard"} 4.3
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="memory",type="hard"} 2.1e+09
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="pods",type="hard"} 9
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="requests.cpu",type="hard"} 0.008
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="storage",type="hard"} 1e+10
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="cpu",type="used"} 2.1
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="memory",type="used"} 5e+08
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="pods",type="used"} 2
kube_resourcequota{namespace="testNS",resourcequota="quotaTest",resource="requests.cpu",type="used"} 1
# HELP kube_resourcequota_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_resourcequota_annotations gauge
# HELP kube_resourcequota_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_resourcequota_labels gauge
kube_resourcequota_labels{namespace="testNS",resourcequota="quotaTest",label_hello="world"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["hello".into()]),
            annotations: KeyAllowlist::None,
        };
        assert_eq!(families().render_document(&r, &ctx), want);
    }

    #[test]
    fn without_status_emits_only_created() {
        let r: ResourceQuota = serde_json::from_value(
            serde_json::json!({ "metadata": { "name": "q", "namespace": "ns" } }),
        )
        .expect("valid resourcequota");
        let doc = families().render_document(&r, &FamilyContext::default());
        assert_eq!(
            doc.lines().filter(|l| !l.starts_with('#')).count(),
            0,
            "{doc}"
        );
    }
}
