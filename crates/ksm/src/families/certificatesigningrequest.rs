//! `kube_certificatesigningrequest_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;

use super::util::{annotations_family, created, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

pub fn families() -> ResourceFamilies<CertificateSigningRequest> {
    ResourceFamilies {
        resource: "certificatesigningrequests",
        identity_keys: &["certificatesigningrequest", "signer_name"],
        identity: |c| {
            vec![
                c.metadata.name.clone().unwrap_or_default(),
                c.spec.signer_name.clone(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_certificatesigningrequest_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| annotations_family(&c.metadata, ctx),
            },
            FamilySpec {
                name: "kube_certificatesigningrequest_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| labels_family(&c.metadata, ctx),
            },
            FamilySpec {
                name: "kube_certificatesigningrequest_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| created(&c.metadata),
            },
            FamilySpec {
                name: "kube_certificatesigningrequest_condition",
                help: "The number of each certificatesigningrequest condition",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| conditions(c),
            },
            FamilySpec {
                name: "kube_certificatesigningrequest_cert_length",
                help: "Length of the issued cert",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| {
                    let len = c
                        .status
                        .as_ref()
                        .and_then(|s| s.certificate.as_ref())
                        .map_or(0, |b| b.0.len());
                    vec![bare(len as f64)]
                },
            },
        ],
    }
}

/// How many conditions of each type (`Approved`, `Denied`, `Failed`) the request has;
/// always three samples.
fn conditions(c: &CertificateSigningRequest) -> Vec<Metric> {
    let conds = c.status.as_ref().and_then(|s| s.conditions.as_ref());
    let count = |t: &str| conds.into_iter().flatten().filter(|c| c.type_ == t).count() as f64;
    [
        ("approved", "Approved"),
        ("denied", "Denied"),
        ("failed", "Failed"),
    ]
    .into_iter()
    .map(|(label, t)| sample(&["condition"], vec![label.to_string()], count(t)))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn csr(status: serde_json::Value) -> CertificateSigningRequest {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "certificate-test", "generation": 1, "labels": { "cert": "test" },
                "creationTimestamp": "2017-07-14T02:40:00Z"
            },
            "spec": { "signerName": "signer", "request": "" },
            "status": status
        }))
        .expect("valid csr")
    }

    fn want(labels: &str, approved: u32, denied: u32, failed: u32, len: usize) -> String {
        let id = r#"certificatesigningrequest="certificate-test",signer_name="signer""#;
        format!(
            "# HELP kube_certificatesigningrequest_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_certificatesigningrequest_annotations gauge
# HELP kube_certificatesigningrequest_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_certificatesigningrequest_labels gauge
{labels}# HELP kube_certificatesigningrequest_created [STABLE] Unix creation timestamp
# TYPE kube_certificatesigningrequest_created gauge
kube_certificatesigningrequest_created{{{id}}} 1.5e+09
# HELP kube_certificatesigningrequest_condition [STABLE] The number of each certificatesigningrequest condition
# TYPE kube_certificatesigningrequest_condition gauge
kube_certificatesigningrequest_condition{{{id},condition=\"approved\"}} {approved}
kube_certificatesigningrequest_condition{{{id},condition=\"denied\"}} {denied}
kube_certificatesigningrequest_condition{{{id},condition=\"failed\"}} {failed}
# HELP kube_certificatesigningrequest_cert_length [STABLE] Length of the issued cert
# TYPE kube_certificatesigningrequest_cert_length gauge
kube_certificatesigningrequest_cert_length{{{id}}} {len}
"
        )
    }

    #[test]
    fn golden_no_status() {
        let c = csr(serde_json::json!({}));
        assert_eq!(
            families().render_document(&c, &FamilyContext::default()),
            want("", 0, 0, 0, 0)
        );
    }

    #[test]
    fn golden_denied() {
        let c = csr(serde_json::json!({ "conditions": [{ "type": "Denied", "status": "True" }] }));
        assert_eq!(
            families().render_document(&c, &FamilyContext::default()),
            want("", 0, 1, 0, 0)
        );
    }

    #[test]
    fn golden_approved_with_certificate() {
        // "just for test" base64-encoded: 13 bytes once decoded.
        let c = csr(serde_json::json!({
            "certificate": "anVzdCBmb3IgdGVzdA==",
            "conditions": [{ "type": "Approved", "status": "True" }]
        }));
        assert_eq!(
            families().render_document(&c, &FamilyContext::default()),
            want("", 1, 0, 0, 13)
        );
    }

    #[test]
    fn golden_repeated_conditions_and_labels() {
        let c = csr(serde_json::json!({ "conditions": [
            { "type": "Approved", "status": "True" }, { "type": "Denied", "status": "True" },
            { "type": "Approved", "status": "True" }, { "type": "Denied", "status": "True" },
            { "type": "Failed", "status": "True" }, { "type": "Failed", "status": "True" }
        ] }));
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["cert".into()]),
            ..Default::default()
        };
        let labels = "kube_certificatesigningrequest_labels{certificatesigningrequest=\"certificate-test\",signer_name=\"signer\",label_cert=\"test\"} 1\n";
        assert_eq!(
            families().render_document(&c, &ctx),
            want(labels, 2, 2, 2, 0)
        );
    }
}
