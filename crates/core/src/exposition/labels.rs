//! Label names and values as kube-state-metrics spells them.
//!
//! Kubernetes label and annotation keys (`app.kubernetes.io/name`,
//! `helm.sh/chart`, `camelCase`) are not valid Prometheus label names; ksm maps
//! them to `label_<snake_case>` names. Users have years of queries and alerts
//! written against those exact names, collisions included, so the mapping here
//! reproduces ksm's rules rather than inventing nicer ones.

use std::collections::{BTreeMap, HashMap};

/// Appends `v` with `\`, `"` and newline escaped, as the text format requires
/// inside a quoted label value.
pub fn escape_label_value_into(buf: &mut Vec<u8>, v: &str) {
    // Fast path: most label values (names, namespaces, UIDs) need no escaping.
    if !v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        buf.extend_from_slice(v.as_bytes());
        return;
    }
    for b in v.bytes() {
        match b {
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\n' => buf.extend_from_slice(b"\\n"),
            _ => buf.push(b),
        }
    }
}

/// Appends HELP text with `\` and newline escaped. Quotes stay as they are:
/// a HELP line is not quoted, and ksm leaves them alone.
pub fn escape_help_into(buf: &mut Vec<u8>, help: &str) {
    for b in help.bytes() {
        match b {
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'\n' => buf.extend_from_slice(b"\\n"),
            _ => buf.push(b),
        }
    }
}

/// Replaces every character outside `[a-zA-Z0-9_]` with `_`.
///
/// One `_` per Unicode scalar value (not per byte), because ksm's Go regexp
/// replacement works on runes: `größe` becomes `gr__e`, not `gr____e`.
/// A leading digit is left alone, as upstream does.
pub fn sanitize_label_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Inserts `_` between a lowercase letter or digit and a following uppercase
/// letter, then lowercases; pairs do not overlap (`aBC` -> `a_bc`), matching a
/// left-to-right regexp replacement of `([a-z0-9])([A-Z])`.
fn to_snake_case(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len() + 4);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c.is_ascii_lowercase() || c.is_ascii_digit())
            && i + 1 < b.len()
            && b[i + 1].is_ascii_uppercase()
        {
            out.push(c as char);
            out.push('_');
            out.push(b[i + 1].to_ascii_lowercase() as char);
            i += 2;
        } else {
            // `s` is sanitized ASCII here, so byte == char.
            out.push(c.to_ascii_lowercase() as char);
            i += 1;
        }
    }
    out
}

/// The Prometheus label name ksm derives from a Kubernetes key, before any
/// collision handling: `prefix + "_" + snake_case(sanitize(key))`.
pub fn kube_label_name(prefix: &str, key: &str) -> String {
    let mut s = String::with_capacity(prefix.len() + 1 + key.len());
    s.push_str(prefix);
    s.push('_');
    s.push_str(&to_snake_case(&sanitize_label_name(key)));
    s
}

/// Converts a Kubernetes label/annotation map into parallel key and value
/// lists, the way ksm's `kube_*_labels` / `kube_*_annotations` families do.
///
/// Output order is the byte order of the original Kubernetes keys (not of the
/// resulting names). When several keys map to the same name, every one of them
/// is renamed `<name>_conflictN` in that order, N counting from 1, skipping any
/// suffixed name already taken by another key, because Prometheus rejects a
/// sample with a duplicate label name.
pub fn kube_labels_to_prometheus<K, V, S>(
    prefix: &str,
    map: &HashMap<K, V, S>,
) -> (Vec<String>, Vec<String>)
where
    K: AsRef<str>,
    V: AsRef<str>,
{
    let sorted: BTreeMap<&str, &str> = map.iter().map(|(k, v)| (k.as_ref(), v.as_ref())).collect();
    kube_sorted_labels_to_prometheus(prefix, sorted)
}

/// [`kube_labels_to_prometheus`] for callers that already hold the keys in a
/// `BTreeMap` (k8s-openapi does), sparing a sort.
pub fn kube_btree_labels_to_prometheus<K, V>(
    prefix: &str,
    map: &BTreeMap<K, V>,
) -> (Vec<String>, Vec<String>)
where
    K: AsRef<str> + Ord,
    V: AsRef<str>,
{
    kube_sorted_labels_to_prometheus(prefix, map.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
}

fn kube_sorted_labels_to_prometheus<'a>(
    prefix: &str,
    sorted: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> (Vec<String>, Vec<String>) {
    let mut keys: Vec<String> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    // name -> index in `keys`
    let mut used: HashMap<String, usize> = HashMap::new();
    // base name -> last conflict number handed out
    let mut conflicts: HashMap<String, u32> = HashMap::new();

    let next_free = |base: &str, count: &mut u32, used: &HashMap<String, usize>| loop {
        *count += 1;
        let candidate = format!("{base}_conflict{count}");
        if !used.contains_key(&candidate) {
            return candidate;
        }
    };

    for (k, v) in sorted {
        let base = kube_label_name(prefix, k);
        let name = if let Some(count) = conflicts.get_mut(&base) {
            next_free(&base, count, &used)
        } else if let Some(idx) = used.remove(&base) {
            // First collision: the key already emitted under `base` becomes
            // `_conflict1` (or the next free one) and this one takes the next.
            let mut count = 0;
            let renamed = next_free(&base, &mut count, &used);
            keys[idx] = renamed.clone();
            used.insert(renamed, idx);
            let name = next_free(&base, &mut count, &used);
            conflicts.insert(base, count);
            name
        } else {
            base
        };
        used.insert(name.clone(), keys.len());
        keys.push(name);
        values.push(v.to_owned());
    }
    (keys, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        let (k, v) = kube_labels_to_prometheus("label", &map);
        k.into_iter().zip(v).collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn escaping() {
        let mut b = Vec::new();
        escape_label_value_into(&mut b, "a\\b\"c\nd\te");
        assert_eq!(b, b"a\\\\b\\\"c\\nd\te");
        let mut b = Vec::new();
        escape_help_into(&mut b, "a\\b\"c\nd");
        assert_eq!(b, b"a\\\\b\"c\\nd");
    }

    #[test]
    fn sanitize() {
        assert_eq!(
            sanitize_label_name("app.kubernetes.io/name"),
            "app_kubernetes_io_name"
        );
        assert_eq!(sanitize_label_name("größe"), "gr__e");
        assert_eq!(sanitize_label_name("9lives"), "9lives");
        assert_eq!(sanitize_label_name(""), "");
    }

    #[test]
    fn snake_case() {
        assert_eq!(to_snake_case("camelCase"), "camel_case");
        assert_eq!(to_snake_case("snake_camelCase"), "snake_camel_case");
        assert_eq!(to_snake_case("aBC"), "a_bc");
        assert_eq!(to_snake_case("aBcD"), "a_bc_d");
        assert_eq!(to_snake_case("a1B2C"), "a1_b2_c");
        assert_eq!(to_snake_case("ABC"), "abc");
    }

    #[test]
    fn simple_and_camel() {
        assert_eq!(
            conv(&[("camelCase", "camel_case")]),
            pairs(&[("label_camel_case", "camel_case")])
        );
        assert_eq!(
            conv(&[("app.kubernetes.io/name", "x"), ("team", "y")]),
            pairs(&[("label_app_kubernetes_io_name", "x"), ("label_team", "y")])
        );
        assert!(conv(&[]).is_empty());
    }

    // Upstream's TestKubeLabelsToPrometheusLabels cases.
    #[test]
    fn conflicts_three_way() {
        let got = conv(&[
            ("conflicting_label1", "underscore"),
            ("conflicting.label1", "dot"),
            ("conflicting-label1", "hyphen"),
            ("conflicting.label2", "dot"),
            ("conflicting-label2", "hyphen"),
            ("conflicting_label2", "underscore"),
            ("conflicting-label3", "hyphen"),
            ("conflicting_label3", "underscore"),
            ("conflicting.label3", "dot"),
        ]);
        assert_eq!(
            got,
            pairs(&[
                ("label_conflicting_label1_conflict1", "hyphen"),
                ("label_conflicting_label2_conflict1", "hyphen"),
                ("label_conflicting_label3_conflict1", "hyphen"),
                ("label_conflicting_label1_conflict2", "dot"),
                ("label_conflicting_label2_conflict2", "dot"),
                ("label_conflicting_label3_conflict2", "dot"),
                ("label_conflicting_label1_conflict3", "underscore"),
                ("label_conflicting_label2_conflict3", "underscore"),
                ("label_conflicting_label3_conflict3", "underscore"),
            ])
        );
    }

    #[test]
    fn conflicts_camel_vs_snake() {
        assert_eq!(
            conv(&[
                ("conflicting_camelCase", "camel_case"),
                ("conflicting_camel_case", "snake_case")
            ]),
            pairs(&[
                ("label_conflicting_camel_case_conflict1", "camel_case"),
                ("label_conflicting_camel_case_conflict2", "snake_case"),
            ])
        );
    }

    #[test]
    fn conflict_suffix_skips_taken_name() {
        assert_eq!(
            conv(&[
                ("A.b.conflict1", "already_taken"),
                ("a-b", "dash"),
                ("a.b", "dot")
            ]),
            pairs(&[
                ("label_a_b_conflict1", "already_taken"),
                ("label_a_b_conflict2", "dash"),
                ("label_a_b_conflict3", "dot"),
            ])
        );
    }

    #[test]
    fn btree_variant_agrees() {
        let m: BTreeMap<String, String> = [("a.b", "1"), ("a-b", "2"), ("Zed", "3")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let h: HashMap<String, String> = m.clone().into_iter().collect();
        assert_eq!(
            kube_btree_labels_to_prometheus("annotation", &m),
            kube_labels_to_prometheus("annotation", &h)
        );
    }
}
