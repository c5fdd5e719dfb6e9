//! The measures the period search and the estimator choice use: autocorrelation peaks and
//! Crane's prediction error.

/// Crane's `isPeak`: a least-squares line over `[i-k, i]` rises and one over `[i, i+k]`
/// falls.
pub fn is_peak(x: &[f64], i: usize, k: usize) -> bool {
    let n = x.len();
    if i < 1 || i + 1 > n {
        return false;
    }
    let l = i.saturating_sub(k);
    let r = (n - 1).min(i + k);
    let rising = slope(x, l, i);
    let falling = slope(x, i, r);
    rising > 0.0 && falling < 0.0
}

/// The least-squares slope of `x[a..=b]` against the index (NaN for one point).
fn slope(x: &[f64], a: usize, b: usize) -> f64 {
    let (mut sx, mut sy, mut sxy, mut sxx) = (0.0, 0.0, 0.0, 0.0);
    for (j, &y) in x.iter().enumerate().take(b + 1).skip(a) {
        let xf = j as f64;
        sx += xf;
        sy += y;
        sxy += xf * y;
        sxx += xf * xf;
    }
    let n = (b + 1 - a) as f64;
    (n * sxy - sx * sy) / (n * sxx - sx * sx)
}

/// Crane's `accuracy.PredictionError`: MAPE where an under-prediction by a fraction `x` counts
/// as `-ln(1-x)/ln(1.25)`, or the MAE when an actual value is below 1e-3.
pub fn prediction_error(actual: &[f64], predicted: &[f64]) -> f64 {
    if actual.len() != predicted.len() || actual.is_empty() {
        return f64::INFINITY;
    }
    let n = actual.len() as f64;
    if actual.iter().all(|&a| a >= 1e-3) {
        let e: f64 = actual
            .iter()
            .zip(predicted)
            .map(|(&a, &p)| {
                if p < a {
                    -(1.0 - (a - p) / a).ln() / 1.25f64.ln()
                } else {
                    (p - a) / a
                }
            })
            .sum();
        return e / n;
    }
    actual
        .iter()
        .zip(predicted)
        .map(|(a, p)| (a - p).abs())
        .sum::<f64>()
        / n
}
