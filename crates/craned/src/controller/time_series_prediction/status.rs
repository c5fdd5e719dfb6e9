//! A TimeSeriesPrediction's status, as Crane writes it: per metric its predicted series over
//! `[now, now + 2 × window]` (values with five decimals, Unix seconds) and whether they cover
//! it, and a `Ready` condition (`PredictSucceed`, or `PredictPartial` "not all metric
//! predicted", here followed by why). A status is refreshed once its series no longer reach
//! `now + window`, as Crane refreshes it, so consumers always see the next window.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::model::SeriesModel;
use crate::crd::prediction::{
    Label, MetricTimeSeries, PredictionMetricStatus, Sample, TimeSeriesPredictionStatus, reasons,
};

/// What is known of one metric of the spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Fitted: its models.
    Models(Vec<SeriesModel>),
    /// Not fitted yet (the first fit, or after a change).
    Pending,
    /// Why it cannot be predicted.
    Failed(String),
}

/// Crane's message of a partial prediction.
pub const PARTIAL: &str = "not all metric predicted";

/// The status for the spec's metrics (`(resourceIdentifier, outcome)` in spec order) at
/// `now` (Unix seconds) with the spec's `window` (seconds). What `previous` holds for a metric
/// stays while it still reaches `now + window` (pass `None` after a spec change).
pub fn build(
    metrics: &[(String, Outcome)],
    now: i64,
    window: i64,
    previous: Option<&TimeSeriesPredictionStatus>,
    transition_time: Time,
) -> TimeSeriesPredictionStatus {
    let end = now.saturating_add(window.saturating_mul(2));
    let mut statuses = Vec::with_capacity(metrics.len());
    let mut problems = Vec::new();
    for (id, outcome) in metrics {
        // A prediction that still reaches `now + window` stays as written: the status is
        // rewritten about once a window, not on every check.
        let kept = previous
            .and_then(|p| {
                p.prediction_metrics
                    .iter()
                    .find(|m| &m.resource_identifier == id)
            })
            .filter(|m| m.ready && covers(&m.prediction, now.saturating_add(window)));
        let status = match (outcome, kept) {
            (Outcome::Failed(why), _) => {
                problems.push(format!("{id}: {why}"));
                not_ready(id)
            }
            (_, Some(kept)) => kept.clone(),
            (Outcome::Models(models), None) => {
                let prediction = predicted(models, now, end);
                let ready = covers(&prediction, end);
                if !ready {
                    problems.push(format!(
                        "{id}: the prediction does not reach the window's end"
                    ));
                }
                PredictionMetricStatus {
                    resource_identifier: id.clone(),
                    prediction,
                    ready,
                }
            }
            (Outcome::Pending, None) => {
                problems.push(format!("{id}: the model is being fitted"));
                not_ready(id)
            }
        };
        statuses.push(status);
    }
    let condition = if problems.is_empty() && !statuses.is_empty() {
        ready_condition("True", reasons::PREDICT_SUCCEED, String::new())
    } else if statuses.is_empty() {
        ready_condition(
            "False",
            reasons::PREDICT_PARTIAL,
            format!("{PARTIAL}: the spec has no predictionMetrics"),
        )
    } else {
        ready_condition(
            "False",
            reasons::PREDICT_PARTIAL,
            format!("{PARTIAL}: {}", problems.join("; ")),
        )
    };
    TimeSeriesPredictionStatus {
        prediction_metrics: statuses,
        conditions: vec![with_transition(condition, previous, transition_time)],
    }
}

fn not_ready(id: &str) -> PredictionMetricStatus {
    PredictionMetricStatus {
        resource_identifier: id.to_owned(),
        prediction: Vec::new(),
        ready: false,
    }
}

/// Each series' samples over `[now, end]`, with its labels.
fn predicted(models: &[SeriesModel], now: i64, end: i64) -> Vec<MetricTimeSeries> {
    models
        .iter()
        .map(|m| MetricTimeSeries {
            labels: m
                .labels
                .iter()
                .map(|(name, value)| Label {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            samples: m
                .model
                .samples(now, end)
                .into_iter()
                .map(|s| Sample {
                    value: format!("{:.5}", s.value),
                    timestamp: s.timestamp,
                })
                .collect(),
        })
        .collect()
}

fn ready_condition(status: &str, reason: &str, message: String) -> Condition {
    Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        observed_generation: None,
    }
}

/// The transition time only moves when the condition's status does (Crane moves it on every
/// write).
fn with_transition(
    mut condition: Condition,
    previous: Option<&TimeSeriesPredictionStatus>,
    now: Time,
) -> Condition {
    let before = previous.and_then(|p| p.conditions.iter().find(|c| c.type_ == condition.type_));
    condition.last_transition_time = match before {
        Some(b) if b.status == condition.status => b.last_transition_time.clone(),
        _ => now,
    };
    condition
}

/// Every series has samples, and its last one reaches `until`.
fn covers(prediction: &[MetricTimeSeries], until: i64) -> bool {
    !prediction.is_empty()
        && prediction
            .iter()
            .all(|s| s.samples.last().is_some_and(|last| last.timestamp >= until))
}

/// Whether `status` still serves the spec's metrics (`ids`) at `now`: every one present and
/// ready, every series reaching `now + window` (to the minute, as Crane checks it).
pub fn is_current(
    status: &TimeSeriesPredictionStatus,
    ids: &[&str],
    now: i64,
    window: i64,
) -> bool {
    let until = (now.saturating_add(window)).div_euclid(60) * 60;
    status.prediction_metrics.len() == ids.len()
        && ids.iter().all(|id| {
            status
                .prediction_metrics
                .iter()
                .find(|m| m.resource_identifier == *id)
                .is_some_and(|m| m.ready && covers(&m.prediction, until))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::time_series_prediction::model::Model;

    fn time(s: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap())
    }

    fn flat(value: f64) -> Outcome {
        Outcome::Models(vec![SeriesModel {
            labels: Default::default(),
            model: Model::Flat { value, step: 60 },
        }])
    }

    #[test]
    fn a_fitted_metric_covers_twice_the_window_in_cranes_sample_format() {
        let s = build(
            &[("resource.cpu".into(), flat(0.123456))],
            6000,
            600,
            None,
            time(6000),
        );
        let m = &s.prediction_metrics[0];
        assert!(m.ready);
        let samples = &m.prediction[0].samples;
        assert_eq!(samples.first().unwrap().timestamp, 6000);
        assert_eq!(samples.last().unwrap().timestamp, 7200);
        assert_eq!(samples[0].value, "0.12346");
        assert_eq!(s.conditions[0].reason, "PredictSucceed");
        assert_eq!(s.conditions[0].status, "True");
        assert!(is_current(&s, &["resource.cpu"], 6000, 600));
        assert!(is_current(&s, &["resource.cpu"], 6600, 600));
        assert!(
            !is_current(&s, &["resource.cpu"], 6700, 600),
            "no longer reaches now + window"
        );
        assert!(
            !is_current(&s, &["resource.cpu", "resource.memory"], 6000, 600),
            "a new metric"
        );
    }

    #[test]
    fn a_failed_or_pending_metric_makes_it_partial_and_says_why() {
        let s = build(
            &[
                ("resource.cpu".into(), flat(1.0)),
                (
                    "pods.qps".into(),
                    Outcome::Failed("the history shows no daily or weekly period".into()),
                ),
                ("resource.memory".into(), Outcome::Pending),
            ],
            6000,
            600,
            None,
            time(6000),
        );
        let c = &s.conditions[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "PredictPartial")
        );
        assert_eq!(
            c.message,
            "not all metric predicted: pods.qps: the history shows no daily or weekly period; resource.memory: the model is being fitted"
        );
        assert_eq!(
            s.prediction_metrics
                .iter()
                .map(|m| m.ready)
                .collect::<Vec<_>>(),
            [true, false, false]
        );
    }

    #[test]
    fn a_written_prediction_stays_until_it_no_longer_reaches_the_window() {
        let first = build(
            &[("resource.cpu".into(), flat(1.0))],
            6000,
            600,
            None,
            time(6000),
        );
        let same = build(
            &[("resource.cpu".into(), flat(2.0))],
            6500,
            600,
            Some(&first),
            time(6500),
        );
        assert_eq!(same, first);
        let renewed = build(
            &[("resource.cpu".into(), flat(2.0))],
            6700,
            600,
            Some(&first),
            time(6700),
        );
        assert_eq!(
            renewed.prediction_metrics[0].prediction[0].samples[0].value,
            "2.00000"
        );
        assert_eq!(
            renewed.conditions, first.conditions,
            "still ready: the condition is unmoved"
        );
    }

    #[test]
    fn a_pending_metric_keeps_its_previous_prediction_while_it_lasts() {
        let first = build(
            &[("resource.cpu".into(), flat(1.0))],
            6000,
            600,
            None,
            time(6000),
        );
        let again = build(
            &[("resource.cpu".into(), Outcome::Pending)],
            6500,
            600,
            Some(&first),
            time(6500),
        );
        assert_eq!(again.prediction_metrics, first.prediction_metrics);
        assert_eq!(
            again.conditions[0].last_transition_time,
            time(6000),
            "still True: unmoved"
        );
        let later = build(
            &[("resource.cpu".into(), Outcome::Pending)],
            7000,
            600,
            Some(&first),
            time(7000),
        );
        assert!(!later.prediction_metrics[0].ready);
        assert_eq!(later.conditions[0].last_transition_time, time(7000));
    }
}
