//! Go's syntax for flag values: pflag's comma-separated lists (`pkg/options/types.go`), the
//! `resource=[key,...]` allowlists and `strconv.ParseBool`. Durations are in [`super::duration`].

use std::collections::BTreeSet;

use crate::filters::{LabelsAllowList, WILDCARD};

/// A comma-separated list flag, possibly repeated: split, trim, drop empty entries.
pub fn split_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A set flag (resources, metric lists): [`split_list`], sorted and deduplicated.
pub fn split_set(values: &[String]) -> Vec<String> {
    split_list(values)
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

pub(super) const ALLOWLIST_FORMAT: &str =
    "invalid format, metric=[label1,label2,labeln...],metricN=[]";
pub(super) const ALLOWLIST_WILDCARDS: &str = "invalid format, only one wildcard per label allowed";

/// Parses `resource=[key,key],other=[*]` (upstream `LabelsAllowList.Set`). A repeated
/// resource keeps its last list; `resource=[]` is an empty list.
pub fn parse_labels_allowlist(value: &str) -> Result<LabelsAllowList, String> {
    let mut out = LabelsAllowList::new();
    let mut rest = value.trim();
    if rest.is_empty() {
        return Ok(out);
    }
    loop {
        let (name, after) = rest.split_once('=').ok_or(ALLOWLIST_FORMAT)?;
        let name = name.trim();
        if name.is_empty() || name.contains([',', '[', ']']) {
            return Err(ALLOWLIST_FORMAT.into());
        }
        let after = after.strip_prefix('[').ok_or(ALLOWLIST_FORMAT)?;
        let (inner, after) = after.split_once(']').ok_or(ALLOWLIST_FORMAT)?;
        if inner.contains(['=', '[']) {
            return Err(ALLOWLIST_FORMAT.into());
        }
        let keys: Vec<String> = if inner.trim().is_empty() {
            Vec::new()
        } else {
            let keys: Vec<String> = inner.split(',').map(|k| k.trim().to_owned()).collect();
            // Upstream rejects `a,,b` and `a,]`; a blank key is never useful.
            if keys.iter().any(String::is_empty) {
                return Err(ALLOWLIST_FORMAT.into());
            }
            keys
        };
        check_wildcards(&keys)?;
        out.insert(name.to_owned(), keys);
        if after.is_empty() {
            return Ok(out);
        }
        rest = after.strip_prefix(',').ok_or(ALLOWLIST_FORMAT)?;
        if rest.trim().is_empty() {
            return Err(ALLOWLIST_FORMAT.into());
        }
    }
}

pub(super) fn check_wildcards(keys: &[String]) -> Result<(), String> {
    if keys.iter().any(|k| k.matches(WILDCARD).count() > 1) {
        return Err(ALLOWLIST_WILDCARDS.into());
    }
    Ok(())
}

/// Go's `strconv.ParseBool`, which pflag uses for `--flag=value`.
pub fn parse_go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("invalid boolean {s:?}: use true or false")),
    }
}
