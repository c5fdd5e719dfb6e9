//! Crane's DSP predictor (`pkg/prediction/dsp`): find a daily or weekly period in a usage
//! history with the FFT, and predict the next periods from the history's low-frequency and
//! strong components.
//!
//! The steps, as Crane takes them:
//! 1. **Preprocess** (`fillMissingData`, `removeExtremeOutliers`): samples before a gap of more
//!    than an hour are dropped; gaps that are whole multiples of the sample interval are filled
//!    linearly (any other spacing is an error); the series is cut, from its end, to whole
//!    hours; values above p99.9 or below p0.1 (montanaflynn) are replaced by their predecessor.
//! 2. **Find the period** (`FindPeriod`): on the last whole weeks if there are two or more,
//!    else on the last whole days. The power threshold is the 99th of the maximum spectral
//!    powers of 100 random permutations of the samples (a permutation keeps the values and
//!    destroys any period). Every frequency bin above it proposes its period `N/k` (longest
//!    first, each shorter than the last); a proposal is kept if the autocorrelation has a peak
//!    there (a least-squares line rises into it and falls after it, over up to 4 hours or half
//!    the period each side); the highest such peak wins. Only exactly one day or one week
//!    counts as periodic.
//! 3. **Choose an estimator** (`bestEstimator`): on the last whole periods, each estimator
//!    predicts the last period from the ones before; the smallest prediction error wins
//!    (MAPE with under-prediction amplified, MAE when a value is near zero).
//! 4. **Estimate** (`fftEstimator`): keep the spectrum's components of period ≥ 1 hour and
//!    the strongest ones (those at least as strong as the 100th strongest, the threshold
//!    raised to the estimator's low-amplitude floor but never above the 3rd — or 50th —
//!    strongest); inverse FFT; the last period, floored at 0.01, times (1 + margin), repeated
//!    for as many periods as the history had, is the prediction.
//!
//! Differences, on purpose: the permutations use a fixed-seed generator, so the same history
//! always gives the same answer (Crane seeds from the clock); the high-frequency filter treats
//! bin `k` and its mirror `N-k` as the same frequency (Crane zeroes the mirror of a weak
//! low-frequency component and keeps the component, which halves it in the inverse); several
//! series (a workload's pods) are summed per timestamp into one.

use std::fmt;

use rustfft::FftPlanner;
use rustfft::num_complex::Complex64;

use super::{PredictionError, Predictor, Sample};

mod analysis;
mod series;

pub use analysis::{is_peak, prediction_error};
#[cfg(test)]
use series::remove_extreme_outliers;
pub use series::{aggregate, preprocess};

pub const HOUR_SECS: i64 = 3600;
pub const DAY_SECS: i64 = 24 * HOUR_SECS;
pub const WEEK_SECS: i64 = 7 * DAY_SECS;

/// Crane's `MaxAutoCorrelationPeakSearchIntervalSeconds`.
const MAX_PEAK_SEARCH_SECS: i64 = 4 * HOUR_SECS;
/// Permutations behind the power threshold, and which of their maxima is the threshold.
const PERMUTATIONS: usize = 100;
const THRESHOLD_RANK: usize = 98;
/// Crane's `defaultFFTMinValue`: the floor of an FFT estimate.
const FFT_MIN_VALUE: f64 = 0.01;

/// One of Crane's estimators: how the next period is drawn from the past ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Estimator {
    /// The low-pass filtered history's last period.
    Fft {
        min_spectrum_items: usize,
        max_spectrum_items: usize,
        /// Hz; components of lower frequency are always kept (Crane: 1/3600).
        high_frequency_threshold: f64,
        low_amplitude_threshold: f64,
        margin_fraction: f64,
    },
    /// The maximum, at each point of the period, over all past periods.
    MaxValue { margin_fraction: f64 },
}

impl Estimator {
    /// Crane's FFT estimator defaults for the fields its `defaultEstimators` leave out.
    pub const fn fft(min_spectrum_items: usize, low_amplitude_threshold: f64, margin: f64) -> Self {
        Estimator::Fft {
            min_spectrum_items,
            max_spectrum_items: 100,
            high_frequency_threshold: 1.0 / 3600.0,
            low_amplitude_threshold,
            margin_fraction: margin,
        }
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Estimator::Fft {
                min_spectrum_items,
                max_spectrum_items,
                high_frequency_threshold,
                low_amplitude_threshold,
                margin_fraction,
            } => write!(
                f,
                "FFT {{min items {min_spectrum_items}, max items {max_spectrum_items}, high frequency {high_frequency_threshold} Hz, low amplitude {low_amplitude_threshold}, margin {margin_fraction}}}"
            ),
            Estimator::MaxValue { margin_fraction } => {
                write!(f, "max value {{margin {margin_fraction}}}")
            }
        }
    }
}

/// Crane's `defaultEstimators`.
pub fn default_estimators() -> Vec<Estimator> {
    let mut v = Vec::with_capacity(8);
    for (items, amplitude) in [(3, 1.0), (50, 0.05)] {
        for margin in [0.01, 0.10, 0.15, 0.20] {
            v.push(Estimator::fft(items, amplitude, margin));
        }
    }
    v
}

#[derive(Debug, Clone, PartialEq)]
pub struct DspConfig {
    /// Crane's `sampleInterval` (history resolution): 1m.
    pub sample_interval_secs: i64,
    pub estimators: Vec<Estimator>,
    /// Seed of the permutations behind the power threshold.
    pub seed: u64,
}

impl Default for DspConfig {
    fn default() -> Self {
        DspConfig {
            sample_interval_secs: 60,
            estimators: default_estimators(),
            seed: 0x5eed_c0ff_ee00_d5b0,
        }
    }
}

impl DspConfig {
    pub fn validate(&self) -> Result<(), PredictionError> {
        // Crane refuses a resolution above an hour: there would be no whole hour to cut to.
        if self.sample_interval_secs <= 0 || self.sample_interval_secs > HOUR_SECS {
            return Err(PredictionError::InvalidConfig(format!(
                "sample interval {}s must be in (0, 3600]",
                self.sample_interval_secs
            )));
        }
        if self.estimators.is_empty() {
            return Err(PredictionError::InvalidConfig(
                "at least one estimator is needed".into(),
            ));
        }
        for e in &self.estimators {
            if let Estimator::Fft {
                min_spectrum_items,
                max_spectrum_items,
                ..
            } = e
                && (*min_spectrum_items == 0 || *max_spectrum_items == 0)
            {
                return Err(PredictionError::InvalidConfig(format!(
                    "estimator {e}: spectrum item counts must be positive"
                )));
            }
        }
        Ok(())
    }
}

/// What the predictor concluded from a history.
#[derive(Debug, Clone, PartialEq)]
pub struct Forecast {
    pub period_secs: i64,
    /// Whole periods in the (preprocessed) history.
    pub periods: usize,
    /// Index into the config's estimators of the one chosen.
    pub estimator: usize,
    /// One period of predicted values, from `start` every `step` seconds.
    pub period_values: Vec<f64>,
    /// The first predicted timestamp: the history's last one plus one step.
    pub start: i64,
    pub step: i64,
}

impl Forecast {
    /// The prediction as Crane stores it: the period repeated `periods` times from `start`.
    pub fn samples(&self) -> Vec<Sample> {
        let n = self.period_values.len();
        (0..n * self.periods)
            .map(|i| Sample::new(self.start + i as i64 * self.step, self.period_values[i % n]))
            .collect()
    }

    pub fn max(&self) -> f64 {
        self.period_values
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// SplitMix64: a small, well-mixed generator, enough to shuffle samples reproducibly.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below 2^-40 for our sizes).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "(x * n) >> 64 is below n, a usize"
    )]
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }

    fn shuffle(&mut self, x: &mut [f64]) {
        for i in (1..x.len()).rev() {
            let j = self.below(i + 1);
            x.swap(i, j);
        }
    }
}

/// Forward and inverse FFTs with their plans cached per length.
struct Fft {
    planner: FftPlanner<f64>,
    scratch: Vec<Complex64>,
}

impl Fft {
    fn new() -> Self {
        Fft {
            planner: FftPlanner::new(),
            scratch: Vec::new(),
        }
    }

    fn forward_real(&mut self, x: &[f64], out: &mut Vec<Complex64>) {
        out.clear();
        out.extend(x.iter().map(|&v| Complex64::new(v, 0.0)));
        let plan = self.planner.plan_fft_forward(out.len());
        self.scratch
            .resize(plan.get_inplace_scratch_len(), Complex64::default());
        plan.process_with_scratch(out, &mut self.scratch);
    }

    /// Normalized (divided by N), as go-dsp's `IFFT`.
    fn inverse(&mut self, x: &mut [Complex64]) {
        let n = x.len();
        let plan = self.planner.plan_fft_inverse(n);
        self.scratch
            .resize(plan.get_inplace_scratch_len(), Complex64::default());
        plan.process_with_scratch(x, &mut self.scratch);
        let inv = 1.0 / n as f64;
        x.iter_mut().for_each(|c| *c *= inv);
    }
}

/// The DSP predictor. Keep one per worker: FFT plans are cached per length.
pub struct DspPredictor {
    config: DspConfig,
    fft: Fft,
}

impl fmt::Debug for DspPredictor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DspPredictor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl DspPredictor {
    pub fn new(config: DspConfig) -> Result<Self, PredictionError> {
        config.validate()?;
        Ok(DspPredictor {
            config,
            fft: Fft::new(),
        })
    }

    pub fn config(&self) -> &DspConfig {
        &self.config
    }

    /// The whole analysis of one history (several series are summed per timestamp).
    pub fn forecast(&mut self, history: &[&[Sample]]) -> Result<Forecast, PredictionError> {
        let step = self.config.sample_interval_secs;
        let series = aggregate(history);
        let (values, last_ts) = preprocess(&series, step)?;
        let period_secs = self.find_period(&values).ok_or_else(|| {
            PredictionError::Unpredictable("the history shows no daily or weekly period".into())
        })?;
        // A day or a week over a positive step; an absurd one yields no whole period.
        let per = usize::try_from(period_secs / step)
            .unwrap_or(usize::MAX)
            .max(1);
        let periods = values.len() / per;
        if periods < 2 {
            return Err(PredictionError::Unpredictable(format!(
                "the history holds {periods} whole period(s) of {period_secs}s, at least 2 are needed"
            )));
        }
        let signal = &values[values.len() - periods * per..];
        let estimator = self.best_estimator(signal, periods, per)?;
        let chosen = self.config.estimators[estimator];
        let period_values = self
            .run_estimator(&chosen, signal, per)
            .ok_or_else(|| PredictionError::Unpredictable("the history is too short".into()))?;
        Ok(Forecast {
            period_secs,
            periods,
            estimator,
            period_values,
            start: last_ts + step,
            step,
        })
    }

    /// Crane's `findPeriod`: the period of the last whole weeks (two or more), else of the
    /// last whole days; `Some` only for exactly a day or a week.
    pub fn find_period(&mut self, values: &[f64]) -> Option<i64> {
        let step = self.config.sample_interval_secs;
        for unit in [WEEK_SECS, DAY_SECS] {
            let per = usize::try_from(unit / step).unwrap_or(0);
            let m = values.len().checked_div(per).unwrap_or(0);
            if m > 1 {
                let found = self.period_of(&values[values.len() - m * per..])?;
                return (found == DAY_SECS || found == WEEK_SECS).then_some(found);
            }
        }
        None
    }

    /// Crane's `Signal.FindPeriod`, in seconds.
    pub fn period_of(&mut self, values: &[f64]) -> Option<i64> {
        let n = values.len();
        if n < 8 {
            return None;
        }
        let mut spectrum = Vec::with_capacity(n);
        let mut x = values.to_vec();
        let mut rng = SplitMix64(self.config.seed);
        let mut max_powers = Vec::with_capacity(PERMUTATIONS);
        for _ in 0..PERMUTATIONS {
            rng.shuffle(&mut x);
            self.fft.forward_real(&x, &mut spectrum);
            let pmax = spectrum[1..n / 2]
                .iter()
                .map(|c| c.norm())
                .fold(0.0, f64::max);
            max_powers.push(pmax);
        }
        max_powers.sort_by(f64::total_cmp);
        let threshold = max_powers[THRESHOLD_RANK];

        self.fft.forward_real(values, &mut spectrum);
        let mut hints: Vec<usize> = Vec::new();
        for (k, c) in spectrum.iter().enumerate().take(n / 2).skip(2) {
            if c.norm() > threshold {
                let h = n / k;
                if hints.last().is_none_or(|&last| last > h) {
                    hints.push(h);
                }
            }
        }
        if hints.is_empty() {
            return None;
        }

        let cor = self.autocorrelation(values)?;
        let max_r =
            usize::try_from(MAX_PEAK_SEARCH_SECS / self.config.sample_interval_secs).unwrap_or(0);
        let mut best: Option<(usize, f64)> = None;
        for &h in &hints {
            let r = max_r.min(h / 2);
            if is_peak(&cor, h, r) && best.is_none_or(|(_, v)| v < cor[h]) && cor[h] > 0.0 {
                best = Some((h, cor[h]));
            }
        }
        best.map(|(h, _)| h as i64 * self.config.sample_interval_secs)
    }

    /// Crane's `AutoCorrelation`: of the standardized samples, via the power spectrum.
    /// `None` for a constant series (no variance to correlate).
    fn autocorrelation(&mut self, values: &[f64]) -> Option<Vec<f64>> {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let std = var.sqrt();
        if !(std > 0.0 && std.is_finite()) {
            return None;
        }
        let z: Vec<f64> = values.iter().map(|v| (v - mean) / std).collect();
        let mut spec = Vec::with_capacity(z.len());
        self.fft.forward_real(&z, &mut spec);
        for c in &mut spec {
            *c = Complex64::new(c.norm_sqr(), 0.0);
        }
        self.fft.inverse(&mut spec);
        Some(spec.iter().map(|c| c.re / n).collect())
    }

    /// Crane's `bestEstimator`: each estimator predicts the last period from the others.
    fn best_estimator(
        &mut self,
        signal: &[f64],
        periods: usize,
        per: usize,
    ) -> Result<usize, PredictionError> {
        let history = &signal[..(periods - 1) * per];
        let actual = &signal[(periods - 1) * per..];
        let mut best: Option<(usize, f64)> = None;
        for i in 0..self.config.estimators.len() {
            let e = self.config.estimators[i];
            let Some(est) = self.run_estimator(&e, history, per) else {
                continue;
            };
            let pe = prediction_error(actual, &est);
            if pe.is_finite() && best.is_none_or(|(_, b)| pe < b) {
                best = Some((i, pe));
            }
        }
        best.map(|(i, _)| i).ok_or_else(|| {
            PredictionError::Unpredictable("no estimator could predict the last period".into())
        })
    }

    /// One period of prediction from `signal` (whole periods of `per` samples).
    fn run_estimator(&mut self, e: &Estimator, signal: &[f64], per: usize) -> Option<Vec<f64>> {
        if per == 0 || signal.len() < per {
            return None;
        }
        match *e {
            Estimator::MaxValue { margin_fraction } => {
                let n = signal.len();
                let cycles = n / per;
                Some(
                    (n - per..n)
                        .map(|i| {
                            let m = (0..cycles)
                                .map(|j| signal[i - per * j])
                                .fold(f64::NEG_INFINITY, f64::max);
                            m * (1.0 + margin_fraction)
                        })
                        .collect(),
                )
            }
            Estimator::Fft {
                min_spectrum_items,
                max_spectrum_items,
                high_frequency_threshold,
                low_amplitude_threshold,
                margin_fraction,
            } => {
                let n = signal.len();
                if n < 4 {
                    return None;
                }
                let nf = n as f64;
                let rate = 1.0 / self.config.sample_interval_secs as f64;
                let mut spectrum = Vec::with_capacity(n);
                self.fft.forward_real(signal, &mut spectrum);
                let mut amplitudes: Vec<f64> =
                    spectrum[1..n / 2].iter().map(|c| c.norm() / nf).collect();
                amplitudes.sort_by(|a, b| b.total_cmp(a));
                let mut min_amplitude = amplitudes[amplitudes.len().min(max_spectrum_items) - 1];
                if min_amplitude < low_amplitude_threshold {
                    min_amplitude = low_amplitude_threshold;
                }
                if amplitudes.len() >= min_spectrum_items
                    && amplitudes[min_spectrum_items - 1] < min_amplitude
                {
                    min_amplitude = amplitudes[min_spectrum_items - 1];
                }
                for (k, c) in spectrum.iter_mut().enumerate() {
                    let frequency = k.min(n - k) as f64 * rate / nf;
                    if c.norm() / nf < min_amplitude && frequency > high_frequency_threshold {
                        *c = Complex64::default();
                    }
                }
                self.fft.inverse(&mut spectrum);
                Some(
                    spectrum[n - per..]
                        .iter()
                        .map(|c| {
                            let a = if c.re <= 0.0 { FFT_MIN_VALUE } else { c.re };
                            a * (1.0 + margin_fraction)
                        })
                        .collect(),
                )
            }
        }
    }
}

impl Predictor for DspPredictor {
    fn name(&self) -> &'static str {
        "DSP"
    }

    /// The highest value of the predicted periods.
    fn estimate(&mut self, history: &[&[Sample]]) -> Result<f64, PredictionError> {
        Ok(self.forecast(history)?.max())
    }

    /// The predicted samples in `[start, end)` at the forecast's own step (`step` is the
    /// caller's hint; Crane returns its stored prediction's points).
    fn predict(
        &mut self,
        history: &[&[Sample]],
        start: i64,
        end: i64,
        _step: i64,
    ) -> Result<Vec<Sample>, PredictionError> {
        let f = self.forecast(history)?;
        Ok(f.samples()
            .into_iter()
            .filter(|s| s.timestamp >= start && s.timestamp < end)
            .collect())
    }
}

#[cfg(test)]
mod tests;
