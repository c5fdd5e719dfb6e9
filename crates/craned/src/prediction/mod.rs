//! Predictors: turn a usage history into an estimate.
//!
//! [`percentile`] is Crane's percentile predictor (VPA's histogram), [`dsp`] its DSP predictor
//! (FFT period detection). Both implement [`Predictor`]: history in, predicted series out.
//! [`accuracy`] scores a past prediction against what happened.

pub mod accuracy;
pub mod dsp;
pub mod percentile;
pub mod stats;

/// One point of a series: Unix seconds and a value (cores, bytes, ratio ...).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub timestamp: i64,
    pub value: f64,
}

impl Sample {
    pub const fn new(timestamp: i64, value: f64) -> Self {
        Sample { timestamp, value }
    }
}

/// Why a prediction could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredictionError {
    #[error("no samples in the history")]
    NoSamples,
    #[error("{0}")]
    InvalidConfig(String),
    /// The history has no shape the predictor can extend (DSP: no daily or weekly period).
    #[error("{0}")]
    Unpredictable(String),
}

/// A predictor: from the series of one signal (all pods of a workload's container, say) to the
/// predicted values over `[start, end)` every `step` seconds. The percentile predictor predicts a
/// flat line at its estimate, as Crane's does.
pub trait Predictor {
    fn name(&self) -> &'static str;

    /// The single estimate the history supports (the percentile predictor's value; for a
    /// predictor of shapes, the maximum of its prediction).
    fn estimate(&mut self, history: &[&[Sample]]) -> Result<f64, PredictionError>;

    fn predict(
        &mut self,
        history: &[&[Sample]],
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<Vec<Sample>, PredictionError> {
        let value = self.estimate(history)?;
        Ok(flat_series(value, start, end, step))
    }
}

/// `value` at every step-aligned time in `[start, end)` (Crane's `generateSamplesFromWindow`).
pub fn flat_series(value: f64, start: i64, end: i64, step: i64) -> Vec<Sample> {
    if step <= 0 || end <= start {
        return Vec::new();
    }
    let first = start - start.rem_euclid(step);
    (0..)
        .map(|i| first + i * step)
        .take_while(|&t| t < end)
        .map(|t| Sample::new(t, value))
        .collect()
}
