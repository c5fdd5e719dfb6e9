//! Prometheus text and OpenMetrics exposition read as families (HELP, TYPE and the multiset of
//! sample lines), and the differences between two readings: what the differential tests
//! compare between a Go original and ours.

use std::collections::{BTreeMap, BTreeSet};

/// One family as exposed: its header lines and its sample lines, sorted (order within a family
/// is not part of the contract; the lines themselves are, byte for byte).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Family {
    pub help: Option<String>,
    pub kind: Option<String>,
    pub samples: Vec<String>,
}

/// Every family of an exposition by name. A sample belongs to the family whose header came
/// last when its name extends that family's (OpenMetrics `_total`, `_info`, ...), otherwise
/// to a family of its own name.
pub fn families(text: &str) -> BTreeMap<String, Family> {
    let mut out: BTreeMap<String, Family> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.entry(name.to_string()).or_default().help = Some(help.to_string());
            current = Some(name.to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            out.entry(name.to_string()).or_default().kind = Some(kind.to_string());
            current = Some(name.to_string());
        } else if line.starts_with('#') || line.is_empty() {
            continue;
        } else {
            let name = line.split(['{', ' ']).next().unwrap_or(line);
            let family = match &current {
                Some(c) if name.starts_with(c.as_str()) => c.clone(),
                _ => name.to_string(),
            };
            out.entry(family)
                .or_default()
                .samples
                .push(line.to_string());
        }
    }
    for family in out.values_mut() {
        family.samples.sort();
    }
    out
}

/// One way two expositions differ, tied to its family. Rendered as one line, so differences
/// seen in several comparisons can be intersected as strings.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Difference {
    pub family: String,
    pub what: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.family, self.what)
    }
}

/// Every difference between `ours` and `theirs` (the original), family by family: a family
/// only one side has, a different HELP or TYPE, and each sample line one side has more
/// often than the other.
pub fn compare(
    ours: &BTreeMap<String, Family>,
    theirs: &BTreeMap<String, Family>,
) -> BTreeSet<Difference> {
    let mut out = BTreeSet::new();
    let names: BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
    for name in names {
        let diff = |what: String| Difference {
            family: name.clone(),
            what,
        };
        let (o, t) = match (ours.get(name), theirs.get(name)) {
            (Some(o), Some(t)) => (o, t),
            (Some(_), None) => {
                out.insert(diff("family only in ours".into()));
                continue;
            }
            (None, Some(_)) => {
                out.insert(diff("family only in the original".into()));
                continue;
            }
            (None, None) => continue,
        };
        if o.help != t.help {
            out.insert(diff(format!(
                "HELP ours {:?}, original {:?}",
                o.help, t.help
            )));
        }
        if o.kind != t.kind {
            out.insert(diff(format!(
                "TYPE ours {:?}, original {:?}",
                o.kind, t.kind
            )));
        }
        let (only_ours, only_theirs) = multiset_difference(&o.samples, &t.samples);
        out.extend(
            only_ours
                .into_iter()
                .map(|l| diff(format!("only ours: {l}"))),
        );
        out.extend(
            only_theirs
                .into_iter()
                .map(|l| diff(format!("only the original: {l}"))),
        );
    }
    out
}

/// The lines of sorted `a` not matched in sorted `b`, and the other way round; a line present
/// twice on one side and once on the other counts once.
fn multiset_difference(a: &[String], b: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                only_a.push(x.clone());
                i += 1;
            }
            (Some(_), Some(y)) => {
                only_b.push(y.clone());
                j += 1;
            }
            (Some(x), None) => {
                only_a.push(x.clone());
                i += 1;
            }
            (None, Some(y)) => {
                only_b.push(y.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    (only_a, only_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP a_total Things.\n# TYPE a_total counter\na_total{x=\"1\"} 2\na_total{x=\"0\"} 1\n# HELP b B.\n# TYPE b gauge\n";

    #[test]
    fn reads_families_with_sorted_samples_and_empty_ones() {
        let f = families(TEXT);
        assert_eq!(f.len(), 2);
        assert_eq!(f["a_total"].kind.as_deref(), Some("counter"));
        assert_eq!(
            f["a_total"].samples,
            ["a_total{x=\"0\"} 1", "a_total{x=\"1\"} 2"]
        );
        assert!(f["b"].samples.is_empty());
    }

    #[test]
    fn openmetrics_suffixes_stay_with_their_family() {
        let f = families("# TYPE c counter\nc_total 1\nc_created 5\n# EOF\n");
        assert_eq!(f.len(), 1);
        assert_eq!(f["c"].samples.len(), 2);
    }

    #[test]
    fn equal_expositions_in_another_order_do_not_differ() {
        let reordered = "# HELP b B.\n# TYPE b gauge\n# HELP a_total Things.\n# TYPE a_total counter\na_total{x=\"0\"} 1\na_total{x=\"1\"} 2\n";
        assert!(compare(&families(TEXT), &families(reordered)).is_empty());
    }

    #[test]
    fn reports_headers_missing_families_and_each_extra_line() {
        let theirs = "# HELP a_total Other.\n# TYPE a_total counter\na_total{x=\"1\"} 2\na_total{x=\"1\"} 2\n# HELP z Z.\n# TYPE z gauge\n";
        let d: Vec<String> = compare(&families(TEXT), &families(theirs))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            d,
            [
                "a_total: HELP ours Some(\"Things.\"), original Some(\"Other.\")",
                "a_total: only ours: a_total{x=\"0\"} 1",
                "a_total: only the original: a_total{x=\"1\"} 2",
                "b: family only in ours",
                "z: family only in the original",
            ]
        );
    }
}
