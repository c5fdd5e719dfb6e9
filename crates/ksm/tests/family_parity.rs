//! Every family ksm can emit equals the reference list of kube-state-metrics' families
//! (`tests/data/ksm-families.tsv`): names, types, stability, deprecation and opt-in.
//!
//! Compared as sets: several modules deliberately register their families in
//! upstream's registration order (which is the order they are served), and that is
//! not the order of the TSV, so the order within a resource is not checked here.

use std::collections::BTreeSet;

use ferrocrane_ksm::families::Stability;
use ferrocrane_ksm::registry::all_family_metadata;

/// `(resource, name, type, stability, deprecated, optin)` as the TSV spells them.
type Row = (String, String, String, String, String, String);

fn reference() -> BTreeSet<Row> {
    let text = include_str!("data/ksm-families.tsv");
    let mut rows = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 6, "ksm-families.tsv line {}: {line:?}", i + 1);
        // The header line (its resource column reads `resource`).
        if cols[0] == "resource" {
            continue;
        }
        let row = (
            cols[0].to_string(),
            cols[1].to_string(),
            cols[2].to_string(),
            cols[3].to_string(),
            cols[4].to_string(),
            cols[5].to_string(),
        );
        assert!(
            rows.insert(row),
            "ksm-families.tsv line {}: duplicate row",
            i + 1
        );
    }
    rows
}

fn ours() -> BTreeSet<Row> {
    let mut rows = BTreeSet::new();
    for m in all_family_metadata() {
        let row = (
            m.module.to_string(),
            m.name.to_string(),
            format!("{:?}", m.kind),
            match m.stability {
                Stability::Stable => "STABLE",
                Stability::Alpha => "ALPHA",
            }
            .to_string(),
            m.deprecated_since.unwrap_or("").to_string(),
            if m.opt_in { "True" } else { "False" }.to_string(),
        );
        assert!(rows.insert(row.clone()), "family defined twice: {row:?}");
    }
    rows
}

fn show(row: &Row) -> String {
    format!(
        "{:<32} {:<70} {:<8} {:<7} deprecated={:<8} optin={}",
        row.0, row.1, row.2, row.3, row.4, row.5
    )
}

#[test]
fn families_equal_reference_list() {
    let want = reference();
    let got = ours();
    if want == got {
        return;
    }
    let mut report = String::from("families differ from tests/data/ksm-families.tsv\n");
    report.push_str("  - in the reference list, not emitted as listed:\n");
    for row in want.difference(&got) {
        report.push_str(&format!("      {}\n", show(row)));
    }
    report.push_str("  + emitted, not in the reference list as such:\n");
    for row in got.difference(&want) {
        report.push_str(&format!("      {}\n", show(row)));
    }
    panic!("{report}");
}

#[test]
fn family_names_are_unique_across_resources() {
    let mut seen = BTreeSet::new();
    for m in all_family_metadata() {
        assert!(seen.insert(m.name), "{} is defined twice", m.name);
    }
}
