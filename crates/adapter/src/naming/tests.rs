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
        normalize(&empty, "", "NS"),
        Some(GroupResource::core("namespaces"))
    );
    assert_eq!(normalize(&empty, "apps", "deployment"), None);
    assert_eq!(
        singular(&empty, &GroupResource::core("nodes")).as_deref(),
        Some("node")
    );
}

// --- query building (upstream metrics_query_test.go, through a namer) ---

/// Every template variable, through `metrics_query_for` with the resource label given.
#[test]
fn custom_query_every_template_variable() {
    let q = |tpl: &str, ns: Option<&str>, n: &[&str], s: &str| {
        let r = rule("up", tpl);
        Namer::new(&r)
            .unwrap()
            .metrics_query_for("foo", "resource", ns, &names(n), &sel(s))
            .unwrap()
    };
    assert_eq!(q("series <<.Series>>", None, &["a"], ""), "series foo");
    assert_eq!(
        q("<<.LabelMatchers>>", None, &["bar", "baz"], ""),
        r#"resource=~"bar|baz""#
    );
    assert_eq!(
        q("<<.LabelMatchers>>", None, &["bar"], ""),
        r#"resource="bar""#
    );
    assert_eq!(
        q("<<.LabelMatchers>>", None, &["bar"], "metric1=value1"),
        r#"metric1="value1",resource="bar""#
    );
    assert_eq!(
        q(
            r#"<<index .LabelValuesByName "resource">>"#,
            None,
            &["bar"],
            ""
        ),
        "bar"
    );
    assert_eq!(
        q(
            r#"<<index .LabelValuesByName "resource">>"#,
            None,
            &["bar", "baz"],
            ""
        ),
        "bar|baz"
    );
    // the template `<<.Resource>>` gives the namespace label "namespace"
    assert_eq!(
        q(
            r#"<<index .LabelValuesByName "namespace">> <<index .LabelValuesByName "resource">>"#,
            Some("default"),
            &["bar", "baz"],
            ""
        ),
        "default bar|baz"
    );
    assert_eq!(
        q(
            "<<.LabelValuesByName>>",
            Some("ns1"),
            &["b", "a"],
            "x in (2,1)"
        ),
        "map[namespace:ns1 resource:b|a x:1|2]"
    );
    assert_eq!(q("<<.LabelValuesByName.resource>>", None, &["a"], ""), "a");
    assert_eq!(q("<<.GroupBy>>", None, &["a"], ""), "resource");
    assert_eq!(q("<<.GroupBySlice>>", None, &["a"], ""), "[resource]");
    assert_eq!(q("<<index .GroupBySlice 0>>", None, &["a"], ""), "resource");
    assert_eq!(
        q(
            "sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)",
            Some("somens"),
            &["p1", "p2"],
            "app=web"
        ),
        r#"sum(rate(foo{app="web",namespace="somens",resource=~"p1|p2"}[1m])) by (resource)"#
    );
    // an empty namespace means cluster-scoped
    assert_eq!(
        q("<<.LabelMatchers>>", Some(""), &["n1"], ""),
        r#"resource="n1""#
    );
}

/// Every selector operator, in LabelMatchers and LabelValuesByName.
#[test]
fn custom_query_every_selector_operator() {
    let n = Namer::new(&rule("up", "<<.LabelMatchers>> <<.LabelValuesByName>>")).unwrap();
    let q = |s: &str| n.metrics_query_for("foo", "pod", None, &names(&["p"]), &sel(s));
    let cases = [
        ("a=x", r#"a="x",pod="p" map[a:x pod:p]"#),
        ("a==x", r#"a="x",pod="p" map[a:x pod:p]"#),
        ("a!=x", r#"a!="x",pod="p" map[a:x pod:p]"#),
        ("a in (x)", r#"a=~"x",pod="p" map[a:x pod:p]"#),
        ("a in (y,x)", r#"a=~"x|y",pod="p" map[a:x|y pod:p]"#),
        ("a notin (x)", r#"a!~"x",pod="p" map[a:x pod:p]"#),
        ("a notin (x,y)", r#"a!~"x|y",pod="p" map[a:x|y pod:p]"#),
        ("a", r#"a!="",pod="p" map[a: pod:p]"#),
        ("!a", r#"a="",pod="p" map[a: pod:p]"#),
        // requirements sorted by key
        ("z=1,a=2", r#"a="2",z="1",pod="p" map[a:2 pod:p z:1]"#),
    ];
    for (s, want) in cases {
        assert_eq!(q(s).unwrap(), want, "selector {s}");
    }
    // > and < have no PromQL equivalent
    assert!(parse_label_selector("a>1").is_err());
    assert!(parse_label_selector("a<1").is_err());
}

#[test]
fn custom_query_needs_namespace_label_when_namespaced() {
    let mut r = rule("up", "<<.LabelMatchers>>");
    r.resources = CfgMapping {
        overrides: [(
            "pod".to_string(),
            crate::config::GroupResource {
                group: String::new(),
                resource: "pods".into(),
            },
        )]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    let n = Namer::new(&r).unwrap();
    assert_eq!(
        n.metrics_query_for("x", "pod", None, &names(&["a"]), &[])
            .unwrap(),
        r#"pod="a""#
    );
    assert_eq!(
        n.metrics_query_for("x", "pod", Some("ns"), &names(&["a"]), &[])
            .unwrap_err()
            .to_string(),
        "unable to convert resource namespaces into label: no generic resource label form specified for this metric"
    );
    let m = mapper();
    assert_eq!(
        n.metrics_query_for_resource(
            "x",
            &GroupResource::core("pods"),
            &m,
            None,
            &names(&["a"]),
            &[]
        )
        .unwrap(),
        r#"pod="a""#
    );
}

/// Upstream TestBuildExternalSelector, with the namespace label `namespaces`.
#[test]
fn external_query_vectors() {
    let ext = |tpl: &str, namespaced: bool| {
        let mut r = rule("up", tpl);
        r.resources = CfgMapping {
            template: "<<.Resource>>s".into(),
            namespaced: Some(namespaced),
            ..Default::default()
        };
        Namer::new(&r).unwrap()
    };
    let e = |tpl: &str, ns: Option<&str>, s: &str| {
        ext(tpl, true)
            .external_query_for("foo", ns, &sel(s))
            .unwrap()
    };
    assert_eq!(e("series <<.Series>>", None, ""), "series foo");
    assert_eq!(e("x <<.GroupBy>>", None, ""), "x ");
    assert_eq!(e("<<.GroupBySlice>>", None, ""), "[]");
    assert_eq!(
        e(
            r#"<<index .LabelValuesByName "namespaces">> <<.GroupBySlice>>"#,
            Some("default"),
            ""
        ),
        "default []"
    );
    assert_eq!(
        ext(
            r#"x<<index .LabelValuesByName "namespaces">> <<.LabelMatchers>>"#,
            false
        )
        .external_query_for("foo", Some("default"), &[])
        .unwrap(),
        "x "
    );
    assert_eq!(e("<<.LabelMatchers>>", None, "foo=bar"), r#"foo="bar""#);
    assert_eq!(
        e("<<.LabelMatchers>>", Some("default"), "foo=bar"),
        r#"foo="bar",namespaces="default""#
    );
    assert_eq!(
        e("<<.LabelMatchers>>", None, "foo=bar,qux in (bar,baz)"),
        r#"foo="bar",qux=~"bar|baz""#
    );
    assert_eq!(e("<<.LabelValuesByName>>", None, "foo=bar"), "map[foo:bar]");
    assert_eq!(
        e("<<.LabelValuesByName>>", None, "foo in (bar,baz)"),
        "map[foo:bar|baz]"
    );
}

#[test]
fn metrics_query_and_series_query_checked_at_compile() {
    let check = |r: DiscoveryRule| Namer::new(&r).and_then(|n| n.check_promql().map(|()| n));
    assert!(Namer::new(&rule("up", "<<.Series>>")).is_ok());
    let e = Namer::new(&rule("up", "<<if .Series>>x<<end>>")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("unable to construct metrics query associated with series query \"up\": "),
        "{e}"
    );
    let e = check(rule("up", "sum(<<.Series>>{<<.LabelMatchers>>}")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("unable to construct metrics query associated with series query \"up\": "),
        "{e}"
    );
    let e = check(rule("up", "")).unwrap_err().to_string();
    assert!(
        e.contains("empty query produced by metrics query template"),
        "{e}"
    );
    let e = check(rule("up", "<<.Nope>>")).unwrap_err().to_string();
    assert!(e.contains("unknown field .Nope"), "{e}");
    let e = check(rule("", "sum(<<.Series>>)")).unwrap_err().to_string();
    assert_eq!(e, "invalid series query \"\": must not be empty");
    let e = check(rule("sum(up)", "sum(<<.Series>>)"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("invalid series query \"sum(up)\": must be a series selector"),
        "{e}"
    );
    let e = check(rule("{a=", "sum(<<.Series>>)"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("invalid series query \"{a=\": "), "{e}");
    assert!(!e.contains('\n'));
}

// --- resource rules (upstream resourceprovider) ---

#[test]
fn resource_rule_queries() {
    let cfg: crate::config::MetricsDiscoveryConfig = ferrocrane_core::config::parse_yaml_str(
        "t.yaml",
        r#"
resourceRules:
  cpu:
    containerQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
    nodeQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>, id='/'}[1m])) by (<<.GroupBy>>)
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        instance: {resource: node}
    containerLabel: container
  memory:
    containerQuery: sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)
    nodeQuery: sum(container_memory_working_set_bytes{<<.LabelMatchers>>,id='/'}) by (<<.GroupBy>>)
    resources:
      template: <<.Resource>>
    containerLabel: container
  window: 1m
"#,
    )
    .unwrap();
    let rr = ResourceQueries::new(cfg.resource_rules.as_ref().unwrap()).unwrap();
    let m = mapper();
    assert_eq!(rr.window, std::time::Duration::from_secs(60));
    assert_eq!(
        rr.cpu
            .container_query_for(&m, "ns1", &names(&["p1", "p2"]))
            .unwrap(),
        r#"sum(rate(container_cpu_usage_seconds_total{namespace="ns1",pod=~"p1|p2"}[1m])) by (pod,container)"#
    );
    assert_eq!(
        rr.cpu.node_query_for(&m, &names(&["n1"])).unwrap(),
        r#"sum(rate(container_cpu_usage_seconds_total{instance="n1", id='/'}[1m])) by (instance)"#
    );
    assert_eq!(
        rr.memory
            .container_query_for(&m, "ns1", &names(&["p1"]))
            .unwrap(),
        r#"sum(container_memory_working_set_bytes{namespace="ns1",pod="p1"}) by (pod,container)"#
    );
    assert_eq!(
        rr.memory.node_query_for(&m, &names(&["a", "b"])).unwrap(),
        r#"sum(container_memory_working_set_bytes{node=~"a|b",id='/'}) by (node)"#
    );
    assert_eq!(rr.cpu.container_label(), "container");
}

/// Every selector operator in an external query, namespaced and not.
#[test]
fn external_query_every_selector_operator() {
    let mut r = rule("up", "sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)");
    r.resources = CfgMapping {
        overrides: [(
            "namespace".to_owned(),
            crate::config::GroupResource {
                group: String::new(),
                resource: "namespace".into(),
            },
        )]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    let n = Namer::new(&r).unwrap();
    let q = |s: &str| n.external_query_for("jobs", Some("ns1"), &sel(s)).unwrap();
    for (s, want) in [
        ("", r#"sum(jobs{namespace="ns1"}) by (queue)"#),
        ("q=a", r#"sum(jobs{q="a",namespace="ns1"}) by (queue)"#),
        ("q!=a", r#"sum(jobs{q!="a",namespace="ns1"}) by (queue)"#),
        (
            "q in (b,a)",
            r#"sum(jobs{q=~"a|b",namespace="ns1"}) by (queue)"#,
        ),
        (
            "q notin (a)",
            r#"sum(jobs{q!~"a",namespace="ns1"}) by (queue)"#,
        ),
        ("q", r#"sum(jobs{q!="",namespace="ns1"}) by (queue)"#),
        ("!q", r#"sum(jobs{q="",namespace="ns1"}) by (queue)"#),
    ] {
        assert_eq!(q(s), want, "selector {s:?}");
    }
    // namespaced: false drops the namespace matcher.
    r.resources.namespaced = Some(false);
    let n = Namer::new(&r).unwrap();
    assert_eq!(
        n.external_query_for("jobs", Some("ns1"), &sel("q=a"))
            .unwrap(),
        r#"sum(jobs{q="a"}) by (queue)"#
    );
}
