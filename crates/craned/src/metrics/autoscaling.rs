//! Crane's autoscaling exports, computed at each scrape from the objects themselves, so every
//! series disappears with its object (Crane keeps its replicas gauges forever, #318):
//!
//! * `crane_autoscaling_cron{targetKind,targetName,targetNamespace,resourceIdentifier="cron"}`:
//!   the replicas an EHPA's crons ask for now.
//! * `crane_autoscaling_prediction{...,resourceIdentifier,algorithm}`: the largest predicted
//!   value over the prediction window (full precision; Crane rounds to float32).
//! * `crane_prediction_tsp{...,resourceIdentifier,algorithm}`: the first predicted sample from
//!   now on, with its own (future) timestamp.
//! * `crane_autoscaling_hpa_replicas{namespace,name}`: every HPA's desired replicas.
//! * `crane_autoscaling_effective_hpa_replicas{namespace,name}`: every EHPA's expected ones.
//!
//! * `craned_prediction_error_ratio{namespace,name,resource_identifier}` and
//!   `craned_prediction_error_samples`: how far each TSP metric's last replaced prediction was
//!   from what happened (an addition: see `time_series_prediction::accuracy`).
//!
//! Names, labels and help are Crane's (`pkg/metrics`). One difference: an EHPA whose cron
//! cannot be read, or whose prediction is not there, is skipped (Crane's collector stops the
//! whole scrape at the first one).

use std::sync::Arc;

use ferrocrane_autoscaling::cron::{DefaultZone, replicas_for};
use ferrocrane_autoscaling::external::{
    CRON_IDENTIFIER, CRON_METRIC, PREDICTION_METRIC, labels as owned, predicted_max,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use prometheus::core::{Collector, Desc};
use prometheus::proto::{Gauge, LabelPair, Metric, MetricFamily, MetricType};

use crate::crd::autoscaling::EffectiveHorizontalPodAutoscaler;
use crate::crd::prediction::TimeSeriesPrediction;
use crate::prediction::accuracy::{MetricKey, Score, Scores};

const TSP_METRIC: &str = "crane_prediction_tsp";
const HPA_REPLICAS: &str = "crane_autoscaling_hpa_replicas";
const EHPA_REPLICAS: &str = "crane_autoscaling_effective_hpa_replicas";
const ERROR_RATIO: &str = "craned_prediction_error_ratio";
const ERROR_SAMPLES: &str = "craned_prediction_error_samples";

/// (name, help, label names) of each family.
const FAMILIES: [(&str, &str, &[&str]); 7] = [
    (
        CRON_METRIC,
        "external metrics value of cron for HorizontalPodAutoscaler",
        &[
            "targetKind",
            "targetName",
            "targetNamespace",
            "resourceIdentifier",
        ],
    ),
    (
        PREDICTION_METRIC,
        "external metrics value of prediction for HorizontalPodAutoscaler",
        &[
            "targetKind",
            "targetName",
            "targetNamespace",
            "resourceIdentifier",
            "algorithm",
        ],
    ),
    (
        TSP_METRIC,
        "model metrics value of tsp for Prediction",
        &[
            "targetKind",
            "targetName",
            "targetNamespace",
            "resourceIdentifier",
            "algorithm",
        ],
    ),
    (HPA_REPLICAS, "Replicas for HPA", &["namespace", "name"]),
    (
        EHPA_REPLICAS,
        "Replicas for Effective HPA",
        &["namespace", "name"],
    ),
    (
        ERROR_RATIO,
        "How far a TimeSeriesPrediction metric's last replaced prediction was from what happened: sum of |predicted - actual| over sum of |actual|, at the predicted instants now past",
        &["namespace", "name", "resource_identifier"],
    ),
    (
        ERROR_SAMPLES,
        "The instants compared in craned_prediction_error_ratio",
        &["namespace", "name", "resource_identifier"],
    ),
];

/// The prediction errors of the TSPs still there (`scores` by (namespace, name, id), uid).
pub fn prediction_errors(
    tsps: &[Arc<TimeSeriesPrediction>],
    scores: &[(MetricKey, String, Score)],
) -> Vec<Exported> {
    let mut out = Vec::new();
    for ((ns, name, id), uid, score) in scores {
        let live = tsps.iter().any(|t| {
            t.metadata.uid.as_ref() == Some(uid)
                && t.spec
                    .prediction_metrics
                    .iter()
                    .any(|m| &m.resource_identifier == id)
        });
        if !live {
            continue;
        }
        let labels = vec![ns.clone(), name.clone(), id.clone()];
        out.push(Exported {
            family: ERROR_RATIO,
            labels: labels.clone(),
            value: score.error_ratio,
            timestamp_ms: None,
        });
        #[allow(clippy::cast_precision_loss, reason = "a count of samples")]
        out.push(Exported {
            family: ERROR_SAMPLES,
            labels,
            value: score.samples as f64,
            timestamp_ms: None,
        });
    }
    out
}

/// One exported sample: its family, label values (in the family's order), value, and an
/// explicit timestamp (ms) when it is not now.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub family: &'static str,
    pub labels: Vec<String>,
    pub value: f64,
    pub timestamp_ms: Option<i64>,
}

/// Everything exported for these objects at `now`.
pub fn exported(
    ehpas: &[Arc<EffectiveHorizontalPodAutoscaler>],
    tsps: &[Arc<TimeSeriesPrediction>],
    hpas: &[Arc<HorizontalPodAutoscaler>],
    zone: &DefaultZone,
    now: Timestamp,
) -> Vec<Exported> {
    let mut out = Vec::new();
    for e in ehpas {
        let ns = e.namespace().unwrap_or_default();
        let target = &e.spec.scale_target_ref;
        if !e.spec.crons.is_empty()
            && let Ok(replicas) =
                replicas_for(e.spec.min_replicas.unwrap_or(1), &e.spec.crons, zone, now)
        {
            out.push(Exported {
                family: CRON_METRIC,
                labels: vec![
                    target.kind.clone(),
                    target.name.clone(),
                    ns.clone(),
                    CRON_IDENTIFIER.into(),
                ],
                value: f64::from(replicas),
                timestamp_ms: None,
            });
        }
        if let Some(expected) = e.status.as_ref().and_then(|s| s.expect_replicas) {
            out.push(Exported {
                family: EHPA_REPLICAS,
                labels: vec![ns.clone(), e.name_any()],
                value: f64::from(expected),
                timestamp_ms: None,
            });
        }
    }
    for t in tsps {
        let l = t.labels();
        if l.get(owned::MANAGED_BY).map(String::as_str) != Some(owned::EHPA_CONTROLLER) {
            continue;
        }
        let get = |k: &str| l.get(k).cloned().unwrap_or_default();
        let target = [
            get(owned::TARGET_KIND),
            get(owned::TARGET_NAME),
            get(owned::TARGET_NAMESPACE),
        ];
        let Some(status) = t.status.as_ref() else {
            continue;
        };
        let window = i64::from(t.spec.prediction_window_seconds);
        for m in &t.spec.prediction_metrics {
            let id = &m.resource_identifier;
            let mut labels = target.to_vec();
            labels.extend([id.clone(), m.algorithm.algorithm_type.clone()]);
            if let Ok(max) = predicted_max(status, id, window, now) {
                out.push(Exported {
                    family: PREDICTION_METRIC,
                    labels: labels.clone(),
                    value: max,
                    timestamp_ms: None,
                });
            }
            let next = status
                .prediction_metrics
                .iter()
                .find(|p| &p.resource_identifier == id && p.ready && p.prediction.len() == 1)
                .and_then(|p| {
                    p.prediction[0]
                        .samples
                        .iter()
                        .filter(|s| s.timestamp >= now.as_second())
                        .min_by_key(|s| s.timestamp)
                });
            if let Some(s) = next
                && let Ok(value) = s.value.parse::<f64>()
            {
                out.push(Exported {
                    family: TSP_METRIC,
                    labels,
                    value,
                    timestamp_ms: s.timestamp.checked_mul(1000),
                });
            }
        }
    }
    for h in hpas {
        if let Some(status) = &h.status {
            out.push(Exported {
                family: HPA_REPLICAS,
                labels: vec![h.namespace().unwrap_or_default(), h.name_any()],
                value: f64::from(status.desired_replicas),
                timestamp_ms: None,
            });
        }
    }
    out
}

/// The collector registered with craned's registry.
pub struct AutoscalingCollector {
    pub ehpas: Store<EffectiveHorizontalPodAutoscaler>,
    pub tsps: Store<TimeSeriesPrediction>,
    pub hpas: Store<HorizontalPodAutoscaler>,
    pub zone: DefaultZone,
    pub scores: Arc<Scores>,
    descs: Vec<Desc>,
}

impl AutoscalingCollector {
    pub fn new(
        ehpas: Store<EffectiveHorizontalPodAutoscaler>,
        tsps: Store<TimeSeriesPrediction>,
        hpas: Store<HorizontalPodAutoscaler>,
        zone: DefaultZone,
        scores: Arc<Scores>,
    ) -> Result<Self, prometheus::Error> {
        let descs = FAMILIES
            .iter()
            .map(|(name, help, labels)| {
                Desc::new(
                    (*name).to_owned(),
                    (*help).to_owned(),
                    labels.iter().map(|l| (*l).to_owned()).collect(),
                    Default::default(),
                )
            })
            .collect::<Result<_, _>>()?;
        Ok(AutoscalingCollector {
            ehpas,
            tsps,
            hpas,
            zone,
            scores,
            descs,
        })
    }
}

impl Collector for AutoscalingCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let tsps = self.tsps.state();
        let mut samples = exported(
            &self.ehpas.state(),
            &tsps,
            &self.hpas.state(),
            &self.zone,
            Timestamp::now(),
        );
        samples.extend(prediction_errors(&tsps, &self.scores.all()));
        families(&samples)
    }
}

/// The samples as metric families, every family present (empty when it has no series).
pub fn families(samples: &[Exported]) -> Vec<MetricFamily> {
    FAMILIES
        .iter()
        .map(|(name, help, label_names)| {
            let mut family = MetricFamily::default();
            family.set_name((*name).to_owned());
            family.set_help((*help).to_owned());
            family.set_field_type(MetricType::GAUGE);
            let metrics = samples
                .iter()
                .filter(|s| s.family == *name)
                .map(|s| {
                    let mut gauge = Gauge::default();
                    gauge.set_value(s.value);
                    let mut m = Metric::from_gauge(gauge);
                    m.set_label(
                        label_names
                            .iter()
                            .zip(&s.labels)
                            .map(|(n, v)| {
                                let mut pair = LabelPair::default();
                                pair.set_name((*n).to_owned());
                                pair.set_value(v.clone());
                                pair
                            })
                            .collect(),
                    );
                    if let Some(ts) = s.timestamp_ms {
                        m.set_timestamp_ms(ts);
                    }
                    m
                })
                .collect();
            family.set_metric(metrics);
            family
        })
        .collect()
}

#[cfg(test)]
mod tests;
