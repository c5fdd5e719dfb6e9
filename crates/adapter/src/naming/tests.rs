use ferrocrane_core::kube::{ResourceMapper, ResourceMapping};
use ferrocrane_core::promql::parse_label_selector;

use super::*;
use crate::config::{DiscoveryRule, NameMapping, RegexFilter, ResourceMapping as CfgMapping};

pub(crate) fn mk(group: &str, plural: &str, kind: &str, namespaced: bool) -> ResourceMapping {
    ResourceMapping {
        group: group.into(),
        version: "v1".into(),
        versions: vec!["v1".into()],
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        short_names: vec![],
        namespaced,
        has_scale: false,
        verbs: vec!["get".into(), "list".into()],
    }
}

/// The mapper of upstream's series registry test: core pods, services, nodes, PVs, namespaces;
/// extensions ingresses and deployments.
pub(crate) fn mapper() -> ResourceMapper {
    ResourceMapper::from_mappings(vec![
        mk("", "pods", "Pod", true),
        mk("", "services", "Service", true),
        mk("", "nodes", "Node", false),
        mk("", "persistentvolumes", "PersistentVolume", false),
        mk("", "namespaces", "Namespace", false),
        mk("extensions", "ingresses", "Ingress", true),
        mk("extensions", "deployments", "Deployment", true),
        mk("apps", "deployments", "Deployment", true),
        mk("networking.k8s.io", "ingresses", "Ingress", true),
    ])
}

fn rule(series_query: &str, metrics_query: &str) -> DiscoveryRule {
    DiscoveryRule {
        series_query: series_query.into(),
        metrics_query: metrics_query.into(),
        resources: CfgMapping {
            template: "<<.Resource>>".into(),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

fn sel(s: &str) -> Vec<ferrocrane_core::promql::Requirement> {
    parse_label_selector(s).expect("selector")
}

// --- seriesFilters (upstream regex_matcher_test.go) ---

#[test]
fn re_matcher_is_and_is_not() {
    let is = ReMatcher::new(&RegexFilter {
        is: "my_.*".into(),
        is_not: String::new(),
    })
    .unwrap();
    assert!(is.matches("my_label"));
    assert!(!is.matches("your_label"));
    // unanchored, like Go's MatchString
    assert!(is.matches("not_my_label"));
    let is_not = ReMatcher::new(&RegexFilter {
        is: String::new(),
        is_not: "my_.*".into(),
    })
    .unwrap();
    assert!(!is_not.matches("my_label"));
    assert!(is_not.matches("your_label"));
}

#[test]
fn re_matcher_requires_exactly_one() {
    let both = ReMatcher::new(&RegexFilter {
        is: "my_.*".into(),
        is_not: "your_.*".into(),
    })
    .unwrap_err();
    assert_eq!(
        both,
        "cannot have both an `is` (\"my_.*\") and `isNot` (\"your_.*\") expression in a single filter"
    );
    let neither = ReMatcher::new(&RegexFilter::default()).unwrap_err();
    assert_eq!(
        neither,
        "must have either an `is` or `isNot` expression in a filter"
    );
    let bad = ReMatcher::new(&RegexFilter {
        is: "(".into(),
        is_not: String::new(),
    })
    .unwrap_err();
    assert!(
        bad.starts_with("unable to compile series filter \"(\": "),
        "{bad}"
    );
    assert!(!bad.contains('\n'), "{bad:?}");
}

// --- name matches / as ---

fn named(matches: &str, as_: &str) -> Result<Namer, NamingError> {
    let mut r = rule("{__name__=~\"^container_.*\"}", "sum(<<.Series>>)");
    r.name = NameMapping {
        matches: matches.into(),
        as_: as_.into(),
    };
    Namer::new(&r)
}

#[test]
fn name_defaults_to_whole_match_or_single_group() {
    let whole = named("", "").unwrap();
    assert_eq!(whole.name_as(), "$0");
    assert_eq!(
        whole.metric_name_for_series("anything").unwrap(),
        "anything"
    );
    let whole = named("^container_.*", "").unwrap();
    assert_eq!(whole.name_as(), "$0");
    assert_eq!(
        whole.metric_name_for_series("container_cpu").unwrap(),
        "container_cpu"
    );
    let one = named("^container_(.*)_seconds_total$", "").unwrap();
    assert_eq!(one.name_as(), "$1");
    assert_eq!(
        one.metric_name_for_series("container_cpu_usage_seconds_total")
            .unwrap(),
        "cpu_usage"
    );
    // a named group counts as a group
    let named_group = named("^(?P<n>.*)_total$", "").unwrap();
    assert_eq!(
        named_group
            .metric_name_for_series("http_requests_total")
            .unwrap(),
        "http_requests"
    );
}

#[test]
fn name_with_two_groups_needs_as() {
    let e = named("^(.*)_(.*)$", "").unwrap_err();
    assert_eq!(
        e.to_string(),
        "must specify an 'as' value for name matcher \"^(.*)_(.*)$\" associated with series query \"{__name__=~\\\"^container_.*\\\"}\""
    );
    let ok = named("^(.*)_(.*)_total$", "${2}_per_${1}").unwrap();
    assert_eq!(
        ok.metric_name_for_series("http_requests_total").unwrap(),
        "requests_per_http"
    );
}

#[test]
fn name_as_expansion_follows_go_rules() {
    // `$1x` is the (missing) group named "1x" → empty, as Go's Expand; `$$` is a dollar.
    let n = named("^(.*)_total$", "$1x-${1}x-$$").unwrap();
    assert_eq!(n.metric_name_for_series("a_total").unwrap(), "-ax-$");
    let n = named("^(?P<base>.*)_total$", "$base.rate").unwrap();
    assert_eq!(n.metric_name_for_series("a_total").unwrap(), "a.rate");
}

#[test]
fn name_matches_filters_series_and_errors() {
    let n = named("^container_(.*)_total$", "").unwrap();
    assert!(n.accepts("container_x_total"));
    assert!(!n.accepts("container_x"));
    assert_eq!(
        n.metric_name_for_series("node_x").unwrap_err().to_string(),
        "series name \"node_x\" did not match expected pattern \"^container_(.*)_total$\""
    );
    let e = named("(", "").unwrap_err().to_string();
    assert!(
        e.starts_with("unable to generate series name filter from name rules associated with series query \"{__name__=~\\\"^container_.*\\\"}\": unable to compile series filter \"(\": "),
        "{e}"
    );
}

#[test]
fn series_filters_combine_with_name_matches() {
    let mut r = rule("{__name__=~\"^container_.*\"}", "sum(<<.Series>>)");
    r.series_filters = vec![RegexFilter {
        is: String::new(),
        is_not: "^container_.*_seconds_total$".into(),
    }];
    r.name.matches = "^container_(.*)_total$".into();
    let n = Namer::new(&r).unwrap();
    let series = vec![
        Series::new("container_cpu_usage_seconds_total", []),
        Series::new("container_network_receive_bytes_total", []),
        Series::new("container_memory_usage_bytes", []),
    ];
    let kept: Vec<&str> = n.filter_series(&series).map(|s| s.name.as_str()).collect();
    assert_eq!(kept, ["container_network_receive_bytes_total"]);
    let mut bad = r.clone();
    bad.series_filters[0].is = "x".into();
    let e = Namer::new(&bad).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "unable to generate series name filter associated with series query \"{__name__=~\\\"^container_.*\\\"}\": cannot have both"
        ),
        "{e}"
    );
}

// --- resources ---

#[test]
fn overrides_map_labels_and_namespace() {
    let mut cfg = CfgMapping::default();
    cfg.overrides.insert(
        "namespace".into(),
        crate::config::GroupResource {
            group: String::new(),
            resource: "namespace".into(),
        },
    );
    cfg.overrides.insert(
        "pod".into(),
        crate::config::GroupResource {
            group: String::new(),
            resource: "pod".into(),
        },
    );
    cfg.overrides.insert(
        "deployment".into(),
        crate::config::GroupResource {
            group: "apps".into(),
            resource: "deployment".into(),
        },
    );
    let c = ResourceConverter::new(&cfg).unwrap();
    let m = mapper();
    assert_eq!(c.namespace_label().unwrap(), "namespace");
    let s = Series::new(
        "x",
        [
            ("pod", "p"),
            ("namespace", "n"),
            ("deployment", "d"),
            ("instance", "i"),
        ],
    );
    let got = c.resources_for_series(&s, &m);
    let got: Vec<(String, &str, bool)> = got
        .iter()
        .map(|r| (r.group_resource.to_string(), r.label.as_str(), r.namespaced))
        .collect();
    assert_eq!(
        got,
        [
            ("deployments.apps".to_string(), "deployment", true),
            ("namespaces".to_string(), "namespace", false),
            ("pods".to_string(), "pod", true),
        ]
    );
    assert_eq!(
        c.label_for_resource(&GroupResource::core("pods"), &m)
            .unwrap(),
        "pod"
    );
    assert_eq!(
        c.label_for_resource(&GroupResource::new("apps", "deployments"), &m)
            .unwrap(),
        "deployment"
    );
    // no template: other resources have no label
    assert_eq!(
        c.label_for_resource(&GroupResource::core("services"), &m)
            .unwrap_err()
            .to_string(),
        "unable to convert resource services into label: no generic resource label form specified for this metric"
    );
}

#[test]
fn template_maps_labels_with_group_and_singular() {
    let c = ResourceConverter::new(&CfgMapping {
        template: "kube_<<.Group>>_<<.Resource>>".into(),
        ..Default::default()
    })
    .unwrap();
    let m = mapper();
    assert_eq!(c.namespace_label().unwrap(), "kube__namespace");
    assert_eq!(
        c.label_for_resource(&GroupResource::new("networking.k8s.io", "ingresses"), &m)
            .unwrap(),
        "kube_networking_k8s_io_ingress"
    );
    // extraction: the sanitised group does not name a real group, as upstream (skipped)
    assert_eq!(
        c.resource_for_label("kube_networking_k8s_io_ingress", &m),
        None
    );
    assert_eq!(
        c.resource_for_label("kube_apps_deployment", &m),
        Some(GroupResource::new("apps", "deployments"))
    );
    let t = ResourceConverter::new(&CfgMapping {
        template: "kube_<<.Resource>>".into(),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        t.resource_for_label("kube_pod", &m),
        Some(GroupResource::core("pods"))
    );
    assert_eq!(t.resource_for_label("kube_unknownthing", &m), None);
    assert_eq!(t.resource_for_label("pod", &m), None);
    assert_eq!(
        t.label_for_resource(&GroupResource::new("x.io", "widgets"), &m)
            .unwrap_err()
            .to_string(),
        "unable to convert resource widgets.x.io into label: unable to singularize resource widgets.x.io: no resource matches widgets.x.io"
    );
}

#[test]
fn bad_templates_and_overrides() {
    let e = ResourceConverter::new(&CfgMapping {
        template: "kube_<<.Group>>".into(),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "unable to generate label format from template \"kube_<<.Group>>\": must include at least <<.Resource>> in the label template"
    );
    let mut cfg = CfgMapping::default();
    cfg.overrides
        .insert("pod".into(), crate::config::GroupResource::default());
    assert_eq!(
        ResourceConverter::new(&cfg).unwrap_err().to_string(),
        "resource override for label \"pod\" has no resource"
    );
}

#[test]
fn builtin_core_resources_without_discovery() {
    let empty = ResourceMapper::default();
    assert_eq!(
        normalize(&empty, "", "pod"),
        Some(GroupResource::core("pods"))
    );
    assert_eq!(
        normalize(&empty, "", "Namespace"),
        Some(GroupResource::core("namespaces"))
    );
    // Short names are kubectl's, not a RESTMapper's: upstream does not resolve them.
    assert_eq!(normalize(&empty, "", "po"), None);
    assert_eq!(normalize(&empty, "apps", "deployment"), None);
    assert_eq!(
        singular(&empty, &GroupResource::core("nodes")).as_deref(),
        Some("node")
    );
}

// --- query building (upstream metrics_query_test.go, through a namer) ---

mod queries;
