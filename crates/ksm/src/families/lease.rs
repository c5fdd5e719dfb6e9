//! `kube_lease_*` (coordination/v1). Leases are named by `lease` alone; the
//! namespace is one of each family's own labels, as upstream has it.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::coordination::v1::Lease;

use super::util::{GO_ZERO_TIME_UNIX, micro_unix_seconds};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

fn owner(l: &Lease) -> Vec<Metric> {
    const KEYS: [&str; 4] = ["owner_kind", "owner_name", "namespace", "lease_holder"];
    let namespace = l.metadata.namespace.clone().unwrap_or_default();
    let holder = l
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default();
    match l.metadata.owner_references.as_deref() {
        None | Some([]) => vec![sample(
            &KEYS,
            vec![String::new(), String::new(), namespace, holder],
            1.0,
        )],
        Some(owners) => owners
            .iter()
            .map(|o| {
                sample(
                    &KEYS,
                    vec![
                        o.kind.clone(),
                        o.name.clone(),
                        namespace.clone(),
                        holder.clone(),
                    ],
                    1.0,
                )
            })
            .collect(),
    }
}

fn renew_time(l: &Lease) -> Vec<Metric> {
    l.spec
        .as_ref()
        .and_then(|s| s.renew_time.as_ref())
        .map(micro_unix_seconds)
        // Go's zero time (`metav1.MicroTime.IsZero`) reports nothing.
        .filter(|&s| s != GO_ZERO_TIME_UNIX)
        .map(|s| {
            vec![sample(
                &["namespace"],
                vec![l.metadata.namespace.clone().unwrap_or_default()],
                s as f64,
            )]
        })
        .unwrap_or_default()
}

pub fn families() -> ResourceFamilies<Lease> {
    ResourceFamilies {
        resource: "leases",
        identity_keys: &["lease"],
        identity: |l| vec![l.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_lease_owner",
                help: "Information about the Lease's owner.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |l, _| owner(l),
            },
            FamilySpec {
                name: "kube_lease_renew_time",
                help: "Kube lease renew time.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |l, _| renew_time(l),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn lease(v: serde_json::Value) -> Lease {
        serde_json::from_value(v).expect("valid lease")
    }

    #[test]
    fn golden_owned_lease() {
        let l = lease(serde_json::json!({
            "metadata": {
                "name": "kube-master", "namespace": "default",
                "ownerReferences": [{ "apiVersion": "v1", "kind": "Node", "name": "kube-master", "uid": "u" }]
            },
            "spec": { "holderIdentity": "kube-master", "renewTime": "2017-07-14T02:40:00.123456Z" }
        }));
        let want = r#"# HELP kube_lease_owner Information about the Lease's owner.
# TYPE kube_lease_owner gauge
kube_lease_owner{lease="kube-master",owner_kind="Node",owner_name="kube-master",namespace="default",lease_holder="kube-master"} 1
# HELP kube_lease_renew_time Kube lease renew time.
# TYPE kube_lease_renew_time gauge
kube_lease_renew_time{lease="kube-master",namespace="default"} 1.5e+09
"#;
        assert_eq!(
            families().render_document(&l, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_unowned_lease_without_spec() {
        let l = lease(
            serde_json::json!({ "metadata": { "name": "l", "namespace": "kube-node-lease" } }),
        );
        let want = r#"# HELP kube_lease_owner Information about the Lease's owner.
# TYPE kube_lease_owner gauge
kube_lease_owner{lease="l",owner_kind="",owner_name="",namespace="kube-node-lease",lease_holder=""} 1
# HELP kube_lease_renew_time Kube lease renew time.
# TYPE kube_lease_renew_time gauge
"#;
        assert_eq!(
            families().render_document(&l, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn renew_times_floor_like_go_unix_before_the_epoch() {
        let renew = |t: &str| {
            let l = lease(serde_json::json!({
                "metadata": { "name": "l", "namespace": "n" }, "spec": { "renewTime": t }
            }));
            renew_time(&l).first().map(|m| m.value)
        };
        assert_eq!(renew("1969-12-31T23:59:59.999999Z"), Some(-1.0));
        assert_eq!(renew("1969-12-31T23:59:58.000000Z"), Some(-2.0));
        assert_eq!(renew("1970-01-01T00:00:00.999999Z"), Some(0.0));
    }
}
