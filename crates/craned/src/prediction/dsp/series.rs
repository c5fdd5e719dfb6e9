//! Turning raw histories into the evenly spaced series the FFT needs (Crane's
//! `fillMissingData` and `removeExtremeOutliers`).

use std::collections::BTreeMap;

use super::super::{PredictionError, Sample, stats};
use super::HOUR_SECS;

/// Several series summed per timestamp, in time order (one series is copied as is).
pub fn aggregate(history: &[&[Sample]]) -> Vec<Sample> {
    if let [one] = history {
        let mut v = one.to_vec();
        v.sort_by_key(|s| s.timestamp);
        return v;
    }
    let mut sum: BTreeMap<i64, f64> = BTreeMap::new();
    for s in history.iter().flat_map(|s| s.iter()) {
        *sum.entry(s.timestamp).or_default() += s.value;
    }
    sum.into_iter().map(|(t, v)| Sample::new(t, v)).collect()
}

/// Crane's `fillMissingData` then `removeExtremeOutliers`: the values at every step from the
/// first sample after the last gap above an hour, cut to whole hours from the end, and the
/// timestamp of the last one.
pub fn preprocess(series: &[Sample], step: i64) -> Result<(Vec<f64>, i64), PredictionError> {
    let finite: Vec<Sample> = series
        .iter()
        .copied()
        .filter(|s| s.value.is_finite())
        .collect();
    let Some(last) = finite.last() else {
        return Err(PredictionError::NoSamples);
    };
    let mut begin = 0;
    for i in 1..finite.len() {
        let diff = finite[i].timestamp - finite[i - 1].timestamp;
        if diff > HOUR_SECS {
            begin = i;
        }
    }
    let kept = &finite[begin..];
    let mut values = Vec::with_capacity(kept.len());
    values.push(kept[0].value);
    for w in kept.windows(2) {
        let diff = w[1].timestamp - w[0].timestamp;
        if diff <= 0 || diff % step != 0 {
            return Err(PredictionError::Unpredictable(format!(
                "samples at {} and {} are not a whole number of {step}s steps apart",
                w[0].timestamp, w[1].timestamp
            )));
        }
        let times = diff / step;
        let unit = (w[1].value - w[0].value) / times as f64;
        for j in 1..times {
            values.push(w[0].value + unit * j as f64);
        }
        values.push(w[1].value);
    }
    // Whole hours only; a step longer than an hour leaves none.
    let per_hour = usize::try_from(HOUR_SECS / step).unwrap_or(0);
    let whole = values.len().checked_div(per_hour).unwrap_or(0) * per_hour;
    let mut values = values.split_off(values.len() - whole);
    remove_extreme_outliers(&mut values);
    Ok((values, last.timestamp))
}

pub(super) fn remove_extreme_outliers(values: &mut [f64]) {
    let mut scratch = values.to_vec();
    let (Some(high), Some(low)) = (
        stats::percentile(&mut scratch, 99.9),
        stats::percentile(&mut scratch, 0.1),
    ) else {
        return;
    };
    for i in 1..values.len() {
        if values[i] > high || values[i] < low {
            values[i] = values[i - 1];
        }
    }
}
