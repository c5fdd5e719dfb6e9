use ferrocrane_core::promql::parse_label_selector;

use super::*;
use crate::loader::parse_str;
use crate::naming::tests::mapper;

/// Upstream's `cmd/config-gen` DefaultConfig(1m, "kube_") rules, as YAML.
const DEFAULT_RULES: &str = r#"
rules:
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^container_(.*)_seconds_total$"}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[1m])) by (<<.GroupBy>>)
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: [{isNot: "^container_.*_seconds_total$"}]
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^container_(.*)_total$"}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[1m])) by (<<.GroupBy>>)
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: [{isNot: "^container_.*_total$"}]
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^container_(.*)$"}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>,container!="POD"}) by (<<.GroupBy>>)
- seriesQuery: '{kube_namespace!="",__name__!~"^container_.*"}'
  seriesFilters: [{isNot: ".*_total$"}]
  resources: {template: "kube_<<.Resource>>"}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
- seriesQuery: '{kube_namespace!="",__name__!~"^container_.*"}'
  seriesFilters: [{isNot: ".*_seconds_total"}]
  name: {matches: "^(.*)_total$"}
  resources: {template: "kube_<<.Resource>>"}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
- seriesQuery: '{kube_namespace!="",__name__!~"^container_.*"}'
  name: {matches: "^(.*)_seconds_total$"}
  resources: {template: "kube_<<.Resource>>"}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
"#;

fn s(name: &str, labels: &[(&str, &str)]) -> Series {
    Series::new(name, labels.iter().copied())
}

/// Upstream's seriesRegistryTestSeries: one slice per rule.
fn upstream_series() -> Vec<Vec<Series>> {
    let cont = [
        ("pod", "somepod"),
        ("namespace", "somens"),
        ("container", "somecont"),
    ];
    vec![
        vec![s("container_some_time_seconds_total", &cont)],
        vec![s("container_some_count_total", &cont)],
        vec![s("container_some_usage", &cont)],
        vec![
            s("node_gigawatts", &[("kube_node", "somenode")]),
            s(
                "service_proxy_packets",
                &[("kube_service", "somesvc"), ("kube_namespace", "somens")],
            ),
        ],
        vec![
            s(
                "ingress_hits_total",
                &[
                    ("kube_ingress", "someingress"),
                    ("kube_service", "somesvc"),
                    ("kube_pod", "backend1"),
                    ("kube_namespace", "somens"),
                ],
            ),
            s(
                "ingress_hits_total",
                &[
                    ("kube_ingress", "someingress"),
                    ("kube_service", "somesvc"),
                    ("kube_pod", "backend2"),
                    ("kube_namespace", "somens"),
                ],
            ),
            s(
                "volume_claims_total",
                &[("kube_persistentvolume", "somepv")],
            ),
        ],
        vec![
            s(
                "work_queue_wait_seconds_total",
                &[("kube_deployment", "somedep"), ("kube_namespace", "somens")],
            ),
            s("node_fan_seconds_total", &[("kube_node", "somenode")]),
        ],
    ]
}

fn registry() -> CustomRegistry {
    let cfg = parse_str("t.yaml", DEFAULT_RULES)
        .unwrap()
        .compile()
        .unwrap();
    let mut r = CustomRegistry::new(cfg.rules);
    let report = r
        .update(
            &mapper(),
            upstream_series().into_iter().map(Ok::<_, String>),
        )
        .unwrap();
    assert!(report.failed.is_empty());
    assert!(report.duplicates.is_empty(), "{:?}", report.duplicates);
    r
}

fn info(group: &str, resource: &str, namespaced: bool, metric: &str) -> CustomMetricInfo {
    CustomMetricInfo::normalized(&mapper(), group, resource, namespaced, metric).unwrap()
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

/// (group, resource, namespaced, metric, namespace, names, metric selector, query)
type Case<'a> = (
    &'a str,
    &'a str,
    bool,
    &'a str,
    Option<&'a str>,
    &'a [&'a str],
    &'a str,
    &'a str,
);

#[test]
fn upstream_registry_queries() {
    let r = registry();
    let cases: &[Case] = &[
        (
            "",
            "pods",
            true,
            "some_usage",
            Some("somens"),
            &["somepod1", "somepod2"],
            "",
            r#"sum(container_some_usage{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}) by (pod)"#,
        ),
        (
            "",
            "pods",
            true,
            "some_count",
            Some("somens"),
            &["somepod1", "somepod2"],
            "",
            r#"sum(rate(container_some_count_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)"#,
        ),
        (
            "",
            "pods",
            true,
            "some_time",
            Some("somens"),
            &["somepod1", "somepod2"],
            "",
            r#"sum(rate(container_some_time_seconds_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)"#,
        ),
        (
            "",
            "service",
            true,
            "ingress_hits",
            Some("somens"),
            &["somesvc"],
            "",
            r#"sum(rate(ingress_hits_total{kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)"#,
        ),
        (
            "",
            "service",
            true,
            "ingress_hits",
            Some("somens"),
            &["somesvc"],
            "param1=value1",
            r#"sum(rate(ingress_hits_total{param1="value1",kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)"#,
        ),
        (
            "extensions",
            "ingress",
            true,
            "ingress_hits",
            Some("somens"),
            &["someingress"],
            "",
            r#"sum(rate(ingress_hits_total{kube_namespace="somens",kube_ingress="someingress"}[1m])) by (kube_ingress)"#,
        ),
        (
            "",
            "pod",
            true,
            "ingress_hits",
            Some("somens"),
            &["somepod"],
            "",
            r#"sum(rate(ingress_hits_total{kube_namespace="somens",kube_pod="somepod"}[1m])) by (kube_pod)"#,
        ),
        (
            "",
            "service",
            true,
            "service_proxy_packets",
            Some("somens"),
            &["somesvc"],
            "",
            r#"sum(service_proxy_packets{kube_namespace="somens",kube_service="somesvc"}) by (kube_service)"#,
        ),
        (
            "extensions",
            "deployment",
            true,
            "work_queue_wait",
            Some("somens"),
            &["somedep"],
            "",
            r#"sum(rate(work_queue_wait_seconds_total{kube_namespace="somens",kube_deployment="somedep"}[1m])) by (kube_deployment)"#,
        ),
        (
            "",
            "node",
            false,
            "node_gigawatts",
            None,
            &["somenode"],
            "",
            r#"sum(node_gigawatts{kube_node="somenode"}) by (kube_node)"#,
        ),
        (
            "",
            "persistentvolume",
            false,
            "volume_claims",
            None,
            &["somepv"],
            "",
            r#"sum(rate(volume_claims_total{kube_persistentvolume="somepv"}[1m])) by (kube_persistentvolume)"#,
        ),
        (
            "",
            "node",
            false,
            "node_fan",
            None,
            &["somenode"],
            "",
            r#"sum(rate(node_fan_seconds_total{kube_node="somenode"}[1m])) by (kube_node)"#,
        ),
    ];
    for (group, resource, namespaced, metric, ns, objs, selector, want) in cases {
        let i = info(group, resource, *namespaced, metric);
        let sel = parse_label_selector(selector).unwrap();
        let q = r.query_for(&i, *ns, &names(objs), &sel).unwrap();
        assert_eq!(q.query, *want, "{i}");
    }
}

#[test]
fn upstream_registry_listing() {
    let r = registry();
    let got: Vec<String> = r
        .list_custom_metrics()
        .iter()
        .map(|i| i.to_string())
        .collect();
    let mut want = vec![
        "pods/some_count(namespaced)",
        "namespaces/some_count",
        "pods/some_time(namespaced)",
        "namespaces/some_time",
        "pods/some_usage(namespaced)",
        "namespaces/some_usage",
        "services/ingress_hits(namespaced)",
        "ingresses.extensions/ingress_hits(namespaced)",
        "pods/ingress_hits(namespaced)",
        "namespaces/ingress_hits",
        "services/service_proxy_packets(namespaced)",
        "namespaces/service_proxy_packets",
        "deployments.extensions/work_queue_wait(namespaced)",
        "namespaces/work_queue_wait",
        "nodes/node_gigawatts",
        "persistentvolumes/volume_claims",
        "nodes/node_fan",
    ];
    want.sort();
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, want);
    // listing order is stable: sorted by resource, scope, name
    let mut by_key = r.list_custom_metrics().to_vec();
    by_key.sort();
    assert_eq!(by_key, r.list_custom_metrics());
}

#[test]
fn lookups_give_source_and_resource_label() {
    let r = registry();
    let q = r
        .query_for(
            &info("", "pods", true, "ingress_hits"),
            Some("somens"),
            &names(&["a"]),
            &[],
        )
        .unwrap();
    assert_eq!(q.source.rule, 4);
    assert_eq!(&*q.source.series, "ingress_hits_total");
    assert_eq!(&*q.source.resource_label, "kube_pod");
    assert_eq!(
        r.query_for(
            &info("", "pods", true, "nope"),
            Some("ns"),
            &names(&["a"]),
            &[]
        )
        .unwrap_err(),
        RegistryError::NotFound {
            metric: "nope".into(),
            resource: "pods".into()
        }
    );
    // scope is part of the key, as upstream
    assert!(r.lookup(&info("", "pods", false, "ingress_hits")).is_none());
    assert!(matches!(
        r.query_for(
            &info("", "pods", true, "ingress_hits"),
            Some("ns"),
            &[],
            &[]
        ),
        Err(RegistryError::NoNames(_))
    ));
    assert!(CustomMetricInfo::normalized(&mapper(), "", "widgets", true, "x").is_none());
}

const TWO_RULES: &str = r#"
rules:
- seriesQuery: '{__name__=~"^a_.*",namespace!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^a_(.*)$"}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
- seriesQuery: '{__name__=~"^b_.*",namespace!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^b_(.*)$"}
  metricsQuery: max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
"#;

fn two_rules() -> CustomRegistry {
    CustomRegistry::new(
        parse_str("t.yaml", TWO_RULES)
            .unwrap()
            .compile()
            .unwrap()
            .rules,
    )
}

#[test]
fn failing_rule_keeps_its_last_good_entries() {
    let m = mapper();
    let mut r = two_rules();
    assert!(!r.is_ready());
    let first: Vec<Result<Vec<Series>, String>> = vec![
        Ok(vec![s("a_x", &[("namespace", "n"), ("pod", "p")])]),
        Err("timeout".into()),
    ];
    let rep = r.update(&m, first).unwrap();
    assert_eq!(rep.failed.len(), 1);
    assert_eq!(rep.failed[0].rule, 1);
    assert_eq!(
        rep.failed[0].series_query,
        r#"{__name__=~"^b_.*",namespace!=""}"#
    );
    assert!(!rep.failed[0].kept_previous);
    assert!(!r.is_ready());
    assert_eq!(r.rules_without_data(), [1]);
    assert_eq!(rep.metrics, 2); // pods/x, namespaces/x

    let second: Vec<Result<Vec<Series>, String>> = vec![
        Ok(vec![s("a_x", &[("namespace", "n"), ("pod", "p")])]),
        Ok(vec![s("b_y", &[("namespace", "n"), ("pod", "p")])]),
    ];
    r.update(&m, second).unwrap();
    assert!(r.is_ready());
    assert_eq!(r.list_custom_metrics().len(), 4);

    // rule 0 fails now: its entries stay; rule 1's are refreshed (b_y gone, b_z new)
    let third: Vec<Result<Vec<Series>, String>> = vec![
        Err("connection refused".into()),
        Ok(vec![s("b_z", &[("namespace", "n"), ("pod", "p")])]),
    ];
    let rep = r.update(&m, third).unwrap();
    assert_eq!(rep.failed[0].rule, 0);
    assert!(rep.failed[0].kept_previous);
    assert_eq!(rep.failed[0].error, "connection refused");
    let metrics: Vec<String> = r
        .list_custom_metrics()
        .iter()
        .map(|i| i.to_string())
        .collect();
    assert_eq!(
        metrics,
        [
            "namespaces/x",
            "namespaces/z",
            "pods/x(namespaced)",
            "pods/z(namespaced)"
        ]
    );
    assert!(r.is_ready());
    let results: Vec<Result<Vec<Series>, String>> = vec![Ok(vec![])];
    assert_eq!(
        r.update(&m, results).unwrap_err(),
        RegistryError::RuleCount { got: 1, rules: 2 }
    );
}

#[test]
fn duplicate_metric_from_two_rules_is_reported_later_rule_wins() {
    let m = mapper();
    let mut r = two_rules();
    let rep = r
        .update(
            &m,
            vec![
                Ok::<_, String>(vec![s("a_dup", &[("namespace", "n"), ("pod", "p")])]),
                Ok(vec![s("b_dup", &[("pod", "p"), ("namespace", "n")])]),
            ],
        )
        .unwrap();
    let dups: Vec<(String, Vec<(usize, String)>)> = rep
        .duplicates
        .iter()
        .map(|d| (d.metric.to_string(), d.sources.clone()))
        .collect();
    let sources = vec![(0, "a_dup".to_string()), (1, "b_dup".to_string())];
    assert_eq!(
        dups,
        [
            ("namespaces/dup".to_string(), sources.clone()),
            ("pods/dup(namespaced)".to_string(), sources),
        ]
    );
    let q = r
        .query_for(
            &info("", "pods", true, "dup"),
            Some("n"),
            &names(&["p"]),
            &[],
        )
        .unwrap();
    assert_eq!(q.query, r#"max(b_dup{namespace="n",pod="p"}) by (pod)"#);
}

#[test]
fn duplicate_within_one_rule_is_reported() {
    let cfg = parse_str(
        "t.yaml",
        "rules:\n- seriesQuery: '{namespace!=\"\"}'\n  resources: {template: <<.Resource>>}\n  name: {matches: '^(.*)_(total|count)$', as: '$1'}\n  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)\n",
    )
    .unwrap()
    .compile()
    .unwrap();
    let mut r = CustomRegistry::new(cfg.rules);
    let rep = r
        .update(
            &mapper(),
            vec![Ok::<_, String>(vec![
                s("req_total", &[("pod", "p")]),
                s("req_count", &[("pod", "p")]),
            ])],
        )
        .unwrap();
    assert_eq!(rep.duplicates.len(), 1);
    assert_eq!(
        rep.duplicates[0].sources,
        [(0, "req_total".to_string()), (0, "req_count".to_string())]
    );
}

#[test]
fn index_size_follows_metrics_and_resources_not_series() {
    let m = mapper();
    let mut r = two_rules();
    let many: Vec<Series> = (0..5000)
        .map(|i| {
            Series::new(
                if i % 2 == 0 { "a_one" } else { "a_two" },
                [
                    ("namespace", format!("ns{}", i % 7).as_str()),
                    ("pod", format!("pod-{i}").as_str()),
                    ("instance", format!("10.0.0.{}", i % 250).as_str()),
                ],
            )
        })
        .collect();
    let rep = r
        .update(&m, vec![Ok::<_, String>(many), Ok(vec![])])
        .unwrap();
    // 2 metrics x {pods, namespaces}; `instance` names no resource
    assert_eq!(rep.metrics, 4);
    assert_eq!(r.index.per_rule[0].as_ref().unwrap().len(), 4);
    assert_eq!(r.index.merged.len(), 4);
}

#[test]
fn unresolved_overrides_are_reported_and_skipped() {
    let cfg = parse_str(
        "t.yaml",
        "rules:\n- seriesQuery: up\n  resources: {overrides: {pod: {resource: pod}, widget: {group: x.io, resource: widget}}}\n  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)\n",
    )
    .unwrap()
    .compile()
    .unwrap();
    let mut r = CustomRegistry::new(cfg.rules);
    let rep = r
        .update(
            &mapper(),
            vec![Ok::<_, String>(vec![s(
                "up",
                &[("pod", "p"), ("widget", "w")],
            )])],
        )
        .unwrap();
    assert_eq!(
        rep.unresolved_overrides,
        [UnresolvedOverride {
            rule: 0,
            label: "widget".into(),
            resource: "widget.x.io".into()
        }]
    );
    assert_eq!(rep.metrics, 1);
}

#[test]
fn relist_plan_dedups_series_queries() {
    let cfg = parse_str("t.yaml", DEFAULT_RULES)
        .unwrap()
        .compile()
        .unwrap();
    let (queries, plan) = relist_plan(&cfg.rules);
    assert_eq!(queries.len(), 2);
    assert_eq!(plan, [0, 0, 0, 1, 1, 1]);
    // results per query can be shared by reference
    let per_query: Vec<Result<Vec<Series>, String>> =
        vec![Ok(upstream_series()[0].clone()), Ok(vec![])];
    let mut r = CustomRegistry::new(cfg.rules);
    r.update(
        &mapper(),
        plan.iter()
            .map(|&q| per_query[q].as_ref().map(|v| v.as_slice())),
    )
    .unwrap();
    assert!(r.lookup(&info("", "pods", true, "some_time")).is_some());
}

mod external;
