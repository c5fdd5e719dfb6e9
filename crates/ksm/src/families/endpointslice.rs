//! `kube_endpointslice_*` (discovery.k8s.io/v1 EndpointSlice).

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::util::{annotations_family, created, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<EndpointSlice> {
    ResourceFamilies {
        resource: "endpointslices",
        identity_keys: &["endpointslice", "namespace"],
        identity: |s| {
            vec![
                s.metadata.name.clone().unwrap_or_default(),
                s.metadata.namespace.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_endpointslice_info",
                help: "Information about endpointslice.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| vec![sample(&["addresstype"], vec![s.address_type.clone()], 1.0)],
            },
            FamilySpec {
                name: "kube_endpointslice_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| created(&s.metadata),
            },
            FamilySpec {
                name: "kube_endpointslice_endpoints_hints",
                help: "Topology routing hints attached to endpoints",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| hints(s),
            },
            FamilySpec {
                name: "kube_endpointslice_endpoints",
                help: "Endpoints attached to the endpointslice.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| endpoints(s),
            },
            FamilySpec {
                name: "kube_endpointslice_ports",
                help: "Ports attached to the endpointslice.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    s.ports
                        .iter()
                        .flatten()
                        .map(|p| {
                            sample(
                                &["port_name", "port_protocol", "port_number"],
                                vec![
                                    p.name.clone().unwrap_or_default(),
                                    p.protocol.clone().unwrap_or_default(),
                                    p.port.map(|n| n.to_string()).unwrap_or_default(),
                                ],
                                1.0,
                            )
                        })
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_endpointslice_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| annotations_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_endpointslice_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| labels_family(&s.metadata, ctx),
            },
        ],
    }
}

/// One sample per zone hint, labelled with the endpoint's first address; endpoints
/// without zone hints or without addresses are skipped.
fn hints(s: &EndpointSlice) -> Vec<Metric> {
    let mut out = Vec::new();
    for ep in s.endpoints.iter().flatten() {
        let Some(zones) = ep.hints.as_ref().and_then(|h| h.for_zones.as_ref()) else {
            continue;
        };
        let Some(address) = ep.addresses.first() else {
            continue;
        };
        for zone in zones {
            out.push(sample(
                &["address", "for_zone"],
                vec![address.clone(), zone.name.clone()],
                1.0,
            ));
        }
    }
    out
}

/// One sample per address of each endpoint; unset conditions are empty labels.
fn endpoints(s: &EndpointSlice) -> Vec<Metric> {
    const KEYS: &[&str] = &[
        "ready",
        "serving",
        "hostname",
        "terminating",
        "targetref_kind",
        "targetref_name",
        "targetref_namespace",
        "endpoint_nodename",
        "endpoint_zone",
        "address",
    ];
    let flag = |b: Option<bool>| b.map(|b| b.to_string()).unwrap_or_default();
    let mut out = Vec::new();
    for ep in s.endpoints.iter().flatten() {
        let cond = ep.conditions.as_ref();
        let target = ep.target_ref.as_ref();
        let target_field =
            |f: fn(&k8s_openapi::api::core::v1::ObjectReference) -> &Option<String>| {
                target.and_then(|t| f(t).clone()).unwrap_or_default()
            };
        let common = [
            flag(cond.and_then(|c| c.ready)),
            flag(cond.and_then(|c| c.serving)),
            ep.hostname.clone().unwrap_or_default(),
            flag(cond.and_then(|c| c.terminating)),
            target_field(|t| &t.kind),
            target_field(|t| &t.name),
            target_field(|t| &t.namespace),
            ep.node_name.clone().unwrap_or_default(),
            ep.zone.clone().unwrap_or_default(),
        ];
        for address in &ep.addresses {
            let mut values = common.to_vec();
            values.push(address.clone());
            out.push(sample(KEYS, values, 1.0));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn slice(v: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(v).expect("valid endpointslice")
    }

    #[test]
    fn golden_full() {
        let s = slice(serde_json::json!({
            "metadata": {
                "name": "test_endpointslice-endpoints", "namespace": "test",
                "creationTimestamp": "2017-08-01T06:30:18Z",
                "labels": { "kubernetes.io/service-name": "web" }
            },
            "addressType": "IPv4",
            "endpoints": [
                {
                    "addresses": ["10.0.0.1", "192.168.1.10"],
                    "conditions": { "ready": true, "serving": true, "terminating": false },
                    "hostname": "host", "nodeName": "node", "zone": "west",
                    "targetRef": { "kind": "Pod", "name": "web-0", "namespace": "test" },
                    "hints": { "forZones": [{ "name": "west" }, { "name": "east" }] }
                },
                { "addresses": ["10.0.0.2"], "hints": { "forZones": [] } },
                { "addresses": [], "hints": { "forZones": [{ "name": "north" }] } }
            ],
            "ports": [{ "name": "http", "port": 80, "protocol": "TCP" }, { "name": "metrics", "protocol": "TCP" }]
        }));
        let want = r#"# HELP kube_endpointslice_info Information about endpointslice.
# TYPE kube_endpointslice_info gauge
kube_endpointslice_info{endpointslice="test_endpointslice-endpoints",namespace="test",addresstype="IPv4"} 1
# HELP kube_endpointslice_created Unix creation timestamp
# TYPE kube_endpointslice_created gauge
kube_endpointslice_created{endpointslice="test_endpointslice-endpoints",namespace="test"} 1.501569018e+09
# HELP kube_endpointslice_endpoints_hints Topology routing hints attached to endpoints
# TYPE kube_endpointslice_endpoints_hints gauge
kube_endpointslice_endpoints_hints{endpointslice="test_endpointslice-endpoints",namespace="test",address="10.0.0.1",for_zone="west"} 1
kube_endpointslice_endpoints_hints{endpointslice="test_endpointslice-endpoints",namespace="test",address="10.0.0.1",for_zone="east"} 1
# HELP kube_endpointslice_endpoints Endpoints attached to the endpointslice.
# TYPE kube_endpointslice_endpoints gauge
kube_endpointslice_endpoints{endpointslice="test_endpointslice-endpoints",namespace="test",ready="true",serving="true",hostname="host",terminating="false",targetref_kind="Pod",targetref_name="web-0",targetref_namespace="test",endpoint_nodename="node",endpoint_zone="west",address="10.0.0.1"} 1
kube_endpointslice_endpoints{endpointslice="test_endpointslice-endpoints",namespace="test",ready="true",serving="true",hostname="host",terminating="false",targetref_kind="Pod",targetref_name="web-0",targetref_namespace="test",endpoint_nodename="node",endpoint_zone="west",address="192.168.1.10"} 1
kube_endpointslice_endpoints{endpointslice="test_endpointslice-endpoints",namespace="test",ready="",serving="",hostname="",terminating="",targetref_kind="",targetref_name="",targetref_namespace="",endpoint_nodename="",endpoint_zone="",address="10.0.0.2"} 1
# HELP kube_endpointslice_ports Ports attached to the endpointslice.
# TYPE kube_endpointslice_ports gauge
kube_endpointslice_ports{endpointslice="test_endpointslice-endpoints",namespace="test",port_name="http",port_protocol="TCP",port_number="80"} 1
kube_endpointslice_ports{endpointslice="test_endpointslice-endpoints",namespace="test",port_name="metrics",port_protocol="TCP",port_number=""} 1
# HELP kube_endpointslice_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_endpointslice_annotations gauge
# HELP kube_endpointslice_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_endpointslice_labels gauge
kube_endpointslice_labels{endpointslice="test_endpointslice-endpoints",namespace="test",label_kubernetes_io_service_name="web"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::None,
        };
        assert_eq!(families().render_document(&s, &ctx), want);
    }

    #[test]
    fn golden_minimal() {
        let s = slice(
            serde_json::json!({ "metadata": { "name": "es", "namespace": "ns" }, "addressType": "FQDN" }),
        );
        let want = r#"# HELP kube_endpointslice_info Information about endpointslice.
# TYPE kube_endpointslice_info gauge
kube_endpointslice_info{endpointslice="es",namespace="ns",addresstype="FQDN"} 1
# HELP kube_endpointslice_created Unix creation timestamp
# TYPE kube_endpointslice_created gauge
# HELP kube_endpointslice_endpoints_hints Topology routing hints attached to endpoints
# TYPE kube_endpointslice_endpoints_hints gauge
# HELP kube_endpointslice_endpoints Endpoints attached to the endpointslice.
# TYPE kube_endpointslice_endpoints gauge
# HELP kube_endpointslice_ports Ports attached to the endpointslice.
# TYPE kube_endpointslice_ports gauge
# HELP kube_endpointslice_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_endpointslice_annotations gauge
# HELP kube_endpointslice_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_endpointslice_labels gauge
"#;
        assert_eq!(
            families().render_document(&s, &FamilyContext::default()),
            want
        );
    }
}
