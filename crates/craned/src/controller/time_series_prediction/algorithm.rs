//! A TimeSeriesPrediction's algorithm (every knob a string, as Crane's API has them) as a
//! predictor configuration. An empty knob takes Crane's default; a knob that does not parse
//! is an error that names it (Crane logs it and silently uses all the defaults instead).

use crate::crd::prediction::{Algorithm, Dsp, FftEstimator, Percentile, algorithm_types};
use crate::prediction::dsp::{DAY_SECS, DspConfig, Estimator, HOUR_SECS, default_estimators};
use crate::prediction::percentile::{
    DEFAULT_EPSILON, DEFAULT_MIN_SAMPLE_WEIGHT, HistogramOptions, PercentileConfig,
};
use crate::recommender::config::parse_duration_secs;

/// Crane's DSP defaults: a minute's resolution, 15 days of history (at least two).
const DSP_HISTORY_SECS: i64 = 15 * DAY_SECS;
const DSP_MIN_HISTORY_SECS: i64 = 2 * DAY_SECS;
/// Crane's percentile defaults.
const PERCENTILE_HISTORY_SECS: i64 = 7 * DAY_SECS;
const SAMPLE_INTERVAL_SECS: i64 = 60;

/// A knob that does not parse, or a combination Crane refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{knob}: {reason}")]
pub struct AlgorithmError {
    pub knob: String,
    pub reason: String,
}

fn error(knob: &str, reason: impl Into<String>) -> AlgorithmError {
    AlgorithmError {
        knob: knob.to_owned(),
        reason: reason.into(),
    }
}

/// How a metric's model is fitted: which predictor, over how much history at which step.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelConfig {
    Dsp {
        config: DspConfig,
        history_secs: i64,
    },
    Percentile {
        config: PercentileConfig,
        history_secs: i64,
        sample_interval_secs: i64,
    },
}

impl ModelConfig {
    pub fn from_api(algorithm: &Algorithm) -> Result<ModelConfig, AlgorithmError> {
        match algorithm.algorithm_type.as_str() {
            algorithm_types::DSP => dsp(algorithm.dsp.as_ref()),
            algorithm_types::PERCENTILE => percentile(algorithm.percentile.as_ref()),
            other => Err(error(
                "algorithm.algorithmType",
                format!("{other:?} is neither dsp nor percentile"),
            )),
        }
    }

    /// The history's resolution: the range query's step.
    pub fn step_secs(&self) -> i64 {
        match self {
            ModelConfig::Dsp { config, .. } => config.sample_interval_secs,
            ModelConfig::Percentile {
                sample_interval_secs,
                ..
            } => *sample_interval_secs,
        }
    }

    pub fn history_secs(&self) -> i64 {
        match self {
            ModelConfig::Dsp { history_secs, .. }
            | ModelConfig::Percentile { history_secs, .. } => *history_secs,
        }
    }
}

fn duration(knob: &str, text: &str, default: i64) -> Result<i64, AlgorithmError> {
    if text.trim().is_empty() {
        return Ok(default);
    }
    match parse_duration_secs(text.trim()) {
        Some(secs) if secs > 0 => Ok(secs),
        _ => Err(error(
            knob,
            format!("{text:?} is not a positive duration such as 1m or 7d"),
        )),
    }
}

fn number(knob: &str, text: &str, default: f64) -> Result<f64, AlgorithmError> {
    if text.trim().is_empty() {
        return Ok(default);
    }
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| error(knob, format!("{text:?} is not a number")))
}

fn dsp(api: Option<&Dsp>) -> Result<ModelConfig, AlgorithmError> {
    let default = Dsp::default();
    let api = api.unwrap_or(&default);
    let sample_interval_secs = duration(
        "dsp.sampleInterval",
        &api.sample_interval,
        SAMPLE_INTERVAL_SECS,
    )?;
    if sample_interval_secs > HOUR_SECS {
        return Err(error("dsp.sampleInterval", "at most 1h"));
    }
    let history_secs = duration("dsp.historyLength", &api.history_length, DSP_HISTORY_SECS)?;
    if history_secs < DSP_MIN_HISTORY_SECS {
        return Err(error(
            "dsp.historyLength",
            "at least 48h: two days to find a daily period in",
        ));
    }
    let mut estimators = Vec::new();
    for (i, e) in api.estimators.max_value.iter().enumerate() {
        let knob = format!("dsp.estimators.maxValue[{i}].marginFraction");
        estimators.push(Estimator::MaxValue {
            margin_fraction: number(&knob, &e.margin_fraction, 0.0)?,
        });
    }
    for (i, e) in api.estimators.fft.iter().enumerate() {
        estimators.push(fft(i, e)?);
    }
    if estimators.is_empty() {
        estimators = default_estimators();
    }
    let config = DspConfig {
        sample_interval_secs,
        estimators,
        ..DspConfig::default()
    };
    config.validate().map_err(|e| error("dsp", e.to_string()))?;
    Ok(ModelConfig::Dsp {
        config,
        history_secs,
    })
}

fn fft(i: usize, e: &FftEstimator) -> Result<Estimator, AlgorithmError> {
    let knob = |k: &str| format!("dsp.estimators.fft[{i}].{k}");
    let defaults = Estimator::fft(3, 1.0, 0.0);
    let Estimator::Fft {
        max_spectrum_items: default_max,
        high_frequency_threshold: default_high,
        ..
    } = defaults
    else {
        return Err(error(&knob(""), "no FFT defaults"));
    };
    let items = |k: &str, v: Option<i32>, default: usize| match v {
        None => Ok(default),
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| error(&knob(k), format!("{n} is not positive"))),
    };
    Ok(Estimator::Fft {
        min_spectrum_items: items("minNumOfSpectrumItems", e.min_num_of_spectrum_items, 3)?,
        max_spectrum_items: items(
            "maxNumOfSpectrumItems",
            e.max_num_of_spectrum_items,
            default_max,
        )?,
        high_frequency_threshold: number(
            &knob("highFrequencyThreshold"),
            &e.high_frequency_threshold,
            default_high,
        )?,
        low_amplitude_threshold: number(
            &knob("lowAmplitudeThreshold"),
            &e.low_amplitude_threshold,
            1.0,
        )?,
        margin_fraction: number(&knob("marginFraction"), &e.margin_fraction, 0.0)?,
    })
}

fn percentile(api: Option<&Percentile>) -> Result<ModelConfig, AlgorithmError> {
    let default = Percentile::default();
    let api = api.unwrap_or(&default);
    let sample_interval_secs = duration(
        "percentile.sampleInterval",
        &api.sample_interval,
        SAMPLE_INTERVAL_SECS,
    )?;
    let history_secs = duration(
        "percentile.historyLength",
        &api.history_length,
        PERCENTILE_HISTORY_SECS,
    )?;
    let h = &api.histogram;
    let epsilon = number("percentile.histogram.epsilon", &h.epsilon, DEFAULT_EPSILON)?;
    let max_value = number("percentile.histogram.maxValue", &h.max_value, 100.0)?;
    let options = if !h.bucket_size_growth_ratio.is_empty() && !h.first_bucket_size.is_empty() {
        HistogramOptions::exponential(
            max_value,
            number(
                "percentile.histogram.firstBucketSize",
                &h.first_bucket_size,
                0.0,
            )?,
            number(
                "percentile.histogram.bucketSizeGrowthRatio",
                &h.bucket_size_growth_ratio,
                0.0,
            )?,
            epsilon,
        )
    } else {
        HistogramOptions::linear(
            max_value,
            number("percentile.histogram.bucketSize", &h.bucket_size, 0.1)?,
            epsilon,
        )
    }
    .map_err(|e| error("percentile.histogram", e.to_string()))?;
    let config = PercentileConfig {
        options,
        percentile: number("percentile.percentile", &api.percentile, 0.99)?,
        margin_fraction: number("percentile.marginFraction", &api.margin_fraction, 0.0)?,
        target_utilization: number("percentile.targetUtilization", &api.target_utilization, 1.0)?,
        min_sample_weight: number(
            "percentile.minSampleWeight",
            &api.min_sample_weight,
            DEFAULT_MIN_SAMPLE_WEIGHT,
        )?,
        decay_half_life_secs: None,
    };
    config
        .validate()
        .map_err(|e| error("percentile", e.to_string()))?;
    Ok(ModelConfig::Percentile {
        config,
        history_secs,
        sample_interval_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::prediction::{Estimators, HistogramConfig, MaxValueEstimator};

    fn algorithm(type_: &str) -> Algorithm {
        Algorithm {
            algorithm_type: type_.into(),
            ..Algorithm::default()
        }
    }

    #[test]
    fn empty_knobs_take_cranes_defaults() {
        let ModelConfig::Dsp {
            config,
            history_secs,
        } = ModelConfig::from_api(&algorithm("dsp")).unwrap()
        else {
            panic!("dsp")
        };
        assert_eq!(config, DspConfig::default());
        assert_eq!(history_secs, 15 * DAY_SECS);
        let p = ModelConfig::from_api(&algorithm("percentile")).unwrap();
        let ModelConfig::Percentile {
            config,
            history_secs,
            sample_interval_secs,
        } = p
        else {
            panic!("percentile")
        };
        assert_eq!(config, PercentileConfig::crane_default());
        assert_eq!((history_secs, sample_interval_secs), (7 * DAY_SECS, 60));
    }

    #[test]
    fn given_knobs_are_used() {
        let mut a = algorithm("dsp");
        a.dsp = Some(Dsp {
            sample_interval: "5m".into(),
            history_length: "3d".into(),
            estimators: Estimators {
                max_value: vec![MaxValueEstimator {
                    margin_fraction: "0.1".into(),
                }],
                fft: vec![],
            },
        });
        let m = ModelConfig::from_api(&a).unwrap();
        assert_eq!((m.step_secs(), m.history_secs()), (300, 3 * DAY_SECS));
        let ModelConfig::Dsp { config, .. } = m else {
            panic!("dsp")
        };
        assert_eq!(
            config.estimators,
            vec![Estimator::MaxValue {
                margin_fraction: 0.1
            }]
        );

        let mut a = algorithm("percentile");
        a.percentile = Some(Percentile {
            percentile: "0.95".into(),
            margin_fraction: "0.2".into(),
            histogram: HistogramConfig {
                max_value: "10000".into(),
                bucket_size: "10".into(),
                ..HistogramConfig::default()
            },
            ..Percentile::default()
        });
        let ModelConfig::Percentile { config, .. } = ModelConfig::from_api(&a).unwrap() else {
            panic!("percentile")
        };
        assert_eq!((config.percentile, config.margin_fraction), (0.95, 0.2));
        assert!(
            matches!(config.options, HistogramOptions::Linear { bucket_size, .. } if bucket_size == 10.0)
        );
    }

    #[test]
    fn bad_knobs_name_themselves() {
        let err = |a: &Algorithm| ModelConfig::from_api(a).unwrap_err().to_string();
        assert_eq!(
            err(&algorithm("arima")),
            "algorithm.algorithmType: \"arima\" is neither dsp nor percentile"
        );
        let mut a = algorithm("dsp");
        a.dsp = Some(Dsp {
            history_length: "1d".into(),
            ..Dsp::default()
        });
        assert_eq!(
            err(&a),
            "dsp.historyLength: at least 48h: two days to find a daily period in"
        );
        a.dsp = Some(Dsp {
            sample_interval: "soon".into(),
            ..Dsp::default()
        });
        assert!(err(&a).starts_with("dsp.sampleInterval: \"soon\""));
        let mut a = algorithm("percentile");
        a.percentile = Some(Percentile {
            percentile: "ninety".into(),
            ..Percentile::default()
        });
        assert_eq!(err(&a), "percentile.percentile: \"ninety\" is not a number");
        a.percentile = Some(Percentile {
            percentile: "1.5".into(),
            ..Percentile::default()
        });
        assert!(err(&a).starts_with("percentile: percentile 1.5"));
    }
}
