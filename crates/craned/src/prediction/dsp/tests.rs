use super::*;

const START: i64 = 1_714_521_600; // 2024-05-01T00:00:00Z, a midnight

/// `days` days at 1m of `f(t)` (t in seconds from START).
fn series(days: i64, f: impl Fn(i64) -> f64) -> Vec<Sample> {
    (0..days * 1440)
        .map(|i| {
            let t = i * 60;
            Sample::new(START + t, f(t))
        })
        .collect()
}

fn daily_sine(t: i64) -> f64 {
    2.0 + (2.0 * std::f64::consts::PI * t as f64 / DAY_SECS as f64).sin()
}

/// A deterministic white noise in [0.5, 1.5).
fn noise(seed: u64, n: usize) -> Vec<f64> {
    let mut r = SplitMix64(seed);
    (0..n)
        .map(|_| 0.5 + (r.next() >> 11) as f64 / (1u64 << 53) as f64)
        .collect()
}

fn predictor() -> DspPredictor {
    DspPredictor::new(DspConfig::default()).unwrap()
}

#[test]
fn daily_sine_has_a_one_day_period_and_is_predicted() {
    let history = series(7, daily_sine);
    let mut p = predictor();
    let f = p.forecast(&[&history]).unwrap();
    assert_eq!(f.period_secs, DAY_SECS);
    assert_eq!(f.periods, 7);
    assert_eq!(f.step, 60);
    assert_eq!(f.start, START + 7 * DAY_SECS);
    assert_eq!(f.period_values.len(), 1440);
    // The chosen estimator's margin is at most 20%; the shape is the sine's.
    let margin = match p.config().estimators[f.estimator] {
        Estimator::Fft {
            margin_fraction, ..
        } => margin_fraction,
        Estimator::MaxValue { margin_fraction } => margin_fraction,
    };
    assert_eq!(margin, 0.01, "the tightest margin fits a clean sine best");
    // Within 1e-4: the outlier step replaces the top 0.1% of samples (the crests) by their
    // predecessors, shaving a few millionths off the peak.
    for (i, &v) in f.period_values.iter().enumerate() {
        let expected = daily_sine(i as i64 * 60) * (1.0 + margin);
        assert!(
            (v - expected).abs() < 1e-4,
            "minute {i}: predicted {v}, expected {expected}"
        );
    }
    // The prediction repeats the period as many times as the history had, from the next
    // minute on, and the single estimate is its peak (3 cores + 1%).
    let samples = f.samples();
    assert_eq!(samples.len(), 7 * 1440);
    assert_eq!(samples[0].timestamp, START + 7 * DAY_SECS);
    assert_eq!(samples[1440].value, samples[0].value);
    assert!((p.estimate(&[&history]).unwrap() - 3.0 * 1.01).abs() < 1e-4);
    let next_hour = p
        .predict(
            &[&history],
            START + 7 * DAY_SECS,
            START + 7 * DAY_SECS + 3600,
            60,
        )
        .unwrap();
    assert_eq!(next_hour.len(), 60);
    assert!((next_hour[0].value - 2.0 * 1.01).abs() < 1e-4);
}

#[test]
fn noisy_daily_load_is_still_daily() {
    let n = noise(7, 7 * 1440);
    let history = series(7, |t| daily_sine(t) * 10.0 + n[(t / 60) as usize]);
    let mut p = predictor();
    let f = p.forecast(&[&history]).unwrap();
    assert_eq!(f.period_secs, DAY_SECS);
    // Noise of amplitude ±0.5 over a 10..30 swing: within 5% of the clean curve plus margin.
    for (i, &v) in f.period_values.iter().enumerate() {
        let clean = daily_sine(i as i64 * 60) * 10.0 + 1.0;
        assert!(
            (v - clean).abs() / clean < 0.25,
            "minute {i}: predicted {v}, clean {clean}"
        );
    }
}

#[test]
fn white_noise_has_no_period() {
    let mut p = predictor();
    for seed in 1..=5 {
        let n = noise(seed, 7 * 1440);
        let history = series(7, |t| n[(t / 60) as usize]);
        let (values, _) = preprocess(&history, 60).unwrap();
        assert_eq!(p.find_period(&values), None, "seed {seed}");
        assert!(matches!(
            p.forecast(&[&history]),
            Err(PredictionError::Unpredictable(_))
        ));
    }
}

#[test]
fn weekly_period_needs_two_weeks() {
    // Busy weekdays, quiet weekends.
    let weekly = |t: i64| {
        let day = (t / DAY_SECS) % 7;
        let hour = (t % DAY_SECS) / 3600;
        let base = if day < 5 { 10.0 } else { 2.0 };
        base + if (9..18).contains(&hour) { 5.0 } else { 0.0 }
    };
    let mut p = predictor();
    let f = p.forecast(&[&series(14, weekly)]).unwrap();
    assert_eq!(f.period_secs, WEEK_SECS);
    assert_eq!(f.periods, 2);
    // A Monday noon of the next week is busy, a Saturday noon is not.
    let monday_noon = 12 * 60;
    let saturday_noon = 5 * 1440 + 12 * 60;
    assert!(f.period_values[monday_noon] > 12.0);
    assert!(f.period_values[saturday_noon] < 8.0);
}

#[test]
fn constant_and_short_histories_are_refused() {
    let mut p = predictor();
    assert!(matches!(
        p.forecast(&[&series(7, |_| 1.0)]),
        Err(PredictionError::Unpredictable(_))
    ));
    // One day: no two periods to compare.
    assert!(matches!(
        p.forecast(&[&series(1, daily_sine)]),
        Err(PredictionError::Unpredictable(_))
    ));
    assert_eq!(p.forecast(&[]), Err(PredictionError::NoSamples));
    assert_eq!(p.forecast(&[&[]]), Err(PredictionError::NoSamples));
}

#[test]
fn preprocessing_fills_gaps_cuts_to_hours_and_drops_before_long_gaps() {
    // 0, 60, (120 missing), 180 ... : filled linearly.
    let mut s: Vec<Sample> = (0..125).map(|i| Sample::new(i * 60, i as f64)).collect();
    s.remove(2);
    let (v, last) = preprocess(&s, 60).unwrap();
    assert_eq!(last, 124 * 60);
    // 125 samples → the last 120 (two whole hours), starting at sample 5.
    assert_eq!(v.len(), 120);
    assert_eq!(v[0], 5.0);
    assert_eq!(v[119], 124.0);
    let (v, _) = preprocess(&s[..59], 60).unwrap();
    assert_eq!(v.len(), 60);
    assert_eq!(v[2], 2.0, "the filled sample");
    // A gap above an hour drops everything before it.
    let mut g: Vec<Sample> = (0..30).map(|i| Sample::new(i * 60, 1.0)).collect();
    g.extend((0..60).map(|i| Sample::new(10_000 * 60 + i * 60, 2.0)));
    let (v, _) = preprocess(&g, 60).unwrap();
    assert_eq!(v, vec![2.0; 60]);
    // Off-grid timestamps are refused, naming them.
    let bad = [Sample::new(0, 1.0), Sample::new(90, 1.0)];
    let e = preprocess(&bad, 60).unwrap_err().to_string();
    assert!(e.contains("0 and 90"), "{e}");
}

#[test]
fn extreme_outliers_take_their_predecessors_value() {
    let mut v: Vec<f64> = (0..2000).map(|i| (i % 10) as f64).collect();
    v[500] = 1000.0;
    v[700] = -1000.0;
    remove_extreme_outliers(&mut v);
    assert_eq!(v[500], v[499]);
    assert_eq!(v[700], v[699]);
    assert_eq!(v[501], 1.0);
}

#[test]
fn several_series_are_summed_per_timestamp() {
    let a = [Sample::new(60, 1.0), Sample::new(120, 2.0)];
    let b = [Sample::new(120, 10.0), Sample::new(180, 5.0)];
    assert_eq!(
        aggregate(&[&a, &b]),
        vec![
            Sample::new(60, 1.0),
            Sample::new(120, 12.0),
            Sample::new(180, 5.0)
        ]
    );
}

#[test]
fn prediction_error_is_cranes() {
    // Over-prediction by 10%: 0.1; under-prediction by 10%: -ln(0.9)/ln(1.25) ≈ 0.472.
    assert!((prediction_error(&[1.0], &[1.1]) - 0.1).abs() < 1e-12);
    assert!((prediction_error(&[1.0], &[0.9]) - 0.472_164_9).abs() < 1e-6);
    // An actual value near zero falls back to the MAE.
    assert_eq!(prediction_error(&[0.0, 1.0], &[0.5, 2.0]), 0.75);
    assert_eq!(prediction_error(&[1.0], &[]), f64::INFINITY);
}

#[test]
fn peaks_by_least_squares() {
    let x = [0.0, 1.0, 2.0, 3.0, 2.0, 1.0, 0.0];
    assert!(is_peak(&x, 3, 2));
    assert!(!is_peak(&x, 2, 2));
    assert!(!is_peak(&x, 0, 2));
    assert!(!is_peak(&x, 7, 2));
}

#[test]
fn max_value_estimator_and_config_checks() {
    let config = DspConfig {
        estimators: vec![Estimator::MaxValue {
            margin_fraction: 0.5,
        }],
        ..DspConfig::default()
    };
    let mut p = DspPredictor::new(config).unwrap();
    // Period 3: the max at each phase over the cycles, times 1.5.
    let est = p
        .run_estimator(
            &Estimator::MaxValue {
                margin_fraction: 0.5,
            },
            &[1.0, 5.0, 2.0, 3.0, 1.0, 4.0],
            3,
        )
        .unwrap();
    assert_eq!(est, vec![4.5, 7.5, 6.0]);
    assert_eq!(p.forecast(&[&series(7, daily_sine)]).unwrap().estimator, 0);

    let bad = |c: DspConfig| DspPredictor::new(c).unwrap_err().to_string();
    assert!(
        bad(DspConfig {
            sample_interval_secs: 7200,
            ..DspConfig::default()
        })
        .contains("sample interval")
    );
    assert!(
        bad(DspConfig {
            estimators: vec![],
            ..DspConfig::default()
        })
        .contains("estimator")
    );
}

#[test]
fn defaults_are_cranes() {
    let e = default_estimators();
    assert_eq!(e.len(), 8);
    assert_eq!(
        e[0],
        Estimator::Fft {
            min_spectrum_items: 3,
            max_spectrum_items: 100,
            high_frequency_threshold: 1.0 / 3600.0,
            low_amplitude_threshold: 1.0,
            margin_fraction: 0.01
        }
    );
    assert_eq!(e[7], Estimator::fft(50, 0.05, 0.20));
}

/// Issue 13: a step longer than an hour leaves no whole hour instead of dividing by zero.
#[test]
fn a_step_longer_than_an_hour_keeps_no_values() {
    let history: Vec<Sample> = (0..10).map(|i| Sample::new(i * 7200, 1.0)).collect();
    // Before, the whole-hours cut divided by zero here.
    let (values, _) = preprocess(&history, 7200).unwrap();
    assert!(values.is_empty(), "{} values", values.len());
}
