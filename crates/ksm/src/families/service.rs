//! `kube_service_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::{Service, ServiceSpec};

use super::util::{annotations_family, created, deletion_timestamp, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

fn spec_str(s: &Service, f: fn(&ServiceSpec) -> Option<&String>) -> String {
    s.spec.as_ref().and_then(f).cloned().unwrap_or_default()
}

pub fn families() -> ResourceFamilies<Service> {
    ResourceFamilies {
        resource: "services",
        identity_keys: &["namespace", "service", "uid"],
        identity: |s| {
            vec![
                s.metadata.namespace.clone().unwrap_or_default(),
                s.metadata.name.clone().unwrap_or_default(),
                s.metadata.uid.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_service_info",
                help: "Information about service.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    vec![sample(
                        &[
                            "cluster_ip",
                            "external_name",
                            "load_balancer_ip",
                            "external_traffic_policy",
                        ],
                        vec![
                            spec_str(s, |p| p.cluster_ip.as_ref()),
                            spec_str(s, |p| p.external_name.as_ref()),
                            spec_str(s, |p| p.load_balancer_ip.as_ref()),
                            spec_str(s, |p| p.external_traffic_policy.as_ref()),
                        ],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_service_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| created(&s.metadata),
            },
            FamilySpec {
                name: "kube_service_spec_type",
                help: "Type about service.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    vec![sample(
                        &["type"],
                        vec![spec_str(s, |p| p.type_.as_ref())],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_service_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| annotations_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_service_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| labels_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_service_spec_external_ip",
                help: "Service external ips. One series for each ip",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    s.spec
                        .as_ref()
                        .and_then(|p| p.external_ips.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|ip| sample(&["external_ip"], vec![ip.clone()], 1.0))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_service_status_load_balancer_ingress",
                help: "Service load balancer ingress status",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    s.status
                        .as_ref()
                        .and_then(|st| st.load_balancer.as_ref())
                        .and_then(|lb| lb.ingress.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|i| {
                            sample(
                                &["ip", "hostname"],
                                vec![
                                    i.ip.clone().unwrap_or_default(),
                                    i.hostname.clone().unwrap_or_default(),
                                ],
                                1.0,
                            )
                        })
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_service_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| deletion_timestamp(&s.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn service(v: serde_json::Value) -> Service {
        serde_json::from_value(v).expect("valid service")
    }

    #[test]
    fn golden_cluster_ip() {
        let svc = service(serde_json::json!({
            "metadata": {
                "name": "test-service1", "namespace": "default", "uid": "uid1",
                "creationTimestamp": "2017-07-14T02:40:00Z", "labels": { "app": "example1" }
            },
            "spec": { "clusterIP": "1.2.3.4", "type": "ClusterIP" }
        }));
        let want = r#"# HELP kube_service_info [STABLE] Information about service.
# TYPE kube_service_info gauge
kube_service_info{namespace="default",service="test-service1",uid="uid1",cluster_ip="1.2.3.4",external_name="",load_balancer_ip="",external_traffic_policy=""} 1
# HELP kube_service_created [STABLE] Unix creation timestamp
# TYPE kube_service_created gauge
kube_service_created{namespace="default",service="test-service1",uid="uid1"} 1.5e+09
# HELP kube_service_spec_type [STABLE] Type about service.
# TYPE kube_service_spec_type gauge
kube_service_spec_type{namespace="default",service="test-service1",uid="uid1",type="ClusterIP"} 1
# HELP kube_service_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_service_annotations gauge
# HELP kube_service_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_service_labels gauge
# HELP kube_service_spec_external_ip [STABLE] Service external ips. One series for each ip
# TYPE kube_service_spec_external_ip gauge
# HELP kube_service_status_load_balancer_ingress [STABLE] Service load balancer ingress status
# TYPE kube_service_status_load_balancer_ingress gauge
# HELP kube_service_deletion_timestamp Unix deletion timestamp
# TYPE kube_service_deletion_timestamp gauge
"#;
        assert_eq!(
            families().render_document(&svc, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_load_balancer() {
        let svc = service(serde_json::json!({
            "metadata": {
                "name": "test-service4", "namespace": "default", "uid": "uid4",
                "creationTimestamp": "2017-07-14T02:40:00Z", "deletionTimestamp": "2017-07-14T02:40:01Z",
                "labels": { "app": "example4" }
            },
            "spec": {
                "clusterIP": "1.2.3.6", "loadBalancerIP": "1.2.3.7", "type": "LoadBalancer",
                "externalTrafficPolicy": "Local", "externalIPs": ["1.2.3.7", "1.2.3.8"]
            },
            "status": { "loadBalancer": { "ingress": [
                { "ip": "1.2.3.9", "hostname": "www.example.com" },
                { "hostname": "lb.example.com" }
            ] } }
        }));
        let want = r#"# HELP kube_service_info [STABLE] Information about service.
# TYPE kube_service_info gauge
kube_service_info{namespace="default",service="test-service4",uid="uid4",cluster_ip="1.2.3.6",external_name="",load_balancer_ip="1.2.3.7",external_traffic_policy="Local"} 1
# HELP kube_service_created [STABLE] Unix creation timestamp
# TYPE kube_service_created gauge
kube_service_created{namespace="default",service="test-service4",uid="uid4"} 1.5e+09
# HELP kube_service_spec_type [STABLE] Type about service.
# TYPE kube_service_spec_type gauge
kube_service_spec_type{namespace="default",service="test-service4",uid="uid4",type="LoadBalancer"} 1
# HELP kube_service_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_service_annotations gauge
# HELP kube_service_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_service_labels gauge
kube_service_labels{namespace="default",service="test-service4",uid="uid4",label_app="example4"} 1
# HELP kube_service_spec_external_ip [STABLE] Service external ips. One series for each ip
# TYPE kube_service_spec_external_ip gauge
kube_service_spec_external_ip{namespace="default",service="test-service4",uid="uid4",external_ip="1.2.3.7"} 1
kube_service_spec_external_ip{namespace="default",service="test-service4",uid="uid4",external_ip="1.2.3.8"} 1
# HELP kube_service_status_load_balancer_ingress [STABLE] Service load balancer ingress status
# TYPE kube_service_status_load_balancer_ingress gauge
kube_service_status_load_balancer_ingress{namespace="default",service="test-service4",uid="uid4",ip="1.2.3.9",hostname="www.example.com"} 1
kube_service_status_load_balancer_ingress{namespace="default",service="test-service4",uid="uid4",ip="",hostname="lb.example.com"} 1
# HELP kube_service_deletion_timestamp Unix deletion timestamp
# TYPE kube_service_deletion_timestamp gauge
kube_service_deletion_timestamp{namespace="default",service="test-service4",uid="uid4"} 1.500000001e+09
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["app".into()]),
            annotations: KeyAllowlist::None,
        };
        assert_eq!(families().render_document(&svc, &ctx), want);
    }

    #[test]
    fn golden_no_spec() {
        let svc = service(serde_json::json!({ "metadata": { "name": "s", "namespace": "n" } }));
        let doc = families().render_document(&svc, &FamilyContext::default());
        assert!(doc.contains(
            "kube_service_info{namespace=\"n\",service=\"s\",uid=\"\",cluster_ip=\"\",external_name=\"\",load_balancer_ip=\"\",external_traffic_policy=\"\"} 1\n"
        ));
        assert!(doc.contains(
            "kube_service_spec_type{namespace=\"n\",service=\"s\",uid=\"\",type=\"\"} 1\n"
        ));
        assert_eq!(
            doc.lines().filter(|l| !l.starts_with('#')).count(),
            2,
            "{doc}"
        );
    }
}
