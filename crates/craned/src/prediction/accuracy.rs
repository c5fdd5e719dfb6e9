//! How far a prediction was from what then happened (pure): when a status is replaced, its
//! predicted samples that are now in the past are set against the query's actual values at
//! the same instants. The figure is the weighted absolute percentage error (WAPE),
//! `Σ|predicted − actual| / Σ|actual|`, over every series and instant that has both: unlike
//! a mean of per-sample percentages it stays finite when usage is near zero.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use ferrocrane_core::prometheus::RangeSeries;

use crate::crd::prediction::MetricTimeSeries;

/// One metric's last score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// `Σ|predicted − actual| / Σ|actual|` (0 is perfect; 0.25 is a quarter off).
    pub error_ratio: f64,
    /// The instants compared.
    pub samples: usize,
    /// When the compared span ended (Unix seconds).
    pub at: i64,
}

/// Scores `predicted` (a status's series) against `actual` (the query over the span they
/// covered, at their instants), up to `now`. None when nothing lines up, or everything
/// actual is zero (no scale to be off by).
pub fn score(predicted: &[MetricTimeSeries], actual: &[RangeSeries], now: i64) -> Option<Score> {
    let actual: HashMap<BTreeMap<&str, &str>, BTreeMap<i64, f64>> = actual
        .iter()
        .map(|s| {
            let labels = s
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let points = s
                .samples
                .iter()
                .map(|p| (p.timestamp_ms.div_euclid(1000), p.value))
                .collect();
            (labels, points)
        })
        .collect();
    let (mut off, mut total, mut samples) = (0.0, 0.0, 0usize);
    for series in predicted {
        let labels: BTreeMap<&str, &str> = series
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        let Some(points) = actual.get(&labels) else {
            continue;
        };
        for sample in series.samples.iter().filter(|s| s.timestamp <= now) {
            let (Ok(p), Some(a)) = (sample.value.parse::<f64>(), points.get(&sample.timestamp))
            else {
                continue;
            };
            if p.is_finite() && a.is_finite() {
                off += (p - a).abs();
                total += a.abs();
                samples += 1;
            }
        }
    }
    (samples > 0 && total > 0.0).then(|| Score {
        error_ratio: off / total,
        samples,
        at: now,
    })
}

/// A TSP metric: (namespace, name, resourceIdentifier).
pub type MetricKey = (String, String, String);

/// Each metric's TSP uid and last score.
type ByMetric = BTreeMap<MetricKey, (String, Score)>;

/// The last score of each TSP metric, for the exports; the uid lets deleted TSPs' scores go.
#[derive(Default)]
pub struct Scores {
    by_metric: Mutex<ByMetric>,
}

impl Scores {
    pub fn record(&self, namespace: &str, name: &str, id: &str, uid: &str, score: Score) {
        self.lock().insert(
            (namespace.to_owned(), name.to_owned(), id.to_owned()),
            (uid.to_owned(), score),
        );
    }

    /// Every score, as ((namespace, name, resourceIdentifier), uid, score).
    pub fn all(&self) -> Vec<(MetricKey, String, Score)> {
        self.lock()
            .iter()
            .map(|(k, (uid, s))| (k.clone(), uid.clone(), *s))
            .collect()
    }

    /// Forgets the scores of TSPs whose uid `keep` refuses (deleted ones).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock().retain(|_, (uid, _)| keep(uid));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByMetric> {
        self.by_metric.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::prediction::{Label, Sample};
    use ferrocrane_core::prometheus::Sample as Point;

    fn predicted(pod: &str, points: &[(i64, &str)]) -> MetricTimeSeries {
        MetricTimeSeries {
            labels: vec![Label {
                name: "pod".into(),
                value: pod.into(),
            }],
            samples: points
                .iter()
                .map(|(t, v)| Sample {
                    value: (*v).into(),
                    timestamp: *t,
                })
                .collect(),
        }
    }

    fn actual(pod: &str, points: &[(i64, f64)]) -> RangeSeries {
        RangeSeries {
            labels: [("pod".to_owned(), pod.to_owned())].into(),
            samples: points
                .iter()
                .map(|(t, v)| Point {
                    timestamp_ms: t * 1000,
                    value: *v,
                })
                .collect(),
        }
    }

    #[test]
    fn the_error_is_weighted_by_the_actual_values_and_matches_series_by_labels() {
        let p = [
            predicted("a", &[(60, "1.00000"), (120, "2.00000"), (180, "9.00000")]),
            predicted("b", &[(60, "0.50000")]),
            predicted("gone", &[(60, "7.00000")]),
        ];
        let a = [
            actual("a", &[(60, 1.5), (120, 2.0), (180, 1.0)]),
            actual("b", &[(60, 0.5)]),
        ];
        // Up to 120: |1-1.5| + |2-2| + |0.5-0.5| over 1.5 + 2 + 0.5; 180 is in the future.
        let s = score(&p, &a, 150).unwrap();
        assert_eq!(s.samples, 3);
        assert!((s.error_ratio - 0.5 / 4.0).abs() < 1e-12, "{s:?}");
        assert_eq!(s.at, 150);
    }

    #[test]
    fn nothing_to_compare_gives_no_score() {
        let p = [predicted("a", &[(60, "1.00000")])];
        assert_eq!(score(&p, &[], 100), None, "no actual series");
        assert_eq!(
            score(&p, &[actual("a", &[(120, 1.0)])], 100),
            None,
            "no common instant"
        );
        assert_eq!(
            score(&p, &[actual("a", &[(60, 0.0)])], 100),
            None,
            "all zero"
        );
        assert_eq!(
            score(&p, &[actual("a", &[(60, 1.0)])], 30),
            None,
            "all in the future"
        );
    }

    #[test]
    fn deleted_tsps_lose_their_scores() {
        let scores = Scores::default();
        let s = Score {
            error_ratio: 0.1,
            samples: 3,
            at: 1,
        };
        scores.record("ns", "web", "cpu", "uid-1", s);
        scores.record("ns", "db", "cpu", "uid-2", s);
        scores.retain(|uid| uid == "uid-2");
        let names: Vec<String> = scores.all().into_iter().map(|(k, _, _)| k.1).collect();
        assert_eq!(names, ["db"]);
    }
}
