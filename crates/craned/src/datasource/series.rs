//! Range query results as the recommenders take them (pure): per container and pod, or summed
//! into one series.

use std::collections::BTreeMap;

use ferrocrane_core::prometheus::RangeSeries;

use crate::prediction::Sample;

/// One pod's samples of one container.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSamples {
    pub pod: String,
    pub samples: Vec<Sample>,
}

/// One resource's history of one workload: container → one series per pod, pods by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerSeries {
    pub containers: BTreeMap<String, Vec<PodSamples>>,
}

impl ContainerSeries {
    /// Groups `max by (container, pod)` results; series without a container label, or without
    /// a finite sample, are dropped.
    pub fn from_range(series: Vec<RangeSeries>) -> Self {
        let mut out = ContainerSeries::default();
        for s in series {
            let Some(container) = s.labels.get("container").filter(|c| !c.is_empty()) else {
                continue;
            };
            let samples: Vec<Sample> = s
                .samples
                .iter()
                .filter(|p| p.value.is_finite())
                .map(|p| Sample::new(p.timestamp_ms.div_euclid(1000), p.value))
                .collect();
            if !samples.is_empty() {
                let pod = s.labels.get("pod").cloned().unwrap_or_default();
                out.push(container, pod, samples);
            }
        }
        out
    }

    /// Adds a pod's series of a container, keeping the container's pods ordered by name.
    pub fn push(&mut self, container: &str, pod: String, samples: Vec<Sample>) {
        let pods = self.containers.entry(container.to_string()).or_default();
        let at = pods.partition_point(|p| p.pod <= pod);
        pods.insert(at, PodSamples { pod, samples });
    }

    /// A container's per-pod series as the recommenders take them.
    pub fn per_pod(&self, container: &str) -> Vec<&[Sample]> {
        self.pods(container).into_iter().map(|(_, s)| s).collect()
    }

    /// A container's series with their pods' names (the report draws one line per pod).
    pub fn pods(&self, container: &str) -> Vec<(&str, &[Sample])> {
        self.containers
            .get(container)
            .map(|v| {
                v.iter()
                    .map(|p| (p.pod.as_str(), p.samples.as_slice()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every container of every pod summed per timestamp: the workload total (what Crane's
    /// `sum(...)` workload expressions return).
    pub fn total(&self) -> Vec<Sample> {
        let mut sums: BTreeMap<i64, f64> = BTreeMap::new();
        for s in self.containers.values().flatten().flat_map(|p| &p.samples) {
            *sums.entry(s.timestamp).or_default() += s.value;
        }
        sums.into_iter().map(|(t, v)| Sample::new(t, v)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.containers.is_empty()
    }
}

/// Range series summed per timestamp, non-finite values dropped.
pub fn summed(series: &[RangeSeries]) -> Vec<Sample> {
    let mut sums: BTreeMap<i64, f64> = BTreeMap::new();
    for p in series.iter().flat_map(|s| &s.samples) {
        if p.value.is_finite() {
            *sums.entry(p.timestamp_ms.div_euclid(1000)).or_default() += p.value;
        }
    }
    sums.into_iter().map(|(t, v)| Sample::new(t, v)).collect()
}

/// CPU and memory history of one workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadHistory {
    pub cpu: ContainerSeries,
    pub memory: ContainerSeries,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::prometheus::Sample as PSample;

    #[test]
    fn summed_adds_series_per_timestamp() {
        let s = summed(&[
            rs("", "a", &[(60, 1.0), (120, f64::NAN)]),
            rs("", "b", &[(60, 2.0), (180, 4.0)]),
        ]);
        assert_eq!(s, vec![Sample::new(60, 3.0), Sample::new(180, 4.0)]);
    }

    fn rs(container: &str, pod: &str, points: &[(i64, f64)]) -> RangeSeries {
        RangeSeries {
            labels: [
                ("container".to_string(), container.to_string()),
                ("pod".to_string(), pod.to_string()),
            ]
            .into(),
            samples: points
                .iter()
                .map(|&(t, v)| PSample {
                    timestamp_ms: t * 1000,
                    value: v,
                })
                .collect(),
        }
    }

    #[test]
    fn groups_per_container_and_sums_the_workload() {
        let s = ContainerSeries::from_range(vec![
            rs("app", "web-1", &[(60, 1.0), (120, 2.0)]),
            rs("app", "web-2", &[(60, 3.0), (120, f64::NAN)]),
            rs("sidecar", "web-1", &[(60, 0.5)]),
            rs("", "web-1", &[(60, 100.0)]),
        ]);
        assert_eq!(s.per_pod("app").len(), 2);
        assert_eq!(s.per_pod("sidecar"), vec![&[Sample::new(60, 0.5)][..]]);
        assert!(s.per_pod("none").is_empty());
        assert_eq!(s.total(), vec![Sample::new(60, 4.5), Sample::new(120, 2.0)]);
    }

    #[test]
    fn pods_keep_their_names_in_order() {
        let s = ContainerSeries::from_range(vec![
            rs("app", "web-2", &[(60, 2.0)]),
            rs("app", "web-1", &[(60, 1.0)]),
            rs("app", "web-3", &[(60, f64::NAN)]),
        ]);
        assert_eq!(
            s.pods("app"),
            vec![
                ("web-1", &[Sample::new(60, 1.0)][..]),
                ("web-2", &[Sample::new(60, 2.0)][..])
            ]
        );
    }

    /// Moved from the report, which summed its own (container, pod) map the same way.
    #[test]
    fn totals_sum_pods_and_containers() {
        let mut m = ContainerSeries::default();
        m.push("a", "p1".into(), vec![Sample::new(0, 1.0)]);
        m.push(
            "b",
            "p1".into(),
            vec![Sample::new(0, 2.0), Sample::new(60, 3.0)],
        );
        assert_eq!(m.total(), vec![Sample::new(0, 3.0), Sample::new(60, 3.0)]);
    }
}
