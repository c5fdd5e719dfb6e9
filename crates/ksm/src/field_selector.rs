//! Field selectors as apimachinery's `fields` package writes them: what ksm lists and
//! watches with (`--namespaces-denylist`, `--node`, `--track-unscheduled-pods`).

/// Escapes a field selector value as apimachinery's `fields.EscapeValue`.
fn escape_field_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `metadata.namespace!=a,metadata.namespace!=b` for a namespace denylist; empty for none.
pub fn namespace_denylist_field_selector(denylist: &[String]) -> String {
    denylist
        .iter()
        .map(|ns| format!("metadata.namespace!={}", escape_field_value(ns)))
        .collect::<Vec<_>>()
        .join(",")
}

/// `spec.nodeName=<node>`; empty for an empty node.
pub fn node_field_selector(node: &str) -> String {
    if node.is_empty() {
        String::new()
    } else {
        format!("spec.nodeName={}", escape_field_value(node))
    }
}

/// The AND of field selectors: the non-empty ones joined with `,`.
pub fn merge_field_selectors(selectors: &[&str]) -> String {
    selectors
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}
