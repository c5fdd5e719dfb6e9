//! `kube_horizontalpodautoscaler_*` (autoscaling/v2).
//!
//! Upstream emits the samples of one target metric from a Go map, so their order
//! varies between scrapes; here it is fixed: `value`, `utilization`, `average`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use ferrocrane_core::quantity::approximate_f64;
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use super::util::{
    annotations_family, condition_type_status_samples, created, deletion_timestamp, labels_family,
    quantity_value,
};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

const TARGET_METRIC_LABELS: [&str; 3] = ["metric_name", "metric_target_type", "container"];

/// One sample per set field of a target or current value.
fn target_samples(
    ms: &mut Vec<Metric>,
    name: &str,
    container: &str,
    value: Option<&KubeQuantity>,
    average_value: Option<&KubeQuantity>,
    average_utilization: Option<i32>,
) {
    let entries = [
        ("value", value.and_then(quantity_value)),
        ("utilization", average_utilization.map(f64::from)),
        ("average", average_value.and_then(quantity_value)),
    ];
    for (kind, v) in entries {
        if let Some(v) = v {
            ms.push(sample(
                &TARGET_METRIC_LABELS,
                vec![name.to_string(), kind.to_string(), container.to_string()],
                v,
            ));
        }
    }
}

fn spec_target_metric(a: &HorizontalPodAutoscaler) -> Vec<Metric> {
    let mut ms = Vec::new();
    for m in a.spec.metrics.iter().flatten() {
        let (name, target, container) = match m.type_.as_str() {
            "Object" => match &m.object {
                Some(o) => (o.metric.name.as_str(), &o.target, ""),
                None => continue,
            },
            "Pods" => match &m.pods {
                Some(p) => (p.metric.name.as_str(), &p.target, ""),
                None => continue,
            },
            "Resource" => match &m.resource {
                Some(r) => (r.name.as_str(), &r.target, ""),
                None => continue,
            },
            "ContainerResource" => match &m.container_resource {
                Some(c) => (c.name.as_str(), &c.target, c.container.as_str()),
                None => continue,
            },
            "External" => match &m.external {
                Some(e) => (e.metric.name.as_str(), &e.target, ""),
                None => continue,
            },
            _ => continue,
        };
        target_samples(
            &mut ms,
            name,
            container,
            target.value.as_ref(),
            target.average_value.as_ref(),
            target.average_utilization,
        );
    }
    ms
}

fn status(a: &HorizontalPodAutoscaler) -> Option<&HorizontalPodAutoscalerStatus> {
    a.status.as_ref()
}

fn status_target_metric(a: &HorizontalPodAutoscaler) -> Vec<Metric> {
    let mut ms = Vec::new();
    for m in status(a)
        .and_then(|s| s.current_metrics.as_ref())
        .into_iter()
        .flatten()
    {
        let (name, current, container) = match m.type_.as_str() {
            "Object" => match &m.object {
                Some(o) => (o.metric.name.as_str(), &o.current, ""),
                None => continue,
            },
            "Pods" => match &m.pods {
                Some(p) => (p.metric.name.as_str(), &p.current, ""),
                None => continue,
            },
            "Resource" => match &m.resource {
                Some(r) => (r.name.as_str(), &r.current, ""),
                None => continue,
            },
            "ContainerResource" => match &m.container_resource {
                Some(c) => (c.name.as_str(), &c.current, c.container.as_str()),
                None => continue,
            },
            "External" => match &m.external {
                Some(e) => (e.metric.name.as_str(), &e.current, ""),
                None => continue,
            },
            _ => continue,
        };
        target_samples(
            &mut ms,
            name,
            container,
            current.value.as_ref(),
            current.average_value.as_ref(),
            current.average_utilization,
        );
    }
    ms
}

fn status_condition(a: &HorizontalPodAutoscaler) -> Vec<Metric> {
    status(a)
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .flat_map(|c| condition_type_status_samples(&c.type_, &c.status))
        .collect()
}

/// Upstream reports `AsApproximateFloat64()`, whose float depends on how the text was
/// written (`0.3` is 0.30000000000000004). The field was decoded from JSON, which trims.
fn tolerance(q: Option<&KubeQuantity>) -> Vec<Metric> {
    q.and_then(|q| approximate_f64(q.0.trim()).ok())
        .map(|v| vec![bare(v)])
        .unwrap_or_default()
}

pub fn families() -> ResourceFamilies<HorizontalPodAutoscaler> {
    ResourceFamilies {
        resource: "horizontalpodautoscalers",
        identity_keys: &["namespace", "horizontalpodautoscaler"],
        identity: |a| {
            vec![
                a.metadata.namespace.clone().unwrap_or_default(),
                a.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_horizontalpodautoscaler_info",
                help: "Information about this autoscaler.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| {
                    let r = &a.spec.scale_target_ref;
                    match r.api_version.as_deref().filter(|v| !v.is_empty()) {
                        Some(api_version) => vec![sample(
                            &[
                                "scaletargetref_api_version",
                                "scaletargetref_kind",
                                "scaletargetref_name",
                            ],
                            vec![api_version.to_string(), r.kind.clone(), r.name.clone()],
                            1.0,
                        )],
                        None => vec![sample(
                            &["scaletargetref_kind", "scaletargetref_name"],
                            vec![r.kind.clone(), r.name.clone()],
                            1.0,
                        )],
                    }
                },
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_metadata_generation",
                help: "The generation observed by the HorizontalPodAutoscaler controller.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| vec![bare(a.metadata.generation.unwrap_or(0) as f64)],
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_spec_max_replicas",
                help: "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| vec![bare(f64::from(a.spec.max_replicas))],
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_spec_min_replicas",
                help: "Lower limit for the number of pods that can be set by the autoscaler, default 1.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| vec![bare(f64::from(a.spec.min_replicas.unwrap_or(1)))],
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_spec_target_metric",
                help: "The metric specifications used by this autoscaler when calculating the desired replica count.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| spec_target_metric(a),
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_spec_behavior_scale_down_tolerance",
                help: "The tolerance on the ratio between the current and desired metric value below which no scale down occurs.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| {
                    tolerance(
                        a.spec
                            .behavior
                            .as_ref()
                            .and_then(|b| b.scale_down.as_ref())
                            .and_then(|r| r.tolerance.as_ref()),
                    )
                },
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_spec_behavior_scale_up_tolerance",
                help: "The tolerance on the ratio between the current and desired metric value below which no scale up occurs.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| {
                    tolerance(
                        a.spec
                            .behavior
                            .as_ref()
                            .and_then(|b| b.scale_up.as_ref())
                            .and_then(|r| r.tolerance.as_ref()),
                    )
                },
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_status_target_metric",
                help: "The current metric status used by this autoscaler when calculating the desired replica count.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| status_target_metric(a),
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_status_current_replicas",
                help: "Current number of replicas of pods managed by this autoscaler.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| {
                    vec![bare(f64::from(
                        status(a).and_then(|s| s.current_replicas).unwrap_or(0),
                    ))]
                },
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_status_desired_replicas",
                help: "Desired number of replicas of pods managed by this autoscaler.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| vec![bare(f64::from(status(a).map_or(0, |s| s.desired_replicas)))],
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |a, ctx| annotations_family(&a.metadata, ctx),
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, ctx| labels_family(&a.metadata, ctx),
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_status_condition",
                help: "The condition of this autoscaler.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| status_condition(a),
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| created(&a.metadata),
            },
            FamilySpec {
                name: "kube_horizontalpodautoscaler_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |a, _| deletion_timestamp(&a.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn hpa(v: serde_json::Value) -> HorizontalPodAutoscaler {
        serde_json::from_value(v).expect("valid hpa")
    }

    fn hpa1() -> HorizontalPodAutoscaler {
        hpa(serde_json::json!({
            "metadata": {
                "name": "hpa1", "namespace": "ns1", "generation": 2,
                "creationTimestamp": "2017-07-14T02:40:00Z", "deletionTimestamp": "2027-01-15T08:00:00Z",
                "labels": { "app": "foobar" }
            },
            "spec": {
                "maxReplicas": 4, "minReplicas": 2,
                "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "deployment1" },
                "metrics": [
                    { "type": "Object", "object": { "metric": { "name": "hits" }, "describedObject": { "kind": "Service", "name": "s" },
                        "target": { "type": "Value", "value": "10", "averageValue": "12" } } },
                    { "type": "Object", "object": { "metric": { "name": "connections" }, "describedObject": { "kind": "Service", "name": "s" },
                        "target": { "type": "Value", "value": "0.5", "averageValue": "0.7" } } },
                    { "type": "Pods", "pods": { "metric": { "name": "transactions_processed" },
                        "target": { "type": "AverageValue", "averageValue": "33" } } },
                    { "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 80 } } },
                    { "type": "Resource", "resource": { "name": "memory",
                        "target": { "type": "AverageValue", "averageValue": "800Ki", "averageUtilization": 80 } } },
                    { "type": "ContainerResource", "containerResource": { "name": "cpu", "container": "container1",
                        "target": { "type": "Utilization", "averageUtilization": 80 } } },
                    { "type": "Resource", "resource": { "name": "disk", "target": { "type": "Utilization" } } },
                    { "type": "External", "external": { "metric": { "name": "sqs_jobs" }, "target": { "type": "Value", "value": "30" } } },
                    { "type": "External", "external": { "metric": { "name": "events" }, "target": { "type": "AverageValue", "averageValue": "30" } } }
                ],
                "behavior": { "scaleUp": { "tolerance": "0.3" }, "scaleDown": { "tolerance": "50m" } }
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 2,
                "conditions": [{ "type": "AbleToScale", "status": "True", "reason": "reason" }],
                "currentMetrics": [
                    { "type": "Resource", "resource": { "name": "cpu", "current": { "averageValue": "7m", "averageUtilization": 80 } } },
                    { "type": "Resource", "resource": { "name": "memory", "current": { "averageValue": "26335914666m", "averageUtilization": 80 } } },
                    { "type": "Pods" }
                ]
            }
        }))
    }

    #[test]
    fn golden_hpa1() {
        let want = r#"# HELP kube_horizontalpodautoscaler_info Information about this autoscaler.
# TYPE kube_horizontalpodautoscaler_info gauge
kube_horizontalpodautoscaler_info{namespace="ns1",horizontalpodautoscaler="hpa1",scaletargetref_api_version="apps/v1",scaletargetref_kind="Deployment",scaletargetref_name="deployment1"} 1
# HELP kube_horizontalpodautoscaler_metadata_generation [STABLE] The generation observed by the HorizontalPodAutoscaler controller.
# TYPE kube_horizontalpodautoscaler_metadata_generation gauge
kube_horizontalpodautoscaler_metadata_generation{namespace="ns1",horizontalpodautoscaler="hpa1"} 2
# HELP kube_horizontalpodautoscaler_spec_max_replicas [STABLE] Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.
# TYPE kube_horizontalpodautoscaler_spec_max_replicas gauge
kube_horizontalpodautoscaler_spec_max_replicas{namespace="ns1",horizontalpodautoscaler="hpa1"} 4
# HELP kube_horizontalpodautoscaler_spec_min_replicas [STABLE] Lower limit for the number of pods that can be set by the autoscaler, default 1.
# TYPE kube_horizontalpodautoscaler_spec_min_replicas gauge
kube_horizontalpodautoscaler_spec_min_replicas{namespace="ns1",horizontalpodautoscaler="hpa1"} 2
# HELP kube_horizontalpodautoscaler_spec_target_metric The metric specifications used by this autoscaler when calculating the desired replica count.
# TYPE kube_horizontalpodautoscaler_spec_target_metric gauge
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="hits",metric_target_type="value",container=""} 10
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="hits",metric_target_type="average",container=""} 12
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="connections",metric_target_type="value",container=""} 0.5
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="connections",metric_target_type="average",container=""} 0.7
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="transactions_processed",metric_target_type="average",container=""} 33
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="utilization",container=""} 80
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="utilization",container=""} 80
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="average",container=""} 819200
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="utilization",container="container1"} 80
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="sqs_jobs",metric_target_type="value",container=""} 30
kube_horizontalpodautoscaler_spec_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="events",metric_target_type="average",container=""} 30
# HELP kube_horizontalpodautoscaler_spec_behavior_scale_down_tolerance The tolerance on the ratio between the current and desired metric value below which no scale down occurs.
# TYPE kube_horizontalpodautoscaler_spec_behavior_scale_down_tolerance gauge
kube_horizontalpodautoscaler_spec_behavior_scale_down_tolerance{namespace="ns1",horizontalpodautoscaler="hpa1"} 0.05
# HELP kube_horizontalpodautoscaler_spec_behavior_scale_up_tolerance The tolerance on the ratio between the current and desired metric value below which no scale up occurs.
# TYPE kube_horizontalpodautoscaler_spec_behavior_scale_up_tolerance gauge
kube_horizontalpodautoscaler_spec_behavior_scale_up_tolerance{namespace="ns1",horizontalpodautoscaler="hpa1"} 0.30000000000000004
# HELP kube_horizontalpodautoscaler_status_target_metric [STABLE] The current metric status used by this autoscaler when calculating the desired replica count.
# TYPE kube_horizontalpodautoscaler_status_target_metric gauge
kube_horizontalpodautoscaler_status_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="utilization",container=""} 80
kube_horizontalpodautoscaler_status_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="average",container=""} 0.007
kube_horizontalpodautoscaler_status_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="utilization",container=""} 80
kube_horizontalpodautoscaler_status_target_metric{namespace="ns1",horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="average",container=""} 2.6335914666e+07
# HELP kube_horizontalpodautoscaler_status_current_replicas [STABLE] Current number of replicas of pods managed by this autoscaler.
# TYPE kube_horizontalpodautoscaler_status_current_replicas gauge
kube_horizontalpodautoscaler_status_current_replicas{namespace="ns1",horizontalpodautoscaler="hpa1"} 2
# HELP kube_horizontalpodautoscaler_status_desired_replicas [STABLE] Desired number of replicas of pods managed by this autoscaler.
# TYPE kube_horizontalpodautoscaler_status_desired_replicas gauge
kube_horizontalpodautoscaler_status_desired_replicas{namespace="ns1",horizontalpodautoscaler="hpa1"} 2
# HELP kube_horizontalpodautoscaler_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_horizontalpodautoscaler_annotations gauge
# HELP kube_horizontalpodautoscaler_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_horizontalpodautoscaler_labels gauge
# HELP kube_horizontalpodautoscaler_status_condition [STABLE] The condition of this autoscaler.
# TYPE kube_horizontalpodautoscaler_status_condition gauge
kube_horizontalpodautoscaler_status_condition{namespace="ns1",horizontalpodautoscaler="hpa1",condition="AbleToScale",status="true"} 1
kube_horizontalpodautoscaler_status_condition{namespace="ns1",horizontalpodautoscaler="hpa1",condition="AbleToScale",status="false"} 0
kube_horizontalpodautoscaler_status_condition{namespace="ns1",horizontalpodautoscaler="hpa1",condition="AbleToScale",status="unknown"} 0
# HELP kube_horizontalpodautoscaler_created Unix creation timestamp
# TYPE kube_horizontalpodautoscaler_created gauge
kube_horizontalpodautoscaler_created{namespace="ns1",horizontalpodautoscaler="hpa1"} 1.5e+09
# HELP kube_horizontalpodautoscaler_deletion_timestamp Unix deletion timestamp
# TYPE kube_horizontalpodautoscaler_deletion_timestamp gauge
kube_horizontalpodautoscaler_deletion_timestamp{namespace="ns1",horizontalpodautoscaler="hpa1"} 1.8e+09
"#;
        assert_eq!(
            families().render_document(&hpa1(), &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn defaults_without_status_or_api_version() {
        let a = hpa(serde_json::json!({
            "metadata": { "name": "hpa-default-min-replicas", "namespace": "ns1" },
            "spec": { "maxReplicas": 4, "scaleTargetRef": { "kind": "Deployment", "name": "deployment1" } }
        }));
        let doc: String = families()
            .render_document(&a, &FamilyContext::default())
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let want = r#"kube_horizontalpodautoscaler_info{namespace="ns1",horizontalpodautoscaler="hpa-default-min-replicas",scaletargetref_kind="Deployment",scaletargetref_name="deployment1"} 1
kube_horizontalpodautoscaler_metadata_generation{namespace="ns1",horizontalpodautoscaler="hpa-default-min-replicas"} 0
kube_horizontalpodautoscaler_spec_max_replicas{namespace="ns1",horizontalpodautoscaler="hpa-default-min-replicas"} 4
kube_horizontalpodautoscaler_spec_min_replicas{namespace="ns1",horizontalpodautoscaler="hpa-default-min-replicas"} 1
kube_horizontalpodautoscaler_status_current_replicas{namespace="ns1",horizontalpodautoscaler="hpa-default-min-replicas"} 0
kube_horizontalpodautoscaler_status_desired_replicas{namespace="ns1",horizontalpodautoscaler="hpa-default-min-replicas"} 0
"#;
        assert_eq!(doc, want);
    }
}
