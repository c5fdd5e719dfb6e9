//! Which metric families and which Kubernetes label/annotation keys are exported.
//!
//! Family filtering follows kube-state-metrics v2.20 (`pkg/allowdenylist`, `pkg/optin` and the
//! composite filter in `pkg/metric_generator`):
//!
//! * every entry of `--metric-allowlist` / `--metric-denylist` is a regular expression, exact
//!   names included, matched **unanchored** (`kube_pod_info` also matches
//!   `kube_pod_info_extra`); write `^kube_pod_info$` to pin one name;
//! * the two lists are mutually exclusive; with neither, everything passes;
//! * an opt-in family must additionally match an entry of `--metric-opt-in-list` (also
//!   unanchored regular expressions); both checks must pass, allow/deny first.
//!
//! Label/annotation allowlists (`--metric-labels-allowlist pods=[app,team]`) resolve per
//! resource to a [`KeyAllowlist`]: a first-entry `*` allows every key (a `*` anywhere else is
//! ignored), a key with one `*` inside is a glob (`app.kubernetes.io/*`), an empty list or an
//! unlisted resource exports nothing, and a `*` resource applies its list to every enabled
//! resource, replacing any per-resource entries.

use std::collections::BTreeMap;

use regex::Regex;

use crate::families::{FamilyContext, KeyAllowlist};

/// What the `*` resource and the `*` key mean in the allowlists.
pub const WILDCARD: &str = "*";

/// A bad allow/deny/opt-in list or label allowlist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// Upstream's message, prefixed with the flags involved.
    #[error(
        "--metric-allowlist and --metric-denylist: allowlist and denylist are both set, \
         they are mutually exclusive, only one of them can be set"
    )]
    AllowAndDeny,

    #[error("{flag}={pattern:?}: invalid regular expression: {reason}")]
    InvalidRegex {
        flag: String,
        pattern: String,
        reason: String,
    },

    #[error("{flag}: resource {resource} does not exist. Available resources: {available}")]
    UnknownResource {
        flag: String,
        resource: String,
        available: String,
    },
}

/// The family filter of allow/deny and opt-in lists, compiled once.
#[derive(Debug, Clone)]
pub struct FamilyFilter {
    /// Allowlist or denylist patterns, whichever was set.
    list: Vec<Regex>,
    is_allowlist: bool,
    opt_in: Vec<Regex>,
}

impl Default for FamilyFilter {
    /// Everything except opt-in families.
    fn default() -> Self {
        FamilyFilter {
            list: Vec::new(),
            is_allowlist: false,
            opt_in: Vec::new(),
        }
    }
}

impl FamilyFilter {
    /// Compiles the three lists. Entries are deduplicated and sorted so the filter (and its
    /// [`status`](Self::status)) does not depend on flag order.
    pub fn new(
        allowlist: &[String],
        denylist: &[String],
        opt_in: &[String],
    ) -> Result<Self, FilterError> {
        if !allowlist.is_empty() && !denylist.is_empty() {
            return Err(FilterError::AllowAndDeny);
        }
        let (flag, source, is_allowlist) = if allowlist.is_empty() {
            ("--metric-denylist", denylist, false)
        } else {
            ("--metric-allowlist", allowlist, true)
        };
        Ok(FamilyFilter {
            list: compile_all(flag, source)?,
            is_allowlist,
            opt_in: compile_all("--metric-opt-in-list", opt_in)?,
        })
    }

    /// Whether a family passes allow/deny (upstream `AllowDenyList.IsIncluded`).
    pub fn passes_allow_deny(&self, name: &str) -> bool {
        let matched = self.list.iter().any(|r| r.is_match(name));
        matched == self.is_allowlist
    }

    /// Whether a family is exported: it passes allow/deny, and if it is opt-in, it matches the
    /// opt-in list.
    pub fn is_included(&self, name: &str, opt_in: bool) -> bool {
        self.passes_allow_deny(name) && (!opt_in || self.opt_in.iter().any(|r| r.is_match(name)))
    }

    /// Whether an allowlist (rather than a denylist or nothing) is in force.
    pub fn is_allowlist(&self) -> bool {
        self.is_allowlist
    }

    /// One line for the startup log, in upstream's words.
    pub fn status(&self) -> String {
        let items: Vec<&str> = self.list.iter().map(Regex::as_str).collect();
        let mut s = if self.is_allowlist {
            format!(
                "Including the following lists that were on allowlist: {}",
                items.join(", ")
            )
        } else {
            format!(
                "Excluding the following lists that were on denylist: {}",
                items.join(", ")
            )
        };
        if !self.opt_in.is_empty() {
            let opt: Vec<&str> = self.opt_in.iter().map(Regex::as_str).collect();
            s.push_str("; opted in: ");
            s.push_str(&opt.join(", "));
        }
        s
    }
}

fn compile_all(flag: &str, patterns: &[String]) -> Result<Vec<Regex>, FilterError> {
    let mut sorted: Vec<&String> = patterns.iter().collect();
    sorted.sort();
    sorted.dedup();
    sorted
        .into_iter()
        .map(|p| {
            Regex::new(p).map_err(|e| FilterError::InvalidRegex {
                flag: flag.to_owned(),
                pattern: p.clone(),
                reason: one_line_regex_error(&e),
            })
        })
        .collect()
}

/// `regex` errors span several lines (pattern, caret, message); keep the message.
fn one_line_regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let message = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_owned)
        .unwrap_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" "));
    if message.contains("look-around") || message.contains("backreferences") {
        // Upstream compiles allow/deny lists as ECMAScript (regexp2); say what we lack.
        format!("{message} (ferrocrane uses RE2-style regular expressions)")
    } else {
        message
    }
}

/// Parsed `--metric-labels-allowlist` / `--metric-annotations-allowlist`: resource → keys,
/// as written (before `*` expansion).
pub type LabelsAllowList = BTreeMap<String, Vec<String>>;

/// The keys of one resource's entry as a [`KeyAllowlist`] (upstream
/// `createPrometheusLabelKeysValues` plus the families' empty-list check).
pub fn key_allowlist(keys: &[String]) -> KeyAllowlist {
    match keys.first() {
        None => KeyAllowlist::None,
        Some(first) if first == WILDCARD => KeyAllowlist::All,
        Some(_) => KeyAllowlist::Keys(keys.to_vec()),
    }
}

/// Label or annotation allowlists resolved for the enabled resources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyAllowlists {
    by_resource: BTreeMap<String, KeyAllowlist>,
}

impl KeyAllowlists {
    /// Checks every resource name (known resource or `*`) and expands `*` to
    /// `enabled_resources`. `flag` names the flag in errors. `known` is the list of valid
    /// resource names (normally [`crate::registry::ALL_RESOURCES`]).
    pub fn resolve(
        flag: &str,
        list: &LabelsAllowList,
        enabled_resources: &[String],
        known: &[&str],
    ) -> Result<Self, FilterError> {
        for resource in list.keys() {
            if resource != WILDCARD && !known.contains(&resource.as_str()) {
                return Err(FilterError::UnknownResource {
                    flag: flag.to_owned(),
                    resource: resource.clone(),
                    available: known.join(","),
                });
            }
        }
        let by_resource = match list.get(WILDCARD) {
            // `*` takes precedence over every per-resource entry.
            Some(keys) => enabled_resources
                .iter()
                .map(|r| (r.clone(), key_allowlist(keys)))
                .collect(),
            None => list
                .iter()
                .map(|(r, keys)| (r.clone(), key_allowlist(keys)))
                .collect(),
        };
        Ok(KeyAllowlists { by_resource })
    }

    /// The allowlist of one resource; [`KeyAllowlist::None`] when it has no entry.
    pub fn for_resource(&self, resource: &str) -> KeyAllowlist {
        self.by_resource.get(resource).cloned().unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.by_resource.is_empty()
    }
}

/// The [`FamilyContext`] of one resource from the label and annotation allowlists.
pub fn family_context(
    labels: &KeyAllowlists,
    annotations: &KeyAllowlists,
    resource: &str,
) -> FamilyContext {
    FamilyContext {
        labels: labels.for_resource(resource),
        annotations: annotations.for_resource(resource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn no_lists_include_everything_but_opt_in() {
        let f = FamilyFilter::new(&[], &[], &[]).unwrap();
        assert!(f.is_included("kube_pod_info", false));
        assert!(!f.is_included("kube_pod_tolerations", true));
        assert!(!f.is_allowlist());
        assert!(FamilyFilter::default().is_included("x", false));
    }

    #[test]
    fn allow_and_deny_are_exclusive() {
        let e = FamilyFilter::new(&s(&["a"]), &s(&["b"]), &[]).unwrap_err();
        assert_eq!(e, FilterError::AllowAndDeny);
        assert!(e.to_string().contains("mutually exclusive"));
    }

    #[test]
    fn allowlist_is_unanchored_regex() {
        let f =
            FamilyFilter::new(&s(&["kube_pod_info", "^kube_node_.*_bytes$"]), &[], &[]).unwrap();
        assert!(f.is_allowlist());
        assert!(f.is_included("kube_pod_info", false));
        // Unanchored, as upstream: the exact name is also a substring pattern.
        assert!(f.is_included("kube_pod_info_extra", false));
        assert!(f.is_included("x_kube_pod_info", false));
        assert!(f.is_included("kube_node_memory_bytes", false));
        assert!(!f.is_included("kube_node_memory_bytes_total", false));
        assert!(!f.is_included("kube_deployment_labels", false));
    }

    #[test]
    fn denylist_excludes_matches() {
        let f = FamilyFilter::new(&[], &s(&["kube_.*_labels", "^kube_secret"]), &[]).unwrap();
        assert!(!f.is_included("kube_pod_labels", false));
        assert!(!f.is_included("kube_secret_info", false));
        assert!(f.is_included("kube_pod_info", false));
        assert!(f.is_included("x_kube_secret", false));
    }

    #[test]
    fn opt_in_needs_both_checks() {
        let f =
            FamilyFilter::new(&[], &s(&["kube_pod_tolerations"]), &s(&["kube_pod_tol"])).unwrap();
        // Opted in (unanchored) but denylisted: allow/deny wins.
        assert!(!f.is_included("kube_pod_tolerations", true));
        let f = FamilyFilter::new(&[], &[], &s(&["^kube_pod_tolerations$"])).unwrap();
        assert!(f.is_included("kube_pod_tolerations", true));
        assert!(!f.is_included("kube_pod_nodeselectors", true));
        // The opt-in list does not restrict regular families.
        assert!(f.is_included("kube_pod_info", false));
        // Allowlist + opt-in: an opt-in family must be on both.
        let f = FamilyFilter::new(
            &s(&["kube_pod_info"]),
            &[],
            &s(&["kube_pod_info", "kube_pod_tolerations"]),
        )
        .unwrap();
        assert!(f.is_included("kube_pod_info", true));
        assert!(!f.is_included("kube_pod_tolerations", true));
    }

    #[test]
    fn bad_regex_names_flag_and_pattern_on_one_line() {
        let e = FamilyFilter::new(&s(&["kube_(pod"]), &[], &[]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("--metric-allowlist=\"kube_(pod\": invalid regular expression"));
        assert!(!msg.contains('\n'), "{msg}");
        let e = FamilyFilter::new(&[], &s(&["kube_(?!pod)"]), &[]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("--metric-denylist="), "{msg}");
        assert!(msg.contains("look-around"), "{msg}");
        assert!(msg.contains("RE2"), "{msg}");
        let e = FamilyFilter::new(&[], &[], &s(&["["])).unwrap_err();
        assert!(e.to_string().starts_with("--metric-opt-in-list="));
    }

    #[test]
    fn status_reads_like_upstream() {
        let f = FamilyFilter::new(&s(&["b", "a", "a"]), &[], &[]).unwrap();
        assert_eq!(
            f.status(),
            "Including the following lists that were on allowlist: a, b"
        );
        let f = FamilyFilter::new(&[], &s(&["x"]), &s(&["y"])).unwrap();
        assert_eq!(
            f.status(),
            "Excluding the following lists that were on denylist: x; opted in: y"
        );
    }

    #[test]
    fn key_allowlist_first_entry_wildcard_only() {
        assert_eq!(key_allowlist(&[]), KeyAllowlist::None);
        assert_eq!(key_allowlist(&s(&["*"])), KeyAllowlist::All);
        assert_eq!(key_allowlist(&s(&["*", "foo"])), KeyAllowlist::All);
        let k = key_allowlist(&s(&["bar", "*"]));
        assert_eq!(k, KeyAllowlist::Keys(s(&["bar", "*"])));
        // The later `*` is ignored: only `bar` passes.
        assert!(k.allows("bar"));
        assert!(!k.allows("baz"));
    }

    #[test]
    fn key_allowlist_partial_wildcards() {
        let k = key_allowlist(&s(&["something.example.org/foo-*", "*-team", "app"]));
        assert!(k.allows("something.example.org/foo-bar"));
        assert!(k.allows("something.example.org/foo-"));
        assert!(!k.allows("something.example.org/fo"));
        assert!(!k.allows("xsomething.example.org/foo-bar"));
        assert!(k.allows("platform-team"));
        assert!(!k.allows("platform-teams"));
        assert!(k.allows("app"));
        assert!(!k.allows("apps"));
        // Regex metacharacters are literal.
        let k = key_allowlist(&s(&["a.b*"]));
        assert!(k.allows("a.bc"));
        assert!(!k.allows("axbc"));
        // More than one wildcard fails closed, as upstream.
        let k = key_allowlist(&s(&["*a*"]));
        assert!(!k.allows("a"));
        assert!(!k.allows("bab"));
    }

    fn allow(entries: &[(&str, &[&str])]) -> LabelsAllowList {
        entries.iter().map(|(r, k)| (r.to_string(), s(k))).collect()
    }

    const KNOWN: &[&str] = &["deployments", "pods", "nodes"];

    #[test]
    fn resolve_per_resource() {
        let l = KeyAllowlists::resolve(
            "--metric-labels-allowlist",
            &allow(&[("pods", &["app"]), ("nodes", &[])]),
            &s(&["pods", "nodes"]),
            KNOWN,
        )
        .unwrap();
        assert_eq!(l.for_resource("pods"), KeyAllowlist::Keys(s(&["app"])));
        assert_eq!(l.for_resource("nodes"), KeyAllowlist::None);
        assert_eq!(l.for_resource("deployments"), KeyAllowlist::None);
    }

    #[test]
    fn resolve_star_resource_overrides_everything() {
        let l = KeyAllowlists::resolve(
            "--metric-labels-allowlist",
            &allow(&[("*", &["*"]), ("pods", &["app"])]),
            &s(&["deployments", "pods"]),
            KNOWN,
        )
        .unwrap();
        assert_eq!(l.for_resource("pods"), KeyAllowlist::All);
        assert_eq!(l.for_resource("deployments"), KeyAllowlist::All);
        // Not enabled, so not expanded to.
        assert_eq!(l.for_resource("nodes"), KeyAllowlist::None);
    }

    #[test]
    fn resolve_rejects_unknown_resource() {
        let e = KeyAllowlists::resolve(
            "--metric-annotations-allowlist",
            &allow(&[("pod", &["app"])]),
            &s(&["pods"]),
            KNOWN,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--metric-annotations-allowlist: resource pod does not exist. \
             Available resources: deployments,pods,nodes"
        );
    }

    #[test]
    fn family_context_combines_both() {
        let labels = KeyAllowlists::resolve(
            "--metric-labels-allowlist",
            &allow(&[("pods", &["*"])]),
            &s(&["pods"]),
            KNOWN,
        )
        .unwrap();
        let ctx = family_context(&labels, &KeyAllowlists::default(), "pods");
        assert_eq!(ctx.labels, KeyAllowlist::All);
        assert_eq!(ctx.annotations, KeyAllowlist::None);
        assert!(KeyAllowlists::default().is_empty());
    }
}
