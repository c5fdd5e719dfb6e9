//! Crane's percentile predictor: VPA's histogram (`k8s.io/autoscaler/.../recommender/util`),
//! fed as Crane's `aggregateSignal` feeds it.
//!
//! * Buckets: linear (`bucketSize`, `maxValue`; Crane's defaults 0.1 core up to 100 cores,
//!   100 MiB up to 104857600000 bytes) or exponential (`firstBucketSize`, growth ratio), with
//!   VPA's bucket arithmetic, so the estimates equal Crane's to the bit.
//! * Each sample weighs `max(minSampleWeight, value)` (usage-weighted: an hour at 2 cores counts
//!   twice an hour at 1 core), `minSampleWeight` = 1e-5.
//! * Crane builds a **non-decaying** histogram (it declares a half-life but never uses it);
//!   [`Histogram::decaying`] is VPA's exponentially decaying variant, offered as an option: a
//!   sample `half_life` older than another weighs half as much.
//! * Estimate = percentile × (1 + margin) / target utilization.
//!
//! The bucket array is allocated once per histogram and reused with [`Histogram::reset`], so
//! adding a sample never allocates: one container's 10,080 samples take microseconds.

use super::{PredictionError, Predictor, Sample};

/// VPA's `maxDecayExponent`: renormalize before 2^exponent overflows.
const MAX_DECAY_EXPONENT: f64 = 100.0;

/// Crane's `defaultMinSampleWeight`.
pub const DEFAULT_MIN_SAMPLE_WEIGHT: f64 = 1e-5;
/// VPA's and Crane's default epsilon: a bucket lighter than this counts as empty.
pub const DEFAULT_EPSILON: f64 = 1e-10;

/// How values map to buckets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HistogramOptions {
    Linear {
        num_buckets: usize,
        bucket_size: f64,
        epsilon: f64,
    },
    Exponential {
        num_buckets: usize,
        first_bucket_size: f64,
        ratio: f64,
        epsilon: f64,
    },
}

impl HistogramOptions {
    /// VPA's `NewLinearHistogramOptions`: `ceil(max/size) + 1` buckets of equal size.
    pub fn linear(max_value: f64, bucket_size: f64, epsilon: f64) -> Result<Self, PredictionError> {
        if !(max_value > 0.0 && bucket_size > 0.0 && epsilon > 0.0) {
            return Err(PredictionError::InvalidConfig(
                "histogram maxValue, bucketSize and epsilon must be positive".into(),
            ));
        }
        let num_buckets = Self::bucket_count((max_value / bucket_size).ceil())?;
        Ok(HistogramOptions::Linear {
            num_buckets,
            bucket_size,
            epsilon,
        })
    }

    /// VPA's `NewExponentialHistogramOptions`: bucket `n` starts at
    /// `first * (ratio^n - 1) / (ratio - 1)`.
    pub fn exponential(
        max_value: f64,
        first_bucket_size: f64,
        ratio: f64,
        epsilon: f64,
    ) -> Result<Self, PredictionError> {
        if !(max_value > 0.0 && first_bucket_size > 0.0 && ratio > 1.0 && epsilon > 0.0) {
            return Err(PredictionError::InvalidConfig(
                "histogram maxValue, firstBucketSize and epsilon must be > 0, ratio > 1".into(),
            ));
        }
        let num_buckets = Self::bucket_count(
            (log(ratio, max_value * (ratio - 1.0) / first_bucket_size + 1.0)).ceil(),
        )?;
        Ok(HistogramOptions::Exponential {
            num_buckets,
            first_bucket_size,
            ratio,
            epsilon,
        })
    }

    /// `last_index + 1` buckets, checked while still a float: a typo such as bucketSize
    /// 0.0000001 would otherwise allocate gigabytes, and 1e-18 would saturate the cast and
    /// wrap the `+ 1` to an empty histogram that later indexes out of bounds.
    fn bucket_count(last_index: f64) -> Result<usize, PredictionError> {
        const MAX_BUCKETS: f64 = 1_000_000.0;
        let n = last_index + 1.0;
        if !(n.is_finite() && (1.0..=MAX_BUCKETS).contains(&n)) {
            return Err(PredictionError::InvalidConfig(format!(
                "histogram would have {n} buckets (at most 1000000)"
            )));
        }
        #[allow(
            clippy::cast_possible_truncation,
            reason = "in 1..=1e6 and integral: exact"
        )]
        let n = n as usize;
        Ok(n)
    }

    pub fn num_buckets(&self) -> usize {
        match *self {
            HistogramOptions::Linear { num_buckets, .. }
            | HistogramOptions::Exponential { num_buckets, .. } => num_buckets,
        }
    }

    pub fn epsilon(&self) -> f64 {
        match *self {
            HistogramOptions::Linear { epsilon, .. }
            | HistogramOptions::Exponential { epsilon, .. } => epsilon,
        }
    }

    /// The bucket holding `value` (below range → first, above → last).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a non-negative float saturates into usize and is then capped at the last bucket"
    )]
    pub fn find_bucket(&self, value: f64) -> usize {
        match *self {
            HistogramOptions::Linear {
                num_buckets,
                bucket_size,
                ..
            } => {
                let b = (value / bucket_size).trunc();
                if b.is_nan() || b < 0.0 {
                    0
                } else {
                    (b as usize).min(num_buckets - 1)
                }
            }
            HistogramOptions::Exponential {
                num_buckets,
                first_bucket_size,
                ratio,
                ..
            } => {
                if value.is_nan() || value < first_bucket_size {
                    return 0;
                }
                let b = log(ratio, value * (ratio - 1.0) / first_bucket_size + 1.0).trunc();
                (b as usize).min(num_buckets - 1)
            }
        }
    }

    /// Where bucket `bucket` starts.
    pub fn bucket_start(&self, bucket: usize) -> f64 {
        match *self {
            HistogramOptions::Linear { bucket_size, .. } => bucket as f64 * bucket_size,
            HistogramOptions::Exponential {
                first_bucket_size,
                ratio,
                ..
            } => {
                if bucket == 0 {
                    0.0
                } else {
                    first_bucket_size * (ratio.powf(bucket as f64) - 1.0) / (ratio - 1.0)
                }
            }
        }
    }
}

fn log(base: f64, x: f64) -> f64 {
    x.ln() / base.ln()
}

#[derive(Debug, Clone, Copy)]
struct Decay {
    half_life_secs: f64,
    /// Unix seconds weights are relative to; `None` until the first sample.
    reference: Option<i64>,
}

/// VPA's histogram, optionally decaying.
#[derive(Debug, Clone)]
pub struct Histogram {
    options: HistogramOptions,
    weights: Vec<f64>,
    total_weight: f64,
    min_bucket: usize,
    max_bucket: usize,
    decay: Option<Decay>,
}

impl Histogram {
    /// A non-decaying histogram (what Crane uses).
    pub fn new(options: HistogramOptions) -> Self {
        let n = options.num_buckets();
        Histogram {
            options,
            weights: vec![0.0; n],
            total_weight: 0.0,
            min_bucket: n - 1,
            max_bucket: 0,
            decay: None,
        }
    }

    /// VPA's exponentially decaying histogram: a sample's weight doubles every `half_life_secs`
    /// of its timestamp, so older samples count for less.
    pub fn decaying(options: HistogramOptions, half_life_secs: i64) -> Self {
        let mut h = Histogram::new(options);
        if half_life_secs > 0 {
            h.decay = Some(Decay {
                half_life_secs: half_life_secs as f64,
                reference: None,
            });
        }
        h
    }

    pub fn options(&self) -> &HistogramOptions {
        &self.options
    }

    /// Empties the histogram, keeping its buckets' memory.
    pub fn reset(&mut self) {
        self.weights.iter_mut().for_each(|w| *w = 0.0);
        self.total_weight = 0.0;
        self.min_bucket = self.weights.len() - 1;
        self.max_bucket = 0;
        if let Some(d) = &mut self.decay {
            d.reference = None;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.weights[self.min_bucket] < self.options.epsilon()
    }

    pub fn total_weight(&self) -> f64 {
        self.total_weight
    }

    /// Adds `value` with `weight` observed at `timestamp` (Unix seconds; only the decaying
    /// histogram looks at it). Negative or non-finite weights and non-finite values are ignored.
    pub fn add_sample(&mut self, value: f64, weight: f64, timestamp: i64) {
        if !value.is_finite() || !weight.is_finite() || weight < 0.0 {
            return;
        }
        let weight = match self.decay {
            Some(_) => weight * self.decay_factor(timestamp),
            None => weight,
        };
        let bucket = self.options.find_bucket(value);
        self.weights[bucket] += weight;
        self.total_weight += weight;
        let eps = self.options.epsilon();
        if bucket < self.min_bucket && self.weights[bucket] >= eps {
            self.min_bucket = bucket;
        }
        if bucket > self.max_bucket && self.weights[bucket] >= eps {
            self.max_bucket = bucket;
        }
    }

    fn decay_factor(&mut self, timestamp: i64) -> f64 {
        let Some(decay) = self.decay else { return 1.0 };
        let hl = decay.half_life_secs;
        let needs_shift = match decay.reference {
            None => true,
            Some(r) => (timestamp - r) as f64 > hl * MAX_DECAY_EXPONENT,
        };
        if needs_shift {
            self.shift_reference(timestamp);
        }
        let reference = self.decay.and_then(|d| d.reference).unwrap_or(timestamp);
        ((timestamp - reference) as f64 / hl).exp2()
    }

    /// Moves the reference to `timestamp` rounded to a multiple of the half-life, rescaling
    /// the weights so the percentiles do not change.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a timestamp rounded to a multiple of the half-life stays near the i64 it came from"
    )]
    fn shift_reference(&mut self, timestamp: i64) {
        let Some(decay) = self.decay else { return };
        let hl = decay.half_life_secs;
        let new_ref = ((timestamp as f64 / hl).round() * hl) as i64;
        if let Some(old) = decay.reference {
            let exponent = ((old - new_ref) as f64 / hl).round();
            self.scale(2f64.powf(exponent));
        }
        self.decay = Some(Decay {
            reference: Some(new_ref),
            ..decay
        });
    }

    fn scale(&mut self, factor: f64) {
        for w in &mut self.weights[self.min_bucket..=self.max_bucket.max(self.min_bucket)] {
            *w *= factor;
        }
        self.total_weight *= factor;
        let eps = self.options.epsilon();
        let last = self.weights.len() - 1;
        while self.weights[self.min_bucket] < eps && self.min_bucket < last {
            self.min_bucket += 1;
        }
        while self.weights[self.max_bucket] < eps && self.max_bucket > 0 {
            self.max_bucket -= 1;
        }
    }

    /// VPA's `Percentile`: the end of the first bucket where the cumulative weight reaches
    /// `p × total` (the start of the last bucket, which has no end). 0 when empty.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let threshold = p * self.total_weight;
        let mut partial = 0.0;
        let mut bucket = self.min_bucket;
        while bucket < self.max_bucket {
            partial += self.weights[bucket];
            if partial >= threshold {
                break;
            }
            bucket += 1;
        }
        if bucket < self.options.num_buckets() - 1 {
            self.options.bucket_start(bucket + 1)
        } else {
            self.options.bucket_start(bucket)
        }
    }
}

/// Everything the percentile predictor needs (Crane's `internalConfig`, without the query
/// parts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PercentileConfig {
    pub options: HistogramOptions,
    pub percentile: f64,
    pub margin_fraction: f64,
    pub target_utilization: f64,
    pub min_sample_weight: f64,
    /// `Some(secs)`: VPA's decaying histogram; `None`: Crane's non-decaying one.
    pub decay_half_life_secs: Option<i64>,
}

impl PercentileConfig {
    /// Crane's `defaultInternalConfig`: linear 0.1 up to 100, p99, no margin.
    pub fn crane_default() -> Self {
        PercentileConfig {
            options: HistogramOptions::Linear {
                num_buckets: 1001,
                bucket_size: 0.1,
                epsilon: DEFAULT_EPSILON,
            },
            percentile: 0.99,
            margin_fraction: 0.0,
            target_utilization: 1.0,
            min_sample_weight: DEFAULT_MIN_SAMPLE_WEIGHT,
            decay_half_life_secs: None,
        }
    }

    pub fn validate(&self) -> Result<(), PredictionError> {
        if !(self.percentile > 0.0 && self.percentile <= 1.0) {
            return Err(PredictionError::InvalidConfig(format!(
                "percentile {} is not in (0, 1]",
                self.percentile
            )));
        }
        if self.target_utilization.is_nan() || self.target_utilization <= 0.0 {
            return Err(PredictionError::InvalidConfig(format!(
                "target utilization {} must be positive",
                self.target_utilization
            )));
        }
        if self.margin_fraction.is_nan() || self.margin_fraction < 0.0 {
            return Err(PredictionError::InvalidConfig(format!(
                "margin fraction {} must not be negative",
                self.margin_fraction
            )));
        }
        Ok(())
    }
}

/// The percentile predictor; reuse one per worker so its histogram is allocated once.
#[derive(Debug, Clone)]
pub struct PercentilePredictor {
    config: PercentileConfig,
    histogram: Histogram,
}

impl PercentilePredictor {
    pub fn new(config: PercentileConfig) -> Result<Self, PredictionError> {
        config.validate()?;
        let histogram = match config.decay_half_life_secs {
            Some(hl) => Histogram::decaying(config.options, hl),
            None => Histogram::new(config.options),
        };
        Ok(PercentilePredictor { config, histogram })
    }

    pub fn config(&self) -> &PercentileConfig {
        &self.config
    }

    /// The histogram of the last [`Predictor::estimate`] call.
    pub fn histogram(&self) -> &Histogram {
        &self.histogram
    }

    /// Rebuilds the histogram from `history` (all series aggregated into one, as Crane's
    /// `aggregated: true`); samples before `not_before` are skipped. Returns how many were used.
    pub fn fill(&mut self, history: &[&[Sample]], not_before: i64) -> usize {
        self.histogram.reset();
        let mut used = 0;
        for series in history {
            for s in series.iter().filter(|s| s.timestamp >= not_before) {
                if !s.value.is_finite() {
                    continue;
                }
                let weight = self.config.min_sample_weight.max(s.value);
                self.histogram.add_sample(s.value, weight, s.timestamp);
                used += 1;
            }
        }
        used
    }

    /// percentile × (1 + margin) / target utilization of the current histogram, with Crane's
    /// operation order (so the float result is the same).
    pub fn current_estimate(&self) -> f64 {
        let p = self.histogram.percentile(self.config.percentile);
        p * (1.0 + self.config.margin_fraction) / self.config.target_utilization
    }
}

impl Predictor for PercentilePredictor {
    fn name(&self) -> &'static str {
        "Percentile"
    }

    fn estimate(&mut self, history: &[&[Sample]]) -> Result<f64, PredictionError> {
        if self.fill(history, i64::MIN) == 0 {
            return Err(PredictionError::NoSamples);
        }
        Ok(self.current_estimate())
    }
}

#[cfg(test)]
mod tests;
