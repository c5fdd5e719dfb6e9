//! Which source sets an EHPA's replicas (pure): the HPA takes the largest of the replica
//! counts its metrics ask for, so the source is the metric asking for the most, as of the
//! HPA's last evaluation (its `currentMetrics`). The cron metric is named by the open window
//! that sets it, a prediction by its `resourceIdentifier`. On a tie the first in the HPA's
//! order wins: the user's metrics, then the predictions, then the crons.

use ferrocrane_autoscaling::cron::{CronWindow, DefaultZone};
use ferrocrane_autoscaling::external::{CRON_METRIC, PREDICTION_METRIC, RESOURCE_IDENTIFIER};
use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, MetricIdentifier, MetricSpec, MetricStatus, MetricTarget,
    MetricValueStatus,
};
use k8s_openapi::jiff::Timestamp;

use super::objects::milli;
use crate::crd::autoscaling::{CronSpec, ReplicasSource, replicas_sources};

/// The source of `hpa`'s replicas, or None before the HPA has evaluated its metrics.
pub fn replicas_source(
    hpa: &HorizontalPodAutoscaler,
    crons: &[CronSpec],
    zone: &DefaultZone,
    now: Timestamp,
) -> Option<ReplicasSource> {
    let spec = &hpa.spec;
    let status = hpa.status.as_ref()?;
    let replicas = status.current_replicas.filter(|r| *r > 0)?;
    let min = spec.min_replicas.unwrap_or(1);
    let mut best: Option<ReplicasSource> = None;
    for (metric, current) in spec
        .metrics
        .iter()
        .flatten()
        .zip(status.current_metrics.iter().flatten())
    {
        let Some(asks) = asks(metric, current, replicas) else {
            continue;
        };
        if best.as_ref().is_none_or(|b| asks > b.replicas) {
            let (type_, name) = describe(metric, crons, zone, now);
            best = Some(ReplicasSource {
                type_: type_.to_owned(),
                name,
                replicas: asks,
            });
        }
    }
    let best = best?;
    Some(if best.replicas <= min {
        ReplicasSource {
            type_: replicas_sources::MIN_REPLICAS.to_owned(),
            name: String::new(),
            replicas: min,
        }
    } else {
        best
    })
}

/// The replicas one metric asks for: its current value over its target, times the replicas
/// it was measured at (the HPA's formula, without its tolerance).
fn asks(metric: &MetricSpec, current: &MetricStatus, replicas: i32) -> Option<i32> {
    if metric.type_ != current.type_ {
        return None;
    }
    let (target, value): (&MetricTarget, &MetricValueStatus) = match metric.type_.as_str() {
        "Resource" => (
            &metric.resource.as_ref()?.target,
            &current.resource.as_ref()?.current,
        ),
        "ContainerResource" => (
            &metric.container_resource.as_ref()?.target,
            &current.container_resource.as_ref()?.current,
        ),
        "Pods" => (
            &metric.pods.as_ref()?.target,
            &current.pods.as_ref()?.current,
        ),
        "Object" => (
            &metric.object.as_ref()?.target,
            &current.object.as_ref()?.current,
        ),
        "External" => (
            &metric.external.as_ref()?.target,
            &current.external.as_ref()?.current,
        ),
        _ => return None,
    };
    let ratio = match target.type_.as_str() {
        "Utilization" => {
            f64::from(value.average_utilization?) / f64::from(target.average_utilization?)
        }
        "AverageValue" => quotient(&value.average_value, &target.average_value)?,
        "Value" => quotient(&value.value, &target.value)?,
        _ => return None,
    };
    // The values are whole milli-units: a ratio a hair over a whole number is that number.
    let asked = (ratio * f64::from(replicas) - 1e-6).ceil();
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a whole number, clamped to i32's range"
    )]
    (asked.is_finite() && asked >= 0.0).then(|| asked.min(f64::from(i32::MAX)) as i32)
}

fn quotient(
    value: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    target: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> Option<f64> {
    let target = milli(&target.as_ref()?.0).filter(|t| *t > 0)?;
    Some(milli(&value.as_ref()?.0)? as f64 / target as f64)
}

/// The source's type and name.
fn describe(
    metric: &MetricSpec,
    crons: &[CronSpec],
    zone: &DefaultZone,
    now: Timestamp,
) -> (&'static str, String) {
    let identified = |m: &MetricIdentifier| format!("{} {}", metric.type_, m.name);
    match metric.type_.as_str() {
        "External" => {
            let Some(external) = metric.external.as_ref() else {
                return (replicas_sources::METRIC, metric.type_.clone());
            };
            match external.metric.name.as_str() {
                CRON_METRIC => (replicas_sources::CRON, open_cron(crons, zone, now)),
                PREDICTION_METRIC => (
                    replicas_sources::PREDICTION,
                    external
                        .metric
                        .selector
                        .as_ref()
                        .and_then(|s| s.match_labels.as_ref())
                        .and_then(|l| l.get(RESOURCE_IDENTIFIER))
                        .cloned()
                        .unwrap_or_default(),
                ),
                _ => (replicas_sources::METRIC, identified(&external.metric)),
            }
        }
        "Resource" => (
            replicas_sources::METRIC,
            metric
                .resource
                .as_ref()
                .map_or_else(String::new, |r| format!("Resource {}", r.name)),
        ),
        "ContainerResource" => (
            replicas_sources::METRIC,
            metric
                .container_resource
                .as_ref()
                .map_or_else(String::new, |r| {
                    format!("ContainerResource {} of {}", r.name, r.container)
                }),
        ),
        "Pods" => (
            replicas_sources::METRIC,
            metric
                .pods
                .as_ref()
                .map_or_else(String::new, |p| identified(&p.metric)),
        ),
        "Object" => (
            replicas_sources::METRIC,
            metric.object.as_ref().map_or_else(String::new, |o| {
                format!(
                    "Object {}/{} {}",
                    o.described_object.kind, o.described_object.name, o.metric.name
                )
            }),
        ),
        other => (replicas_sources::METRIC, other.to_owned()),
    }
}

/// The open window with the largest target (the later one on a tie, as the cron metric
/// resolves them); empty when none is open or one does not parse.
fn open_cron(crons: &[CronSpec], zone: &DefaultZone, now: Timestamp) -> String {
    let mut best: Option<&CronSpec> = None;
    for spec in crons {
        let Ok(window) = CronWindow::parse(spec, zone) else {
            return String::new();
        };
        if window.is_open(now) && best.is_none_or(|b| spec.target_replicas >= b.target_replicas) {
            best = Some(spec);
        }
    }
    best.map(|c| c.name.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
