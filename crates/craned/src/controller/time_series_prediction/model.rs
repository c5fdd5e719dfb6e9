//! A metric's fitted model: one per series its query returns, each able to give its
//! predicted samples over any window without refitting (a DSP model repeats its period, a
//! percentile model is a flat line at its estimate).

use std::collections::BTreeMap;

use ferrocrane_core::prometheus::RangeSeries;

use super::algorithm::ModelConfig;
use crate::datasource::summed;
use crate::prediction::dsp::DspPredictor;
use crate::prediction::percentile::PercentilePredictor;
use crate::prediction::{PredictionError, Predictor, Sample, flat_series};

/// How one series goes on.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// One period of values, the first at `start`, every `step` seconds, repeated.
    Periodic {
        values: Vec<f64>,
        start: i64,
        step: i64,
    },
    /// The same value at every step.
    Flat { value: f64, step: i64 },
}

/// A series' labels and its model.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesModel {
    pub labels: BTreeMap<String, String>,
    pub model: Model,
}

impl Model {
    pub fn fit(config: &ModelConfig, history: &[Sample]) -> Result<Model, PredictionError> {
        match config {
            ModelConfig::Dsp { config, .. } => {
                let forecast = DspPredictor::new(config.clone())?.forecast(&[history])?;
                Ok(Model::Periodic {
                    values: forecast.period_values,
                    start: forecast.start,
                    step: forecast.step,
                })
            }
            ModelConfig::Percentile {
                config,
                sample_interval_secs,
                ..
            } => {
                let value = PercentilePredictor::new(*config)?.estimate(&[history])?;
                Ok(Model::Flat {
                    value,
                    step: *sample_interval_secs,
                })
            }
        }
    }

    /// The predicted samples at the model's steps from `from` rounded down to a step, to
    /// `to` rounded up to one: they cover `[from, to]`.
    pub fn samples(&self, from: i64, to: i64) -> Vec<Sample> {
        match self {
            Model::Flat { value, step } => {
                flat_series(*value, from, to.saturating_add((*step).max(1)), *step)
            }
            Model::Periodic {
                values,
                start,
                step,
            } => {
                let (n, step) = (values.len() as i64, (*step).max(1));
                if n == 0 || to < from {
                    return Vec::new();
                }
                let first = (from - start).div_euclid(step);
                let last = (to - start + step - 1).div_euclid(step);
                (first..=last)
                    .filter_map(|k| {
                        let i = usize::try_from(k.rem_euclid(n)).ok()?;
                        Some(Sample::new(start + k * step, *values.get(i)?))
                    })
                    .collect()
            }
        }
    }
}

/// Fits every series of a query's answer; an empty answer, or any series that cannot be
/// fitted, is an error that says which.
pub fn fit_all(config: &ModelConfig, series: &[RangeSeries]) -> Result<Vec<SeriesModel>, String> {
    if series.is_empty() {
        return Err("the query returned no series over the history".into());
    }
    let mut models = Vec::with_capacity(series.len());
    let mut failures = Vec::new();
    for s in series {
        let history = summed(std::slice::from_ref(s));
        match Model::fit(config, &history) {
            Ok(model) => models.push(SeriesModel {
                labels: s.labels.clone().into_iter().collect(),
                model,
            }),
            Err(e) => failures.push(if s.labels.is_empty() {
                e.to_string()
            } else {
                format!("{}: {e}", describe(&s.labels))
            }),
        }
    }
    if failures.is_empty() {
        Ok(models)
    } else {
        Err(failures.join("; "))
    }
}

fn describe<'a>(labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    let parts: Vec<String> = labels
        .into_iter()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    format!("{{{}}}", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prediction::dsp::DspConfig;
    use crate::prediction::percentile::PercentileConfig;

    #[test]
    fn a_periodic_model_repeats_its_period_over_any_window() {
        let m = Model::Periodic {
            values: vec![1.0, 2.0, 3.0],
            start: 600,
            step: 60,
        };
        let s = m.samples(700, 900);
        let got: Vec<(i64, f64)> = s.iter().map(|s| (s.timestamp, s.value)).collect();
        assert_eq!(
            got,
            vec![(660, 2.0), (720, 3.0), (780, 1.0), (840, 2.0), (900, 3.0)]
        );
        assert!(m.samples(900, 800).is_empty());
    }

    #[test]
    fn a_flat_model_is_its_value_at_every_step() {
        let m = Model::Flat {
            value: 0.5,
            step: 60,
        };
        let s = m.samples(90, 240);
        assert_eq!(
            s.iter().map(|s| s.timestamp).collect::<Vec<_>>(),
            vec![60, 120, 180, 240]
        );
        assert!(s.iter().all(|s| s.value == 0.5));
    }

    fn series(labels: &[(&str, &str)], f: impl Fn(i64) -> f64, minutes: i64) -> RangeSeries {
        RangeSeries {
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            samples: (0..minutes)
                .map(|m| ferrocrane_core::prometheus::Sample {
                    timestamp_ms: m * 60_000,
                    value: f(m),
                })
                .collect(),
        }
    }

    #[test]
    fn every_series_is_fitted_with_its_labels_or_named_when_it_cannot_be() {
        let config = ModelConfig::Percentile {
            config: PercentileConfig::crane_default(),
            history_secs: 86_400,
            sample_interval_secs: 60,
        };
        let models = fit_all(
            &config,
            &[
                series(&[("pod", "a")], |_| 1.0, 100),
                series(&[("pod", "b")], |_| 2.0, 100),
            ],
        )
        .unwrap();
        assert_eq!(models.len(), 2);
        assert_eq!(models[1].labels["pod"], "b");
        assert_eq!(
            fit_all(&config, &[]).unwrap_err(),
            "the query returned no series over the history"
        );

        let dsp = ModelConfig::Dsp {
            config: DspConfig::default(),
            history_secs: 2 * 86_400,
        };
        let err = fit_all(&dsp, &[series(&[("pod", "flat")], |_| 1.0, 3000)]).unwrap_err();
        assert!(err.starts_with("{pod=\"flat\"}: "), "{err}");
    }

    #[test]
    fn a_daily_cycle_is_predicted_a_day_ahead() {
        let daily = |m: i64| 1.0 + (2.0 * std::f64::consts::PI * (m % 1440) as f64 / 1440.0).sin();
        let config = ModelConfig::Dsp {
            config: DspConfig::default(),
            history_secs: 3 * 86_400,
        };
        let models = fit_all(&config, &[series(&[], daily, 3 * 1440)]).unwrap();
        let end = 3 * 86_400;
        let ahead = models[0].model.samples(end, end + 86_400);
        // The peak (minute 360 of the day) comes back a day later, within a tenth.
        let peak = ahead
            .iter()
            .max_by(|a, b| a.value.total_cmp(&b.value))
            .unwrap();
        let minute_of_day = (peak.timestamp / 60) % 1440;
        assert!((300..=420).contains(&minute_of_day), "{minute_of_day}");
        assert!((peak.value - 2.0).abs() < 0.2, "{}", peak.value);
    }
}
