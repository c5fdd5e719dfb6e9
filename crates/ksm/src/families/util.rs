//! Small conversions every resource module needs, written once.

use std::collections::BTreeMap;

use ferrocrane_core::exposition::{Metric, kube_btree_labels_to_prometheus};
use ferrocrane_core::quantity::Quantity;
use k8s_openapi::api::admissionregistration::v1::{ParamRef, WebhookClientConfig};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};

use super::{FamilyContext, KeyAllowlist};

pub fn bool_f64(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// Seconds since the epoch, as kube-state-metrics reports times (`float64(t.Unix())`).
pub fn unix_seconds(t: &Time) -> f64 {
    go_unix_of(t.0.as_second(), t.0.subsec_nanosecond()) as f64
}

/// Go's `t.Unix()` of a `metav1.MicroTime` (Lease times keep microseconds).
pub fn micro_unix_seconds(t: &MicroTime) -> i64 {
    go_unix_of(t.0.as_second(), t.0.subsec_nanosecond())
}

/// Go's `Unix()` floors (1969-12-31T23:59:59.5Z is -1); `as_second` truncates toward zero
/// and carries a negative fraction before the epoch.
fn go_unix_of(truncated: i64, subsec_nanos: i32) -> i64 {
    if subsec_nanos < 0 {
        truncated - 1
    } else {
        truncated
    }
}

/// `kube_*_created`: only when the object has a creation timestamp.
pub fn created(meta: &ObjectMeta) -> Vec<Metric> {
    meta.creation_timestamp
        .as_ref()
        .map(|t| vec![super::bare(unix_seconds(t))])
        .unwrap_or_default()
}

/// `kube_*_deletion_timestamp`-style families: only while the object is being deleted.
pub fn deletion_timestamp(meta: &ObjectMeta) -> Vec<Metric> {
    meta.deletion_timestamp
        .as_ref()
        .map(|t| vec![super::bare(unix_seconds(t))])
        .unwrap_or_default()
}

/// The `kube_*_labels` family: allowlisted labels as `label_*`. Upstream emits the
/// sample only when at least one key is allowlisted for the resource.
pub fn labels_family(meta: &ObjectMeta, ctx: &FamilyContext) -> Vec<Metric> {
    allowlisted_family("label", meta.labels.as_ref(), &ctx.labels)
}

/// The `kube_*_annotations` family: allowlisted annotations as `annotation_*`.
pub fn annotations_family(meta: &ObjectMeta, ctx: &FamilyContext) -> Vec<Metric> {
    allowlisted_family("annotation", meta.annotations.as_ref(), &ctx.annotations)
}

fn allowlisted_family(
    prefix: &str,
    map: Option<&BTreeMap<String, String>>,
    allow: &KeyAllowlist,
) -> Vec<Metric> {
    if *allow == KeyAllowlist::None {
        return Vec::new();
    }
    let empty = BTreeMap::new();
    let map = map.unwrap_or(&empty);
    let selected: BTreeMap<&str, &str> = map
        .iter()
        .filter(|(k, _)| allow.allows(k))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (keys, values) = kube_btree_labels_to_prometheus(prefix, &selected);
    vec![Metric::new(
        keys.into_iter().map(Into::into).collect(),
        values,
        1.0,
    )]
}

/// `resource.MaxMilliValue`: the largest value whose thousandths fit an int64.
const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;

/// kube-state-metrics' `convertValueToFloat64`: thousandths (`MilliValue()/1000`, so
/// rounded up to a milli) unless they would overflow, then `Value()`.
pub fn convert_value_to_f64(q: &Quantity) -> f64 {
    let value = q.value();
    if value > MAX_MILLI_VALUE {
        value as f64
    } else {
        q.milli_value() as f64 / 1000.0
    }
}

/// [`convert_value_to_f64`] of a quantity from the API; None when it does not parse.
pub fn quantity_value(q: &KubeQuantity) -> Option<f64> {
    Quantity::parse(&q.0).ok().map(|q| convert_value_to_f64(&q))
}

/// `(kind, name, is_controller)` of each owner reference, in order.
pub fn owner_labels(meta: &ObjectMeta) -> Vec<(String, String, bool)> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|o| {
            (
                o.kind.clone(),
                o.name.clone(),
                o.controller.unwrap_or(false),
            )
        })
        .collect()
}

/// `kube_*_metadata_resource_version`: the resource version when it is a number.
pub fn resource_version(meta: &ObjectMeta) -> Vec<Metric> {
    meta.resource_version
        .as_deref()
        .and_then(|rv| rv.parse::<f64>().ok())
        .map(|v| vec![super::bare(v)])
        .unwrap_or_default()
}

/// Go's `time.Time{}.Unix()`: what upstream reports for an unset timestamp, and the
/// value `metav1.Time.IsZero` recognises.
pub const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// `t.Unix()` of a `metav1.Time` field, where a missing time is Go's zero time.
pub fn go_unix(t: Option<&Time>) -> f64 {
    t.map(unix_seconds).unwrap_or(GO_ZERO_TIME_UNIX as f64)
}

/// A set time that is not Go's zero time (`!t.IsZero()`), in seconds.
pub fn non_zero_seconds(t: Option<&Time>) -> Option<i64> {
    t.map(|t| go_unix_of(t.0.as_second(), t.0.subsec_nanosecond()))
        .filter(|&s| s != GO_ZERO_TIME_UNIX)
}

/// Condition statuses in upstream's order (`addConditionMetrics`), with the label
/// value each is reported as.
pub const CONDITION_STATUSES: [(&str, &str); 3] =
    [("True", "true"), ("False", "false"), ("Unknown", "unknown")];

/// Upstream's `addConditionMetrics` for one condition: a `(label, value)` per possible
/// status, 1 for the one `status` matches (exactly, case-sensitive) and 0 for the others.
pub fn condition_status_values(status: &str) -> impl Iterator<Item = (&'static str, f64)> + '_ {
    CONDITION_STATUSES
        .iter()
        .map(move |&(s, label)| (label, bool_f64(status == s)))
}

/// `condition="true|false|unknown"` samples for one condition (pod, job).
pub fn condition_status_samples(status: &str) -> Vec<Metric> {
    condition_status_values(status)
        .map(|(label, v)| super::sample(&["condition"], vec![label.to_string()], v))
        .collect()
}

/// `condition="<type>",status="true|false|unknown"` samples for one condition
/// (namespace, node, persistentvolumeclaim, horizontalpodautoscaler).
pub fn condition_type_status_samples(type_: &str, status: &str) -> Vec<Metric> {
    condition_status_values(status)
        .map(|(label, v)| {
            super::sample(
                &["condition", "status"],
                vec![type_.to_string(), label.to_string()],
                v,
            )
        })
        .collect()
}

/// The `kube_*_owner` family: one sample per owner reference with
/// `owner_kind`, `owner_name`, `owner_is_controller`; a single sample with empty
/// labels when there is none.
pub fn owner_family(meta: &ObjectMeta) -> Vec<Metric> {
    const KEYS: &[&str] = &["owner_kind", "owner_name", "owner_is_controller"];
    let owners = owner_labels(meta);
    if owners.is_empty() {
        return vec![super::sample(KEYS, vec![String::new(); 3], 1.0)];
    }
    owners
        .into_iter()
        .map(|(kind, name, controller)| {
            super::sample(KEYS, vec![kind, name, controller.to_string()], 1.0)
        })
        .collect()
}

/// [`owner_family`] without `owner_is_controller`, as `kube_deployment_owner` has it.
pub fn owner_kind_name_family(meta: &ObjectMeta) -> Vec<Metric> {
    const KEYS: &[&str] = &["owner_kind", "owner_name"];
    let owners = owner_labels(meta);
    if owners.is_empty() {
        return vec![super::sample(KEYS, vec![String::new(); 2], 1.0)];
    }
    owners
        .into_iter()
        .map(|(kind, name, _)| super::sample(KEYS, vec![kind, name], 1.0))
        .collect()
}

/// `kube_{mutating,validating}webhookconfiguration_webhook_clientconfig_service`: one
/// sample per webhook `(name, client config)`; empty service labels for a URL webhook.
pub fn webhook_clientconfig_service<'a>(
    hooks: impl Iterator<Item = (&'a str, &'a WebhookClientConfig)>,
) -> Vec<Metric> {
    hooks
        .map(|(hook, config)| {
            let (name, namespace) = config
                .service
                .as_ref()
                .map(|s| (s.name.clone(), s.namespace.clone()))
                .unwrap_or_default();
            super::sample(
                &["webhook_name", "service_name", "service_namespace"],
                vec![hook.to_string(), name, namespace],
                1.0,
            )
        })
        .collect()
}

/// `kube_{mutating,validating}admissionpolicybinding_info`: the policy and its
/// parameter reference, empty labels for what is unset.
pub fn admission_policy_binding_info(policy_name: String, param: Option<&ParamRef>) -> Vec<Metric> {
    vec![super::sample(
        &[
            "policy_name",
            "param_name",
            "param_namespace",
            "param_not_found_action",
        ],
        vec![
            policy_name,
            param.and_then(|p| p.name.clone()).unwrap_or_default(),
            param.and_then(|p| p.namespace.clone()).unwrap_or_default(),
            param
                .and_then(|p| p.parameter_not_found_action.clone())
                .unwrap_or_default(),
        ],
        1.0,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_value_matches_convert_value_to_float64() {
        let cpu_value = convert_value_to_f64;
        let q = |s| Quantity::parse(s).expect("quantity");
        assert_eq!(cpu_value(&q("250m")), 0.25);
        assert_eq!(cpu_value(&q("1.5")), 1.5);
        assert_eq!(cpu_value(&q("1n")), 0.001);
        assert_eq!(cpu_value(&q("9223372036854776")), 9223372036854776.0);
    }

    #[test]
    fn whole_values_beyond_the_milli_range() {
        assert_eq!(
            convert_value_to_f64(&Quantity::parse("8Ei").expect("quantity")),
            9223372036854775807.0
        );
        assert_eq!(
            quantity_value(&KubeQuantity("1Gi".into())),
            Some(1073741824.0)
        );
        assert_eq!(quantity_value(&KubeQuantity("1 k".into())), None);
    }
}
