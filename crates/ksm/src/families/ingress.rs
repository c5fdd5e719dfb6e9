//! `kube_ingress_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::networking::v1::Ingress;

use super::util::{annotations_family, created, labels_family, resource_version};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<Ingress> {
    ResourceFamilies {
        resource: "ingresses",
        identity_keys: &["namespace", "ingress"],
        identity: |i| {
            vec![
                i.metadata.namespace.clone().unwrap_or_default(),
                i.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_ingress_info",
                help: "Information about ingress.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |i, _| vec![sample(&["ingressclass"], vec![ingress_class(i)], 1.0)],
            },
            FamilySpec {
                name: "kube_ingress_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |i, ctx| annotations_family(&i.metadata, ctx),
            },
            FamilySpec {
                name: "kube_ingress_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |i, ctx| labels_family(&i.metadata, ctx),
            },
            FamilySpec {
                name: "kube_ingress_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |i, _| created(&i.metadata),
            },
            FamilySpec {
                name: "kube_ingress_metadata_resource_version",
                help: "Resource version representing a specific version of ingress.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |i, _| resource_version(&i.metadata),
            },
            FamilySpec {
                name: "kube_ingress_path",
                help: "Ingress host, paths and backend service information.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |i, _| paths(i),
            },
            FamilySpec {
                name: "kube_ingress_tls",
                help: "Ingress TLS host and secret information.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |i, _| {
                    let tls = i.spec.as_ref().and_then(|s| s.tls.as_ref());
                    tls.into_iter()
                        .flatten()
                        .flat_map(|t| {
                            let secret = t.secret_name.clone().unwrap_or_default();
                            t.hosts.iter().flatten().map(move |host| {
                                sample(
                                    &["tls_host", "secret"],
                                    vec![host.clone(), secret.clone()],
                                    1.0,
                                )
                            })
                        })
                        .collect()
                },
            },
        ],
    }
}

/// `spec.ingressClassName`, overridden by the legacy `kubernetes.io/ingress.class`
/// annotation, else `_default`.
fn ingress_class(i: &Ingress) -> String {
    if let Some(class) = i
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/ingress.class"))
    {
        return class.clone();
    }
    i.spec
        .as_ref()
        .and_then(|s| s.ingress_class_name.clone())
        .unwrap_or_else(|| "_default".to_string())
}

/// One sample per HTTP path: service backends carry name and port, resource backends
/// their group, kind and name. A path with neither backend (rejected by the API
/// server; upstream would dereference nil) is skipped.
fn paths(i: &Ingress) -> Vec<Metric> {
    let mut out = Vec::new();
    let rules = i.spec.as_ref().and_then(|s| s.rules.as_ref());
    for rule in rules.into_iter().flatten() {
        let Some(http) = rule.http.as_ref() else {
            continue;
        };
        let host = rule.host.clone().unwrap_or_default();
        for path in &http.paths {
            let p = path.path.clone().unwrap_or_default();
            if let Some(svc) = path.backend.service.as_ref() {
                let port = svc.port.as_ref().and_then(|p| p.number).unwrap_or(0);
                out.push(sample(
                    &["host", "path", "path_type", "service_name", "service_port"],
                    vec![
                        host.clone(),
                        p,
                        path.path_type.clone(),
                        svc.name.clone(),
                        port.to_string(),
                    ],
                    1.0,
                ));
            } else if let Some(res) = path.backend.resource.as_ref() {
                out.push(sample(
                    &[
                        "host",
                        "path",
                        "path_type",
                        "resource_api_group",
                        "resource_kind",
                        "resource_name",
                    ],
                    vec![
                        host.clone(),
                        p,
                        path.path_type.clone(),
                        res.api_group.clone().unwrap_or_default(),
                        res.kind.clone(),
                        res.name.clone(),
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

    fn ingress(v: serde_json::Value) -> Ingress {
        serde_json::from_value(v).expect("valid ingress")
    }

    const HEADERS: [&str; 7] = [
        "# HELP kube_ingress_info [STABLE] Information about ingress.\n# TYPE kube_ingress_info gauge\n",
        "# HELP kube_ingress_annotations Kubernetes annotations converted to Prometheus labels.\n# TYPE kube_ingress_annotations gauge\n",
        "# HELP kube_ingress_labels [STABLE] Kubernetes labels converted to Prometheus labels.\n# TYPE kube_ingress_labels gauge\n",
        "# HELP kube_ingress_created [STABLE] Unix creation timestamp\n# TYPE kube_ingress_created gauge\n",
        "# HELP kube_ingress_metadata_resource_version Resource version representing a specific version of ingress.\n# TYPE kube_ingress_metadata_resource_version gauge\n",
        "# HELP kube_ingress_path [STABLE] Ingress host, paths and backend service information.\n# TYPE kube_ingress_path gauge\n",
        "# HELP kube_ingress_tls [STABLE] Ingress TLS host and secret information.\n# TYPE kube_ingress_tls gauge\n",
    ];

    fn doc(samples: [&str; 7]) -> String {
        HEADERS
            .iter()
            .zip(samples)
            .map(|(h, s)| format!("{h}{s}"))
            .collect()
    }

    #[test]
    fn golden_allowlisted_annotation_default_class() {
        let i = ingress(serde_json::json!({
            "metadata": {
                "name": "ingress1", "namespace": "ns1", "resourceVersion": "000000",
                "annotations": { "app": "mysql-server", "app.k8s.io/owner": "@foo" }
            }
        }));
        let ctx = FamilyContext {
            annotations: KeyAllowlist::Keys(vec!["app.k8s.io/owner".into()]),
            ..Default::default()
        };
        let want = doc([
            "kube_ingress_info{namespace=\"ns1\",ingress=\"ingress1\",ingressclass=\"_default\"} 1\n",
            "kube_ingress_annotations{namespace=\"ns1\",ingress=\"ingress1\",annotation_app_k8s_io_owner=\"@foo\"} 1\n",
            "",
            "",
            "kube_ingress_metadata_resource_version{namespace=\"ns1\",ingress=\"ingress1\"} 0\n",
            "",
            "",
        ]);
        assert_eq!(families().render_document(&i, &ctx), want);
    }

    #[test]
    fn golden_paths_service_and_resource_backends() {
        let i = ingress(serde_json::json!({
            "metadata": {
                "name": "ingress4", "namespace": "ns4", "resourceVersion": "abcdef",
                "creationTimestamp": "2017-08-01T06:30:18Z", "labels": { "test-4": "test-4" }
            },
            "spec": {
                "rules": [
                    { "host": "somehost", "http": { "paths": [
                        { "path": "/somepath", "pathType": "Exact",
                          "backend": { "service": { "name": "someservice", "port": { "number": 1234 } } } },
                        { "path": "/somepath2",
                          "backend": { "resource": { "kind": "somekind", "name": "somename" } } },
                        { "path": "/named", "pathType": "Prefix",
                          "backend": { "service": { "name": "named", "port": { "name": "http" } } } }
                    ] } },
                    { "host": "somehost2" }
                ]
            }
        }));
        let id = "namespace=\"ns4\",ingress=\"ingress4\"";
        let paths = format!(
            "kube_ingress_path{{{id},host=\"somehost\",path=\"/somepath\",path_type=\"Exact\",service_name=\"someservice\",service_port=\"1234\"}} 1\n\
             kube_ingress_path{{{id},host=\"somehost\",path=\"/somepath2\",path_type=\"\",resource_api_group=\"\",resource_kind=\"somekind\",resource_name=\"somename\"}} 1\n\
             kube_ingress_path{{{id},host=\"somehost\",path=\"/named\",path_type=\"Prefix\",service_name=\"named\",service_port=\"0\"}} 1\n"
        );
        let want = doc([
            "kube_ingress_info{namespace=\"ns4\",ingress=\"ingress4\",ingressclass=\"_default\"} 1\n",
            "",
            "",
            "kube_ingress_created{namespace=\"ns4\",ingress=\"ingress4\"} 1.501569018e+09\n",
            "",
            &paths,
            "",
        ]);
        assert_eq!(
            families().render_document(&i, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_tls_and_class_name() {
        let i = ingress(serde_json::json!({
            "metadata": {
                "name": "ingress5", "namespace": "ns5", "resourceVersion": "123456",
                "creationTimestamp": "2017-08-01T06:30:18Z"
            },
            "spec": {
                "ingressClassName": "test",
                "tls": [ { "hosts": ["somehost1", "somehost2"], "secretName": "somesecret" }, { "secretName": "nohosts" } ]
            }
        }));
        let want = doc([
            "kube_ingress_info{namespace=\"ns5\",ingress=\"ingress5\",ingressclass=\"test\"} 1\n",
            "",
            "",
            "kube_ingress_created{namespace=\"ns5\",ingress=\"ingress5\"} 1.501569018e+09\n",
            "kube_ingress_metadata_resource_version{namespace=\"ns5\",ingress=\"ingress5\"} 123456\n",
            "",
            "kube_ingress_tls{namespace=\"ns5\",ingress=\"ingress5\",tls_host=\"somehost1\",secret=\"somesecret\"} 1\n\
             kube_ingress_tls{namespace=\"ns5\",ingress=\"ingress5\",tls_host=\"somehost2\",secret=\"somesecret\"} 1\n",
        ]);
        assert_eq!(
            families().render_document(&i, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn annotation_class_overrides_spec_class() {
        let i = ingress(serde_json::json!({
            "metadata": { "name": "ingress7", "namespace": "ns7", "annotations": { "kubernetes.io/ingress.class": "legacy" } },
            "spec": { "ingressClassName": "modern" }
        }));
        let doc = families().render_document(&i, &FamilyContext::default());
        assert!(doc.contains("kube_ingress_info{namespace=\"ns7\",ingress=\"ingress7\",ingressclass=\"legacy\"} 1\n"), "{doc}");
    }
}
