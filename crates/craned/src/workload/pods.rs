//! Which pods belong to a workload, as Prometheus sees them: by name.
//!
//! cAdvisor series carry the pod's name and no owner, so a workload's pods are found with
//! Crane's regexes (`GetPodNameReg` in `pkg/utils/expression_prom_default.go`): the workload's
//! name, a dash, and the suffix its controller appends. Each suffix admits no further dash, so
//! `app` never claims the pods of `app-gateway` of the same kind. Unlike Crane, the name is
//! escaped, so `app.v2` does not claim `app-v2`'s pods (an unescaped `.` matches any
//! character).
//!
//! Matching by name, like Crane, cannot tell kinds apart: a Deployment `app` also matches the
//! pods of a DaemonSet `app-gateway` (`app-gateway-x7k2p` reads as `<app>-<hash>-<5 chars>`),
//! and a kind Crane has no suffix for matches every pod whose name starts with `<name>-`.

/// What a workload's controller appends to the workload's name to name a pod.
fn pod_suffix(kind: &str) -> &'static str {
    match kind {
        // `<replicaset>-<5 chars>`, the ReplicaSet being `<deployment>-<pod-template-hash>`.
        "Deployment" => "[a-z0-9]+-[a-z0-9]{5}$",
        "ReplicaSet" => "[a-z0-9]+$",
        "DaemonSet" => "[a-z0-9]{5}$",
        // `<statefulset>-<ordinal>`.
        "StatefulSet" => "[0-9]+$",
        _ => ".*",
    }
}

/// The regex (RE2, as PromQL's `=~` takes it) matching the names of a workload's pods.
pub fn pod_name_regex(workload: &str, kind: &str) -> String {
    format!("^{}-{}", regex_escape(workload), pod_suffix(kind))
}

/// The regex matching exactly the named pods, and nothing when there are none.
pub fn exact_pods_regex(pods: &[&str]) -> String {
    let names: Vec<String> = pods.iter().map(|p| regex_escape(p)).collect();
    format!("^({})$", names.join("|"))
}

/// `s` as an RE2 regex that matches exactly `s`: every RE2 metacharacter gets a backslash
/// (Go's `regexp.QuoteMeta` set). Nothing else is escaped, because RE2 rejects a backslash
/// before a letter, a digit or a non-ASCII character.
pub fn regex_escape(s: &str) -> String {
    const META: &str = r"\.+*?()|[]{}^$";
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for c in s.chars() {
        if META.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex::Regex;

    /// PromQL anchors `=~` at both ends; so does this.
    fn promql_matcher(re: &str) -> Regex {
        Regex::new(&format!("^(?:{re})$")).unwrap_or_else(|e| panic!("{re}: {e}"))
    }

    #[test]
    fn regexes_are_cranes_with_the_name_escaped() {
        assert_eq!(
            pod_name_regex("web", "Deployment"),
            "^web-[a-z0-9]+-[a-z0-9]{5}$"
        );
        assert_eq!(pod_name_regex("db", "StatefulSet"), "^db-[0-9]+$");
        assert_eq!(pod_name_regex("a.b", "DaemonSet"), r"^a\.b-[a-z0-9]{5}$");
        assert_eq!(pod_name_regex("rs", "ReplicaSet"), "^rs-[a-z0-9]+$");
        assert_eq!(pod_name_regex("x", "Rollout"), "^x-.*");
        assert_eq!(exact_pods_regex(&["web-1", "web.2"]), r"^(web-1|web\.2)$");
    }

    #[test]
    fn prefix_names_do_not_claim_each_others_pods() {
        let cases = [
            (
                "Deployment",
                "app-5f7d8b9c4-x7k2p",
                "app-gateway-6c9b7d5f8-q9z4m",
            ),
            ("StatefulSet", "app-0", "app-gateway-12"),
            ("DaemonSet", "app-x7k2p", "app-gateway-q9z4m"),
            ("ReplicaSet", "app-x7k2p", "app-gateway-q9z4m"),
        ];
        for (kind, app_pod, gateway_pod) in cases {
            let app = promql_matcher(&pod_name_regex("app", kind));
            let gateway = promql_matcher(&pod_name_regex("app-gateway", kind));
            assert!(app.is_match(app_pod), "{kind}");
            assert!(gateway.is_match(gateway_pod), "{kind}");
            assert!(
                !app.is_match(gateway_pod),
                "{kind}: app claims {gateway_pod}"
            );
            assert!(
                !gateway.is_match(app_pod),
                "{kind}: app-gateway claims {app_pod}"
            );
        }
        // Escaping: a dot in the name is a dot.
        let dotted = promql_matcher(&pod_name_regex("app.v2", "StatefulSet"));
        assert!(dotted.is_match("app.v2-0"));
        assert!(!dotted.is_match("app-v2-0"));
    }

    /// A DNS label, as workload names are.
    fn name() -> impl Strategy<Value = String> {
        "[a-z0-9]([a-z0-9.-]{0,14}[a-z0-9])?"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The escaped string, as a PromQL regex, matches the literal and nothing else.
        #[test]
        fn escaped_matches_exactly_the_literal(s in any::<String>(), other in any::<String>()) {
            let re = promql_matcher(&regex_escape(&s));
            prop_assert!(re.is_match(&s));
            prop_assert_eq!(re.is_match(&other), other == s);
            // A near miss: the literal with one more character.
            let longer = format!("{s}a");
            prop_assert!(!re.is_match(&longer));
        }

        /// Metacharacter-heavy strings, which `any::<String>()` rarely draws.
        #[test]
        fn escaped_metacharacters_are_literal(s in r"[\\.+*?()|\[\]{}^$a-]{0,12}") {
            let re = promql_matcher(&regex_escape(&s));
            prop_assert!(re.is_match(&s));
            let (after, before) = (format!("{s}-"), format!("x{s}"));
            prop_assert!(!re.is_match(&after));
            prop_assert!(!re.is_match(&before));
        }

        /// `name` and `name-suffix`, workloads of one kind: neither matches the other's pods.
        /// Pod names as the controllers make them: random parts from the generators' alphabet
        /// (`bcdfghjklmnpqrstvwxz2456789`), StatefulSet ordinals.
        #[test]
        fn a_name_and_its_extension_keep_their_own_pods(
            kind in prop_oneof![
                Just("Deployment"), Just("StatefulSet"), Just("DaemonSet"), Just("ReplicaSet")
            ],
            short in name(),
            suffix in name(),
            hash in "[bcdfghjklmnpqrstvwxz2456789]{1,10}",
            id in "[bcdfghjklmnpqrstvwxz2456789]{5}",
            ordinal in 0u32..100_000,
        ) {
            let pod = |workload: &str| match kind {
                "Deployment" => format!("{workload}-{hash}-{id}"),
                "StatefulSet" => format!("{workload}-{ordinal}"),
                _ => format!("{workload}-{id}"),
            };
            let long = format!("{short}-{suffix}");
            let (short_pod, long_pod) = (pod(&short), pod(&long));
            let short_re = promql_matcher(&pod_name_regex(&short, kind));
            let long_re = promql_matcher(&pod_name_regex(&long, kind));
            prop_assert!(short_re.is_match(&short_pod));
            prop_assert!(long_re.is_match(&long_pod));
            prop_assert!(!short_re.is_match(&long_pod), "{} claims {}", short, long_pod);
            prop_assert!(!long_re.is_match(&short_pod), "{} claims {}", long, short_pod);
        }
    }
}
