//! `kube_ingressclass_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::networking::v1::IngressClass;

use super::util::{annotations_family, created, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<IngressClass> {
    ResourceFamilies {
        resource: "ingressclasses",
        identity_keys: &["ingressclass"],
        identity: |c| vec![c.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_ingressclass_info",
                help: "Information about ingressclass.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| {
                    let controller = c
                        .spec
                        .as_ref()
                        .and_then(|s| s.controller.clone())
                        .unwrap_or_default();
                    vec![sample(&["controller"], vec![controller], 1.0)]
                },
            },
            FamilySpec {
                name: "kube_ingressclass_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| created(&c.metadata),
            },
            FamilySpec {
                name: "kube_ingressclass_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| annotations_family(&c.metadata, ctx),
            },
            FamilySpec {
                name: "kube_ingressclass_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| labels_family(&c.metadata, ctx),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn class(v: serde_json::Value) -> IngressClass {
        serde_json::from_value(v).expect("valid ingressclass")
    }

    #[test]
    fn golden_created() {
        let c = class(serde_json::json!({
            "metadata": { "name": "test_kube_ingressclass-created", "creationTimestamp": "2017-08-01T06:30:18Z" },
            "spec": { "controller": "controller" }
        }));
        let want = r#"# HELP kube_ingressclass_info Information about ingressclass.
# TYPE kube_ingressclass_info gauge
kube_ingressclass_info{ingressclass="test_kube_ingressclass-created",controller="controller"} 1
# HELP kube_ingressclass_created Unix creation timestamp
# TYPE kube_ingressclass_created gauge
kube_ingressclass_created{ingressclass="test_kube_ingressclass-created"} 1.501569018e+09
# HELP kube_ingressclass_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_ingressclass_annotations gauge
# HELP kube_ingressclass_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_ingressclass_labels gauge
"#;
        assert_eq!(
            families().render_document(&c, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_allowlisted_annotation_without_spec() {
        let c = class(serde_json::json!({
            "metadata": {
                "name": "test_ingressclass-labels",
                "annotations": { "ingressclass.kubernetes.io/is-default-class": "true" },
                "labels": { "foo": "bar" }
            }
        }));
        let ctx = FamilyContext {
            annotations: KeyAllowlist::Keys(vec![
                "ingressclass.kubernetes.io/is-default-class".into(),
            ]),
            ..Default::default()
        };
        let want = r#"# HELP kube_ingressclass_info Information about ingressclass.
# TYPE kube_ingressclass_info gauge
kube_ingressclass_info{ingressclass="test_ingressclass-labels",controller=""} 1
# HELP kube_ingressclass_created Unix creation timestamp
# TYPE kube_ingressclass_created gauge
# HELP kube_ingressclass_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_ingressclass_annotations gauge
kube_ingressclass_annotations{ingressclass="test_ingressclass-labels",annotation_ingressclass_kubernetes_io_is_default_class="true"} 1
# HELP kube_ingressclass_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_ingressclass_labels gauge
"#;
        assert_eq!(families().render_document(&c, &ctx), want);
    }
}
