//! `kube_mutatingwebhookconfiguration_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;

use super::util::{created, resource_version, webhook_clientconfig_service};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

pub fn families() -> ResourceFamilies<MutatingWebhookConfiguration> {
    ResourceFamilies {
        resource: "mutatingwebhookconfigurations",
        // Upstream keeps a `namespace` label although the resource is cluster-scoped.
        identity_keys: &["namespace", "mutatingwebhookconfiguration"],
        identity: |w| {
            vec![
                w.metadata.namespace.clone().unwrap_or_default(),
                w.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_mutatingwebhookconfiguration_info",
                help: "Information about the MutatingWebhookConfiguration.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |_, _| vec![bare(1.0)],
            },
            FamilySpec {
                name: "kube_mutatingwebhookconfiguration_created",
                help: "Unix creation timestamp.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |w, _| created(&w.metadata),
            },
            FamilySpec {
                name: "kube_mutatingwebhookconfiguration_metadata_resource_version",
                help: "Resource version representing a specific version of the MutatingWebhookConfiguration.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |w, _| resource_version(&w.metadata),
            },
            FamilySpec {
                name: "kube_mutatingwebhookconfiguration_webhook_clientconfig_service",
                help: "Service used by the apiserver to connect to a mutating webhook.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |w, _| {
                    webhook_clientconfig_service(
                        w.webhooks
                            .iter()
                            .flatten()
                            .map(|h| (h.name.as_str(), &h.client_config)),
                    )
                },
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn object(v: serde_json::Value) -> MutatingWebhookConfiguration {
        serde_json::from_value(v).expect("valid mutatingwebhookconfiguration")
    }

    #[test]
    fn golden_numeric_resource_version_without_creation() {
        let w = object(serde_json::json!({
            "metadata": { "name": "mutatingwebhookconfiguration1", "namespace": "ns1", "resourceVersion": "123456" }
        }));
        let want = r#"# HELP kube_mutatingwebhookconfiguration_info Information about the MutatingWebhookConfiguration.
# TYPE kube_mutatingwebhookconfiguration_info gauge
kube_mutatingwebhookconfiguration_info{namespace="ns1",mutatingwebhookconfiguration="mutatingwebhookconfiguration1"} 1
# HELP kube_mutatingwebhookconfiguration_created Unix creation timestamp.
# TYPE kube_mutatingwebhookconfiguration_created gauge
# HELP kube_mutatingwebhookconfiguration_metadata_resource_version Resource version representing a specific version of the MutatingWebhookConfiguration.
# TYPE kube_mutatingwebhookconfiguration_metadata_resource_version gauge
kube_mutatingwebhookconfiguration_metadata_resource_version{namespace="ns1",mutatingwebhookconfiguration="mutatingwebhookconfiguration1"} 123456
# HELP kube_mutatingwebhookconfiguration_webhook_clientconfig_service Service used by the apiserver to connect to a mutating webhook.
# TYPE kube_mutatingwebhookconfiguration_webhook_clientconfig_service gauge
"#;
        assert_eq!(
            families().render_document(&w, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_webhooks_with_service_and_url() {
        let w = object(serde_json::json!({
            "metadata": {
                "name": "mutatingwebhookconfiguration3", "creationTimestamp": "2017-08-01T06:30:18Z", "resourceVersion": "abcdef"
            },
            "webhooks": [
                { "name": "webhook_with_service", "clientConfig": { "service": { "name": "svc", "namespace": "ns" } },
                  "sideEffects": "None", "admissionReviewVersions": ["v1"] },
                { "name": "webhook_with_external_url", "clientConfig": { "url": "example.com" },
                  "sideEffects": "None", "admissionReviewVersions": ["v1"] }
            ]
        }));
        let want = r#"# HELP kube_mutatingwebhookconfiguration_info Information about the MutatingWebhookConfiguration.
# TYPE kube_mutatingwebhookconfiguration_info gauge
kube_mutatingwebhookconfiguration_info{namespace="",mutatingwebhookconfiguration="mutatingwebhookconfiguration3"} 1
# HELP kube_mutatingwebhookconfiguration_created Unix creation timestamp.
# TYPE kube_mutatingwebhookconfiguration_created gauge
kube_mutatingwebhookconfiguration_created{namespace="",mutatingwebhookconfiguration="mutatingwebhookconfiguration3"} 1.501569018e+09
# HELP kube_mutatingwebhookconfiguration_metadata_resource_version Resource version representing a specific version of the MutatingWebhookConfiguration.
# TYPE kube_mutatingwebhookconfiguration_metadata_resource_version gauge
# HELP kube_mutatingwebhookconfiguration_webhook_clientconfig_service Service used by the apiserver to connect to a mutating webhook.
# TYPE kube_mutatingwebhookconfiguration_webhook_clientconfig_service gauge
kube_mutatingwebhookconfiguration_webhook_clientconfig_service{namespace="",mutatingwebhookconfiguration="mutatingwebhookconfiguration3",webhook_name="webhook_with_service",service_name="svc",service_namespace="ns"} 1
kube_mutatingwebhookconfiguration_webhook_clientconfig_service{namespace="",mutatingwebhookconfiguration="mutatingwebhookconfiguration3",webhook_name="webhook_with_external_url",service_name="",service_namespace=""} 1
"#;
        assert_eq!(
            families().render_document(&w, &FamilyContext::default()),
            want
        );
    }
}
