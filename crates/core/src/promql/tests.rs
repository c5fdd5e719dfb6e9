use super::*;
use proptest::prelude::*;

fn q(src: &str) -> QueryTemplate {
    QueryTemplate::parse(src).expect("template parses")
}

fn sel(s: &str) -> Vec<Requirement> {
    parse_label_selector(s).expect("selector parses")
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// Expected outputs of the adapter's TestBuildSelector, with its mock converter
// (label = resource name, namespace label "namespaces").
#[test]
fn upstream_build_vectors() {
    let ns = |n| Some(("namespaces", n));
    let none: &[String] = &[];
    assert_eq!(
        q("series <<.Series>>")
            .build("foo", "", None, none, &[], &[])
            .unwrap(),
        "series foo"
    );
    assert_eq!(
        q("<<.LabelMatchers>>")
            .build("", "resource", None, none, &[], &strs(&["bar", "baz"]))
            .unwrap(),
        r#"resource=~"bar|baz""#
    );
    assert_eq!(
        q("<<.LabelMatchers>>")
            .build("", "resource", None, none, &[], &strs(&["bar"]))
            .unwrap(),
        r#"resource="bar""#
    );
    assert_eq!(
        q("<<.LabelMatchers>>")
            .build(
                "",
                "resource",
                None,
                none,
                &sel("metric1=value1"),
                &strs(&["bar"])
            )
            .unwrap(),
        r#"metric1="value1",resource="bar""#
    );
    assert_eq!(
        q(r#"<<index .LabelValuesByName "resource">>"#)
            .build("", "resource", None, none, &[], &strs(&["bar", "baz"]))
            .unwrap(),
        "bar|baz"
    );
    assert_eq!(
        q(r#"<<index .LabelValuesByName "namespaces">> <<index .LabelValuesByName "resource">>"#)
            .build(
                "",
                "resource",
                ns("default"),
                none,
                &[],
                &strs(&["bar", "baz"])
            )
            .unwrap(),
        "default bar|baz"
    );
    assert_eq!(
        q("<<.GroupBy>>")
            .build("", "resource", None, none, &[], &[])
            .unwrap(),
        "resource"
    );
    assert_eq!(
        q("<<.GroupBy>>")
            .build("", "resource", None, &strs(&["extra", "groups"]), &[], &[])
            .unwrap(),
        "resource,extra,groups"
    );
    assert_eq!(
        q("<<.GroupBySlice>>")
            .build("", "resource", None, none, &[], &[])
            .unwrap(),
        "[resource]"
    );
    assert_eq!(
        q("<<.GroupBySlice>>")
            .build("", "resource", None, &strs(&["extra", "groups"]), &[], &[])
            .unwrap(),
        "[resource extra groups]"
    );
}

// TestBuildExternalSelector.
#[test]
fn upstream_build_external_vectors() {
    let ns = Some(("namespaces", "default"));
    let none: &[String] = &[];
    let fb = strs(&["foo", "bar"]);
    assert_eq!(
        q("series <<.Series>>")
            .build_external("foo", ns, "", none, &[])
            .unwrap(),
        "series foo"
    );
    assert_eq!(
        q("<<.GroupBy>>")
            .build_external("", ns, "foo", none, &[])
            .unwrap(),
        "foo"
    );
    assert_eq!(
        q("<<.GroupBySlice>>")
            .build_external("", ns, "", &fb, &[])
            .unwrap(),
        "[foo bar]"
    );
    let t = q(r#"<<index .LabelValuesByName "namespaces">> <<.GroupBySlice>>"#);
    assert_eq!(
        t.build_external("", ns, "", &fb, &[]).unwrap(),
        "default [foo bar]"
    );
    assert_eq!(
        t.build_external("", None, "", &fb, &[]).unwrap(),
        " [foo bar]"
    );
    assert_eq!(
        q("<<.LabelMatchers>>")
            .build_external("", ns, "", none, &sel("foo=bar"))
            .unwrap(),
        r#"foo="bar",namespaces="default""#
    );
    assert_eq!(
        q("<<.LabelMatchers>>")
            .build_external("", None, "", none, &sel("foo=bar"))
            .unwrap(),
        r#"foo="bar""#
    );
    assert_eq!(
        q("<<.LabelMatchers>>")
            .build_external("", None, "", none, &sel("foo=bar,qux in (bar,baz)"))
            .unwrap(),
        r#"foo="bar",qux=~"bar|baz""#
    );
    assert_eq!(
        q("<<.LabelValuesByName>>")
            .build_external("", None, "", none, &sel("foo=bar"))
            .unwrap(),
        "map[foo:bar]"
    );
    assert_eq!(
        q("<<.LabelValuesByName>>")
            .build_external("", None, "", none, &sel("foo in (bar,baz)"))
            .unwrap(),
        "map[foo:bar|baz]"
    );
}

#[test]
fn default_config_style_query() {
    let t = q("sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)");
    let out = t
        .build(
            "http_requests_total",
            "pod",
            Some(("namespace", "default")),
            &[],
            &sel("app=web,tier notin (db)"),
            &strs(&["web-0", "web-1"]),
        )
        .unwrap();
    assert_eq!(
        out,
        r#"sum(rate(http_requests_total{app="web",tier!~"db",namespace="default",pod=~"web-0|web-1"}[2m])) by (pod)"#
    );
    validate_query(&out).unwrap();
    // An empty namespace means "not namespaced", as upstream.
    let out = t
        .build(
            "s",
            "node",
            Some(("namespace", "")),
            &[],
            &[],
            &strs(&["n1"]),
        )
        .unwrap();
    assert_eq!(out, r#"sum(rate(s{node="n1"}[2m])) by (node)"#);
}

#[test]
fn operator_value_checks() {
    let t = q("<<.LabelMatchers>>");
    let bad = [
        Requirement {
            key: String::new(),
            op: Operator::Equals,
            values: strs(&["x"]),
        },
        Requirement {
            key: "a".into(),
            op: Operator::In,
            values: vec![],
        },
        Requirement {
            key: "a".into(),
            op: Operator::Exists,
            values: strs(&["x"]),
        },
    ];
    for r in bad {
        assert!(t.build_external("", None, "", &[], &[r]).is_err());
    }
    // `=` with several values becomes a regex match, as upstream.
    let r = Requirement {
        key: "a".into(),
        op: Operator::Equals,
        values: strs(&["x", "y"]),
    };
    assert_eq!(
        t.build_external("", None, "", &[], &[r]).unwrap(),
        r#"a=~"x|y""#
    );
    assert!(q("  ").render(&QueryArgs::default()).is_ok());
    assert!(
        q("<<.Series>>").render(&QueryArgs::default()).is_err(),
        "empty query is an error"
    );
}

#[test]
fn helpers() {
    assert_eq!(label_eq("a", "x\"y"), r#"a="x\"y""#);
    assert_eq!(label_neq("a", ""), r#"a!="""#);
    assert_eq!(label_matches("a", "x|y"), r#"a=~"x|y""#);
    assert_eq!(label_not_matches("a", "x"), r#"a!~"x""#);
    assert_eq!(name_matches("^foo.*"), r#"__name__=~"^foo.*""#);
    assert_eq!(name_not_matches("bar"), r#"__name__!~"bar""#);
    assert_eq!(match_series("up", &[]), "up");
    assert_eq!(
        match_series("up", &strs(&["a=\"b\"", "c!=\"\""])),
        r#"up{a="b",c!=""}"#
    );
}

#[test]
fn resource_templates() {
    let t = ResourceLabelTemplate::parse("kube_<<.Group>>_<<.Resource>>").unwrap();
    assert_eq!(
        t.render("apps", "deployment").unwrap(),
        "kube_apps_deployment"
    );
    assert_eq!(
        t.render("networking.k8s-io", "ingress").unwrap(),
        "kube_networking_k8s_io_ingress"
    );
    assert_eq!(
        t.extract("kube_apps_deployment"),
        Some(GroupResource {
            group: "apps".into(),
            resource: "deployment".into()
        })
    );
    // Lazy groups: the group takes the shortest prefix, as Go's regexp does.
    assert_eq!(
        t.extract("kube_extensions_v1_ingress"),
        Some(GroupResource {
            group: "extensions".into(),
            resource: "v1_ingress".into()
        })
    );
    assert_eq!(t.extract("pod"), None);

    let r = ResourceLabelTemplate::parse("<<.Resource>>").unwrap();
    assert_eq!(r.render("", "pod").unwrap(), "pod");
    assert_eq!(
        r.extract("namespace"),
        Some(GroupResource {
            group: String::new(),
            resource: "namespace".into()
        })
    );

    assert!(ResourceLabelTemplate::parse("<<.Group>>").is_err());
    assert!(ResourceLabelTemplate::parse("").is_err());
    assert!(ResourceLabelTemplate::parse("<<.Series>>").is_err());
    assert!(ResourceLabelTemplate::parse("<<.Resource>>_<<.Resource>>").is_err());
    assert!(
        ResourceLabelTemplate::parse("<<.Group>>")
            .unwrap_err()
            .to_string()
            .contains("Resource")
    );
}

#[test]
fn validation() {
    validate_query("sum(rate(x[5m])) by (pod)").unwrap();
    assert!(validate_query("sum(rate(x[5m]) by").is_err());
    validate_template(
        "rule 0 (http_requests)",
        "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
    )
    .unwrap();
    let e = validate_template(
        "rule 3",
        "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m]) by (<<.GroupBy>>)",
    )
    .unwrap_err();
    assert!(matches!(&e, PromqlError::Rule { rule, .. } if rule == "rule 3"));
    assert!(e.to_string().starts_with("rule rule 3: query"), "{e}");
    let e = validate_template("rule 4", "<<if .Series>>x<<end>>")
        .unwrap_err()
        .to_string();
    assert!(e.contains("rule 4") && e.contains("`if`"), "{e}");
}

// ---------------------------------------------------------------------------

fn parse_matchers(query: &str) -> Vec<(String, String, String)> {
    use promql_parser::label::MatchOp;
    let expr = promql_parser::parser::parse(query).unwrap_or_else(|e| panic!("{query}: {e}"));
    let promql_parser::parser::Expr::VectorSelector(vs) = expr else {
        panic!("not a vector selector: {query}")
    };
    vs.matchers
        .matchers
        .iter()
        .filter(|m| m.name != "__name__")
        .map(|m| {
            let op = match &m.op {
                MatchOp::Equal => "=",
                MatchOp::NotEqual => "!=",
                MatchOp::Re(_) => "=~",
                MatchOp::NotRe(_) => "!~",
            };
            (m.name.clone(), op.to_owned(), m.value.clone())
        })
        .collect()
}

fn label_value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => any::<char>(),
            1 => prop::sample::select(vec!['\\', '"', '\n', '\'', '`', '\u{7f}', '\u{a0}', '\u{fffd}', '\u{1F600}']),
        ],
        0..10,
    )
    .prop_map(String::from_iter)
}

fn label_name() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,12}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any value quoted with `go_quote` reads back identically in PromQL, for
    /// each matcher operator.
    #[test]
    fn matchers_round_trip(series in "s_[a-zA-Z0-9_:]{0,15}", pairs in prop::collection::vec((label_name(), label_value()), 1..5)) {
        let mut exprs = Vec::new();
        let mut want = Vec::new();
        for (i, (name, value)) in pairs.iter().enumerate() {
            let name = format!("{name}_{i}");
            let (e, op) = match i % 2 {
                0 => (label_eq(&name, value), "="),
                _ => (label_neq(&name, value), "!="),
            };
            exprs.push(e);
            want.push((name, op.to_owned(), value.clone()));
        }
        let query = match_series(&series, &exprs);
        prop_assert_eq!(parse_matchers(&query), want);
    }

    /// Rendered adapter queries always parse, and their matchers carry the
    /// selector values, namespace and resource names unchanged. Names and
    /// values are escaped for regex use only when an `=~` matcher would
    /// otherwise be an invalid regex, which is the caller's business upstream
    /// too; here regex values are drawn from literal-safe characters.
    #[test]
    fn built_queries_parse(
        series in "s_[a-zA-Z0-9_:]{0,15}",
        ns in label_value(),
        eq_values in prop::collection::vec(label_value(), 0..3),
        names in prop::collection::vec("[a-z0-9][a-z0-9.-]{0,10}", 1..4),
    ) {
        let selector: Vec<Requirement> = eq_values.iter().enumerate().map(|(i, v)| Requirement {
            key: format!("k{i}"),
            op: if i % 2 == 0 { Operator::Equals } else { Operator::NotEquals },
            values: vec![v.clone()],
        }).collect();
        let t = q("sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)");
        let out = t.build(&series, "pod", Some(("namespace", &ns)), &[], &selector, &names).unwrap();
        validate_query(&out).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let selector_only = q("<<.Series>>{<<.LabelMatchers>>}")
            .build(&series, "pod", Some(("namespace", &ns)), &[], &selector, &names).unwrap();
        let got = parse_matchers(&selector_only);
        let mut want: Vec<(String, String, String)> = selector.iter()
            .map(|r| (r.key.clone(), if r.op == Operator::Equals { "=" } else { "!=" }.to_owned(), r.values[0].clone()))
            .collect();
        if !ns.is_empty() {
            want.push(("namespace".into(), "=".into(), ns.clone()));
        }
        want.push(("pod".into(), if names.len() > 1 { "=~" } else { "=" }.into(), names.join("|")));
        prop_assert_eq!(got, want);
    }

    /// Selectors produced from random valid requirements parse back to the
    /// same requirements, sorted by key.
    #[test]
    fn selector_round_trip(reqs in prop::collection::vec(
        ("[a-z]([a-z0-9._-]{0,8}[a-z0-9])?", 0..6usize, prop::collection::vec("[A-Za-z0-9]([A-Za-z0-9._-]{0,6}[A-Za-z0-9])?", 1..3)),
        0..4,
    )) {
        let mut text = Vec::new();
        let mut want = Vec::new();
        for (i, (key, op, values)) in reqs.iter().enumerate() {
            let key = format!("{key}{i}");
            let mut values = values.clone();
            let (s, op) = match op {
                0 => (format!("{key}={}", values[0]), Operator::Equals),
                1 => (format!("{key} != {}", values[0]), Operator::NotEquals),
                2 => (format!("{key} in ({})", values.join(", ")), Operator::In),
                3 => (format!("{key} notin ({})", values.join(",")), Operator::NotIn),
                4 => (key.clone(), Operator::Exists),
                _ => (format!("!{key}"), Operator::DoesNotExist),
            };
            match op {
                Operator::Equals | Operator::NotEquals => values.truncate(1),
                Operator::Exists | Operator::DoesNotExist => values.clear(),
                _ => {}
            }
            values.sort();
            values.dedup();
            text.push(s);
            want.push(Requirement { key, op, values });
        }
        want.sort_by(|a, b| a.key.cmp(&b.key));
        prop_assert_eq!(parse_label_selector(&text.join(",")).unwrap(), want);
    }

    /// No input makes the selector parser or the template parser panic.
    #[test]
    fn parsers_do_not_panic(s in ".{0,40}") {
        let _ = parse_label_selector(&s);
        let _ = QueryTemplate::parse(&s);
        let _ = QueryTemplate::parse(&format!("<<{s}>>"));
        let _ = ResourceLabelTemplate::parse(&s);
    }
}
