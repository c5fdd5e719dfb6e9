//! Reading what `kubectl top` prints: its tables and the units it writes values in.

use std::collections::BTreeMap;

/// `kubectl top` rows keyed by the first column, the header dropped.
pub fn top_rows(table: &str) -> BTreeMap<String, Vec<String>> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut cols = l.split_whitespace().map(str::to_owned);
            Some((cols.next()?, cols.collect()))
        })
        .collect()
}

/// `250m` → 250, `2` → 2000 (kubectl prints millicores).
pub fn millicores(s: &str) -> Option<f64> {
    match s.strip_suffix('m') {
        Some(m) => m.parse().ok(),
        None => s.parse::<f64>().ok().map(|c| c * 1000.0),
    }
}

/// `64Mi` → 64.
pub fn mebibytes(s: &str) -> Option<f64> {
    s.strip_suffix("Mi")?.parse().ok()
}
