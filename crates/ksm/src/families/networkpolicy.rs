//! `kube_networkpolicy_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::networking::v1::NetworkPolicy;

use super::util::{annotations_family, go_unix, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

pub fn families() -> ResourceFamilies<NetworkPolicy> {
    ResourceFamilies {
        resource: "networkpolicies",
        identity_keys: &["namespace", "networkpolicy"],
        identity: |n| {
            vec![
                n.metadata.namespace.clone().unwrap_or_default(),
                n.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_networkpolicy_created",
                help: "Unix creation timestamp of network policy",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                // Unlike most `_created` families, upstream does not check `IsZero()`
                // here: a missing creation timestamp reports Go's zero time.
                generate: |n, _| vec![bare(go_unix(n.metadata.creation_timestamp.as_ref()))],
            },
            FamilySpec {
                name: "kube_networkpolicy_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, ctx| annotations_family(&n.metadata, ctx),
            },
            FamilySpec {
                name: "kube_networkpolicy_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, ctx| labels_family(&n.metadata, ctx),
            },
            FamilySpec {
                name: "kube_networkpolicy_spec_ingress_rules",
                help: "Number of ingress rules on the networkpolicy",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    vec![bare(
                        n.spec
                            .as_ref()
                            .and_then(|s| s.ingress.as_ref())
                            .map_or(0, Vec::len) as f64,
                    )]
                },
            },
            FamilySpec {
                name: "kube_networkpolicy_spec_egress_rules",
                help: "Number of egress rules on the networkpolicy",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    vec![bare(
                        n.spec
                            .as_ref()
                            .and_then(|s| s.egress.as_ref())
                            .map_or(0, Vec::len) as f64,
                    )]
                },
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    #[test]
    fn golden_rules_counted() {
        let n: NetworkPolicy = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "netpol1", "namespace": "ns1", "creationTimestamp": "2017-08-01T06:30:18Z",
                "labels": { "app": "db" }, "annotations": { "owner": "team-a" }
            },
            "spec": { "podSelector": {}, "ingress": [{}, {}], "egress": [{}, {}, {}] }
        }))
        .expect("valid networkpolicy");
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::All,
        };
        let want = r#"# HELP kube_networkpolicy_created Unix creation timestamp of network policy
# TYPE kube_networkpolicy_created gauge
kube_networkpolicy_created{namespace="ns1",networkpolicy="netpol1"} 1.501569018e+09
# HELP kube_networkpolicy_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_networkpolicy_annotations gauge
kube_networkpolicy_annotations{namespace="ns1",networkpolicy="netpol1",annotation_owner="team-a"} 1
# HELP kube_networkpolicy_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_networkpolicy_labels gauge
kube_networkpolicy_labels{namespace="ns1",networkpolicy="netpol1",label_app="db"} 1
# HELP kube_networkpolicy_spec_ingress_rules Number of ingress rules on the networkpolicy
# TYPE kube_networkpolicy_spec_ingress_rules gauge
kube_networkpolicy_spec_ingress_rules{namespace="ns1",networkpolicy="netpol1"} 2
# HELP kube_networkpolicy_spec_egress_rules Number of egress rules on the networkpolicy
# TYPE kube_networkpolicy_spec_egress_rules gauge
kube_networkpolicy_spec_egress_rules{namespace="ns1",networkpolicy="netpol1"} 3
"#;
        assert_eq!(families().render_document(&n, &ctx), want);
    }

    #[test]
    fn golden_empty_policy_reports_go_zero_time_and_no_rules() {
        let n: NetworkPolicy = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "bare", "namespace": "ns" }
        }))
        .expect("valid networkpolicy");
        let want = r#"# HELP kube_networkpolicy_created Unix creation timestamp of network policy
# TYPE kube_networkpolicy_created gauge
kube_networkpolicy_created{namespace="ns",networkpolicy="bare"} -6.21355968e+10
# HELP kube_networkpolicy_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_networkpolicy_annotations gauge
# HELP kube_networkpolicy_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_networkpolicy_labels gauge
# HELP kube_networkpolicy_spec_ingress_rules Number of ingress rules on the networkpolicy
# TYPE kube_networkpolicy_spec_ingress_rules gauge
kube_networkpolicy_spec_ingress_rules{namespace="ns",networkpolicy="bare"} 0
# HELP kube_networkpolicy_spec_egress_rules Number of egress rules on the networkpolicy
# TYPE kube_networkpolicy_spec_egress_rules gauge
kube_networkpolicy_spec_egress_rules{namespace="ns",networkpolicy="bare"} 0
"#;
        assert_eq!(
            families().render_document(&n, &FamilyContext::default()),
            want
        );
    }
}
