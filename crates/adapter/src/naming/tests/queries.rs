//! Query building: custom, external and resource-rule queries from templates and selectors.

use super::*;

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
