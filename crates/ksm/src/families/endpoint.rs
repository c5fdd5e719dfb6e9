//! `kube_endpoint_*` (core/v1 Endpoints).

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::Endpoints;

use super::util::{annotations_family, created, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

pub fn families() -> ResourceFamilies<Endpoints> {
    ResourceFamilies {
        resource: "endpoints",
        identity_keys: &["namespace", "endpoint"],
        identity: |e| {
            vec![
                e.metadata.namespace.clone().unwrap_or_default(),
                e.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_endpoint_info",
                help: "Information about endpoint.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |_, _| vec![bare(1.0)],
            },
            FamilySpec {
                name: "kube_endpoint_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |e, _| created(&e.metadata),
            },
            FamilySpec {
                name: "kube_endpoint_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |e, ctx| annotations_family(&e.metadata, ctx),
            },
            FamilySpec {
                name: "kube_endpoint_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |e, ctx| labels_family(&e.metadata, ctx),
            },
            FamilySpec {
                name: "kube_endpoint_address",
                help: "Information about Endpoint available and non available addresses.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |e, _| addresses(e),
            },
            FamilySpec {
                name: "kube_endpoint_ports",
                help: "Information about the Endpoint ports.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: Some("v2.14.0"),
                opt_in: false,
                generate: |e, _| {
                    e.subsets
                        .iter()
                        .flatten()
                        .flat_map(|s| s.ports.iter().flatten())
                        .map(|p| {
                            sample(
                                &["port_name", "port_protocol", "port_number"],
                                vec![
                                    p.name.clone().unwrap_or_default(),
                                    p.protocol.clone().unwrap_or_default(),
                                    p.port.to_string(),
                                ],
                                1.0,
                            )
                        })
                        .collect()
                },
            },
        ],
    }
}

/// Per subset, per port: every ready address, then every not-ready one.
fn addresses(e: &Endpoints) -> Vec<Metric> {
    const KEYS: &[&str] = &["port_protocol", "port_number", "port_name", "ip", "ready"];
    let mut out = Vec::new();
    for s in e.subsets.iter().flatten() {
        for p in s.ports.iter().flatten() {
            let protocol = p.protocol.clone().unwrap_or_default();
            let number = p.port.to_string();
            let name = p.name.clone().unwrap_or_default();
            let ready = s.addresses.iter().flatten().map(|a| (a, "true"));
            let not_ready = s.not_ready_addresses.iter().flatten().map(|a| (a, "false"));
            for (a, r) in ready.chain(not_ready) {
                out.push(sample(
                    KEYS,
                    vec![
                        protocol.clone(),
                        number.clone(),
                        name.clone(),
                        a.ip.clone(),
                        r.to_string(),
                    ],
                    1.0,
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn endpoints(v: serde_json::Value) -> Endpoints {
        serde_json::from_value(v).expect("valid endpoints")
    }

    #[test]
    fn golden_multi_subset() {
        let e = endpoints(serde_json::json!({
            "metadata": {
                "name": "test-endpoint", "namespace": "default",
                "creationTimestamp": "2017-07-14T02:40:00Z", "labels": { "app": "foobar" }
            },
            "subsets": [
                {
                    "addresses": [{ "ip": "127.0.0.1" }, { "ip": "10.0.0.1" }],
                    "notReadyAddresses": [{ "ip": "10.0.0.10" }],
                    "ports": [{ "port": 8080, "name": "http", "protocol": "TCP" }, { "port": 8081, "name": "app", "protocol": "TCP" }]
                },
                {
                    "notReadyAddresses": [{ "ip": "192.168.1.3" }],
                    "ports": [{ "port": 1234, "name": "syslog", "protocol": "UDP" }]
                },
                { "addresses": [{ "ip": "10.9.9.9" }] }
            ]
        }));
        let want = r#"# HELP kube_endpoint_info [STABLE] Information about endpoint.
# TYPE kube_endpoint_info gauge
kube_endpoint_info{namespace="default",endpoint="test-endpoint"} 1
# HELP kube_endpoint_created [STABLE] Unix creation timestamp
# TYPE kube_endpoint_created gauge
kube_endpoint_created{namespace="default",endpoint="test-endpoint"} 1.5e+09
# HELP kube_endpoint_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_endpoint_annotations gauge
# HELP kube_endpoint_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_endpoint_labels gauge
kube_endpoint_labels{namespace="default",endpoint="test-endpoint",label_app="foobar"} 1
# HELP kube_endpoint_address [STABLE] Information about Endpoint available and non available addresses.
# TYPE kube_endpoint_address gauge
kube_endpoint_address{namespace="default",endpoint="test-endpoint",port_protocol="TCP",port_number="8080",port_name="http",ip="127.0.0.1",ready="true"} 1
kube_endpoint_address{namespace="default",endpoint="test-endpoint",port_protocol="TCP",port_number="8080",port_name="http",ip="10.0.0.1",ready="true"} 1
kube_endpoint_address{namespace="default",endpoint="test-endpoint",port_protocol="TCP",port_number="8080",port_name="http",ip="10.0.0.10",ready="false"} 1
kube_endpoint_address{namespace="default",endpoint="test-endpoint",port_protocol="TCP",port_number="8081",port_name="app",ip="127.0.0.1",ready="true"} 1
kube_endpoint_address{namespace="default",endpoint="test-endpoint",port_protocol="TCP",port_number="8081",port_name="app",ip="10.0.0.1",ready="true"} 1
kube_endpoint_address{namespace="default",endpoint="test-endpoint",port_protocol="TCP",port_number="8081",port_name="app",ip="10.0.0.10",ready="false"} 1
kube_endpoint_address{namespace="default",endpoint="test-endpoint",port_protocol="UDP",port_number="1234",port_name="syslog",ip="192.168.1.3",ready="false"} 1
# HELP kube_endpoint_ports [STABLE] (Deprecated since v2.14.0) Information about the Endpoint ports.
# TYPE kube_endpoint_ports gauge
kube_endpoint_ports{namespace="default",endpoint="test-endpoint",port_name="http",port_protocol="TCP",port_number="8080"} 1
kube_endpoint_ports{namespace="default",endpoint="test-endpoint",port_name="app",port_protocol="TCP",port_number="8081"} 1
kube_endpoint_ports{namespace="default",endpoint="test-endpoint",port_name="syslog",port_protocol="UDP",port_number="1234"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::None,
        };
        assert_eq!(families().render_document(&e, &ctx), want);
    }

    #[test]
    fn golden_unnamed_port_and_no_subsets() {
        let e = endpoints(serde_json::json!({
            "metadata": { "name": "single-port-endpoint", "namespace": "default" },
            "subsets": [{ "addresses": [{ "ip": "127.0.0.1" }], "ports": [{ "port": 8080, "protocol": "TCP" }] }]
        }));
        let doc = families().render_document(&e, &FamilyContext::default());
        assert!(doc.contains(
            "kube_endpoint_address{namespace=\"default\",endpoint=\"single-port-endpoint\",port_protocol=\"TCP\",port_number=\"8080\",port_name=\"\",ip=\"127.0.0.1\",ready=\"true\"} 1\n"
        ), "{doc}");
        assert!(doc.contains(
            "kube_endpoint_ports{namespace=\"default\",endpoint=\"single-port-endpoint\",port_name=\"\",port_protocol=\"TCP\",port_number=\"8080\"} 1\n"
        ), "{doc}");

        let empty = endpoints(serde_json::json!({ "metadata": { "name": "e", "namespace": "n" } }));
        let doc = families().render_document(&empty, &FamilyContext::default());
        let samples: Vec<&str> = doc.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            ["kube_endpoint_info{namespace=\"n\",endpoint=\"e\"} 1"]
        );
    }
}
