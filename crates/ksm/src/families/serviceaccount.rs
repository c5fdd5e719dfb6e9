//! `kube_serviceaccount_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::ServiceAccount;

use super::util::{annotations_family, created, deletion_timestamp, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<ServiceAccount> {
    ResourceFamilies {
        resource: "serviceaccounts",
        identity_keys: &["namespace", "serviceaccount", "uid"],
        identity: |sa| {
            vec![
                sa.metadata.namespace.clone().unwrap_or_default(),
                sa.metadata.name.clone().unwrap_or_default(),
                sa.metadata.uid.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_serviceaccount_info",
                help: "Information about a service account",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |sa, _| {
                    let automount = sa
                        .automount_service_account_token
                        .map(|b| b.to_string())
                        .unwrap_or_default();
                    vec![sample(&["automount_token"], vec![automount], 1.0)]
                },
            },
            FamilySpec {
                name: "kube_serviceaccount_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |sa, _| created(&sa.metadata),
            },
            FamilySpec {
                name: "kube_serviceaccount_deleted",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |sa, _| deletion_timestamp(&sa.metadata),
            },
            FamilySpec {
                name: "kube_serviceaccount_secret",
                help: "Secret being referenced by a service account",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |sa, _| {
                    sa.secrets
                        .iter()
                        .flatten()
                        .map(|s| sample(&["name"], vec![s.name.clone().unwrap_or_default()], 1.0))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_serviceaccount_image_pull_secret",
                help: "Secret being referenced by a service account for the purpose of pulling images",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |sa, _| {
                    sa.image_pull_secrets
                        .iter()
                        .flatten()
                        .map(|s| sample(&["name"], vec![s.name.clone()], 1.0))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_serviceaccount_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |sa, ctx| annotations_family(&sa.metadata, ctx),
            },
            FamilySpec {
                name: "kube_serviceaccount_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |sa, ctx| labels_family(&sa.metadata, ctx),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    #[test]
    fn golden_full() {
        let sa: ServiceAccount = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "serviceAccountName", "namespace": "serviceAccountNS", "uid": "serviceAccountUID",
                "creationTimestamp": "2017-07-14T02:40:00Z",
                "deletionTimestamp": "2065-01-24T05:20:00Z",
                "labels": { "app": "web" }
            },
            "automountServiceAccountToken": true,
            "secrets": [{ "apiVersion": "v1", "kind": "Secret", "name": "secretName", "namespace": "serviceAccountNS" }],
            "imagePullSecrets": [{ "name": "imagePullSecretName" }, { "name": "second" }]
        }))
        .expect("valid serviceaccount");
        let id = r#"namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID""#;
        let want = format!(
            "# HELP kube_serviceaccount_info Information about a service account
# TYPE kube_serviceaccount_info gauge
kube_serviceaccount_info{{{id},automount_token=\"true\"}} 1
# HELP kube_serviceaccount_created Unix creation timestamp
# TYPE kube_serviceaccount_created gauge
kube_serviceaccount_created{{{id}}} 1.5e+09
# HELP kube_serviceaccount_deleted Unix deletion timestamp
# TYPE kube_serviceaccount_deleted gauge
kube_serviceaccount_deleted{{{id}}} 3e+09
# HELP kube_serviceaccount_secret Secret being referenced by a service account
# TYPE kube_serviceaccount_secret gauge
kube_serviceaccount_secret{{{id},name=\"secretName\"}} 1
# HELP kube_serviceaccount_image_pull_secret Secret being referenced by a service account for the purpose of pulling images
# TYPE kube_serviceaccount_image_pull_secret gauge
kube_serviceaccount_image_pull_secret{{{id},name=\"imagePullSecretName\"}} 1
kube_serviceaccount_image_pull_secret{{{id},name=\"second\"}} 1
# HELP kube_serviceaccount_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_serviceaccount_annotations gauge
# HELP kube_serviceaccount_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_serviceaccount_labels gauge
kube_serviceaccount_labels{{{id},label_app=\"web\"}} 1
"
        );
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["app".into()]),
            ..Default::default()
        };
        assert_eq!(families().render_document(&sa, &ctx), want);
    }

    #[test]
    fn golden_minimal() {
        let sa: ServiceAccount = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "default", "namespace": "kube-system", "uid": "u" }
        }))
        .expect("valid serviceaccount");
        let want = r#"# HELP kube_serviceaccount_info Information about a service account
# TYPE kube_serviceaccount_info gauge
kube_serviceaccount_info{namespace="kube-system",serviceaccount="default",uid="u",automount_token=""} 1
# HELP kube_serviceaccount_created Unix creation timestamp
# TYPE kube_serviceaccount_created gauge
# HELP kube_serviceaccount_deleted Unix deletion timestamp
# TYPE kube_serviceaccount_deleted gauge
# HELP kube_serviceaccount_secret Secret being referenced by a service account
# TYPE kube_serviceaccount_secret gauge
# HELP kube_serviceaccount_image_pull_secret Secret being referenced by a service account for the purpose of pulling images
# TYPE kube_serviceaccount_image_pull_secret gauge
# HELP kube_serviceaccount_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_serviceaccount_annotations gauge
# HELP kube_serviceaccount_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_serviceaccount_labels gauge
"#;
        assert_eq!(
            families().render_document(&sa, &FamilyContext::default()),
            want
        );
    }
}
