use std::time::Duration;

use super::*;
use crate::config::PromDuration;

fn err(text: &str) -> String {
    parse_str("adapter.yaml", text).unwrap_err().to_string()
}

const UPSTREAM_STYLE: &str = r#"
rules:
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: []
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name:
    matches: ^container_(.*)_seconds_total$
    as: ""
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[1m])) by (<<.GroupBy>>)
- seriesQuery: '{namespace!="",__name__!~"^container_.*"}'
  seriesFilters:
  - isNot: .*_total$
  resources:
    template: <<.Resource>>
  name:
    matches: ""
    as: ""
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
externalRules:
- seriesQuery: '{__name__=~"^queue_.*"}'
  resources:
    namespaced: false
  name: {matches: "^queue_(.*)$", as: "${1}_depth"}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
resourceRules:
  cpu:
    containerQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
    nodeQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>, id='/'}[1m])) by (<<.GroupBy>>)
    resources:
      overrides:
        instance: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  memory:
    containerQuery: sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)
    nodeQuery: sum(container_memory_working_set_bytes{<<.LabelMatchers>>,id='/'}) by (<<.GroupBy>>)
    resources:
      overrides:
        instance: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  window: 1m
"#;

#[test]
fn parses_upstream_format() {
    let cfg = parse_str("adapter.yaml", UPSTREAM_STYLE).unwrap();
    assert_eq!(cfg.rules.len(), 2);
    assert_eq!(cfg.rules[0].resources.overrides["pod"].resource, "pod");
    assert_eq!(cfg.rules[1].series_filters[0].is_not, ".*_total$");
    assert_eq!(cfg.rules[1].resources.template, "<<.Resource>>");
    assert_eq!(cfg.external_rules[0].resources.namespaced, Some(false));
    assert_eq!(cfg.external_rules[0].name.as_, "${1}_depth");
    let rr = cfg.resource_rules.as_ref().unwrap();
    assert_eq!(rr.window, PromDuration(Duration::from_secs(60)));
    assert_eq!(rr.cpu.container_label, "container");
    let compiled = cfg.compile().unwrap();
    assert_eq!(compiled.rules.len(), 2);
    assert_eq!(compiled.external_rules.len(), 1);
    assert!(!compiled.external_rules[0].namespaced());
    assert!(compiled.resource_rules.is_some());
}

#[test]
fn absent_and_null_sections_are_empty() {
    let cfg = parse_str("a.yaml", "rules:\nexternalRules:\n").unwrap();
    assert_eq!(cfg, MetricsDiscoveryConfig::default());
    let cfg = parse_str("a.yaml", "{}\n").unwrap();
    assert!(cfg.rules.is_empty() && cfg.resource_rules.is_none());
}

#[test]
fn strict_unknown_and_duplicate_keys() {
    let e = err("rules:\n- seriesQuerry: up\n");
    assert!(e.starts_with("adapter.yaml:2:"), "{e}");
    assert!(e.contains("seriesQuerry"), "{e}");
    let e = err("rules:\n- seriesQuery: up\n  name: {matches: a, As: b}\n");
    assert!(e.starts_with("adapter.yaml:3:"), "{e}");
    let e = err("rules: []\nrules: []\n");
    assert!(e.starts_with("adapter.yaml:2:"), "{e}");
    let e = err("resourceRules:\n  cpu: {}\n  disk: {}\n");
    assert!(e.contains("disk"), "{e}");
}

#[test]
fn window_durations() {
    for (text, secs, shown) in [
        ("0", 0, "0s"),
        ("30s", 30, "30s"),
        ("5m", 300, "5m"),
        ("1h30m", 5400, "1h30m"),
        ("2d", 172_800, "2d"),
        ("1w", 604_800, "1w"),
        ("8d", 691_200, "8d"),
        ("1y", 31_536_000, "1y"),
    ] {
        let d = PromDuration::parse(text).unwrap();
        assert_eq!(d.0, Duration::from_secs(secs), "{text}");
        assert_eq!(d.to_string(), shown, "{text}");
    }
    assert_eq!(
        PromDuration::parse("1500ms").unwrap().to_string(),
        "1s500ms"
    );
    assert_eq!(
        PromDuration::parse("5").unwrap_err(),
        "not a valid duration string: \"5\""
    );
    assert!(PromDuration::parse("5m1h").is_err());
    assert!(PromDuration::parse("1.5h").is_err());
    assert_eq!(
        PromDuration::parse("").unwrap_err(),
        "empty duration string"
    );
    let e = err("resourceRules:\n  window: 5 minutes\n");
    assert!(e.starts_with("adapter.yaml:2:"), "{e}");
    assert!(e.contains("not a valid duration string"), "{e}");
}

fn rule_yaml(body: &str) -> String {
    format!(
        "rules:\n- seriesQuery: up\n  resources: {{template: <<.Resource>>}}\n  metricsQuery: sum(<<.Series>>)\n- seriesQuery: 'http_requests_total{{namespace!=\"\"}}'\n{body}"
    )
}

#[test]
fn validation_names_rule_index_field_and_series_query() {
    let sq = r#""http_requests_total{namespace!=\"\"}""#;
    let cases = [
        (
            "  resources: {template: <<.Resource>>}\n  name: {matches: '^(.*)_(.*)$'}\n  metricsQuery: sum(<<.Series>>)\n",
            format!(
                "adapter.yaml: invalid configuration: rules[1].name: must specify an 'as' value for name matcher \"^(.*)_(.*)$\" associated with series query {sq}"
            ),
        ),
        (
            "  resources: {template: <<.Resource>>}\n  seriesFilters: [{is: a, isNot: b}]\n  metricsQuery: sum(<<.Series>>)\n",
            format!(
                "adapter.yaml: invalid configuration: rules[1].seriesFilters: unable to generate series name filter associated with series query {sq}: cannot have both an `is` (\"a\") and `isNot` (\"b\") expression in a single filter"
            ),
        ),
        (
            "  resources: {template: <<.Resource>>}\n  seriesFilters: [{}]\n  metricsQuery: sum(<<.Series>>)\n",
            format!(
                "adapter.yaml: invalid configuration: rules[1].seriesFilters: unable to generate series name filter associated with series query {sq}: must have either an `is` or `isNot` expression in a filter"
            ),
        ),
        (
            "  resources: {template: 'kube_<<.Group>>'}\n  metricsQuery: sum(<<.Series>>)\n",
            format!(
                "adapter.yaml: invalid configuration: rules[1].resources: unable to generate label format from template \"kube_<<.Group>>\": must include at least <<.Resource>> in the label template (series query {sq})"
            ),
        ),
        (
            "  metricsQuery: sum(<<.Series>>)\n",
            format!(
                "adapter.yaml: invalid configuration: rules[1].resources: neither a template nor overrides: no series of series query {sq} can be associated with a Kubernetes resource"
            ),
        ),
    ];
    for (body, want) in cases {
        assert_eq!(err(&rule_yaml(body)), want, "{body}");
    }
    let e = err(&rule_yaml(
        "  resources: {template: <<.Resource>>}\n  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m]) by (<<.GroupBy>>)\n",
    ));
    assert!(
        e.starts_with(&format!(
            "adapter.yaml: invalid configuration: rules[1].metricsQuery: unable to construct metrics query associated with series query {sq}: query "
        )),
        "{e}"
    );
    assert!(e.contains("is not valid PromQL"), "{e}");
    let e = err(&rule_yaml("  resources: {template: <<.Resource>>}\n"));
    assert!(
        e.contains("rules[1].metricsQuery")
            && e.contains("empty query produced by metrics query template"),
        "{e}"
    );
    let e = err(
        "rules:\n- seriesQuery: 'rate(up[1m])'\n  resources: {template: <<.Resource>>}\n  metricsQuery: sum(<<.Series>>)\n",
    );
    assert!(
        e.starts_with("adapter.yaml: invalid configuration: rules[0].seriesQuery: invalid series query \"rate(up[1m])\": must be a series selector"),
        "{e}"
    );
    let e = err(
        "externalRules:\n- seriesQuery: up\n  name: {matches: '('}\n  metricsQuery: sum(<<.Series>>)\n",
    );
    assert!(
        e.starts_with("adapter.yaml: invalid configuration: externalRules[0].name: unable to generate series name filter from name rules associated with series query \"up\": unable to compile series filter \"(\": "),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e:?}");
}

#[test]
fn external_rules_need_no_resources() {
    let cfg = parse_str(
        "a.yaml",
        "externalRules:\n- seriesQuery: up\n  resources: {namespaced: false}\n  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>})\n",
    )
    .unwrap();
    assert_eq!(cfg.compile().unwrap().external_rules.len(), 1);
}

#[test]
fn resource_rule_errors() {
    let e = err(
        "resourceRules:\n  cpu:\n    containerQuery: sum(x{<<.LabelMatchers>>}) by (<<.GroupBy>>)\n    nodeQuery: sum(x{<<.LabelMatchers>>}) by (<<.GroupBy>>)\n",
    );
    assert_eq!(
        e,
        "adapter.yaml: invalid configuration: resourceRules.memory: unable to construct querier for memory metrics: unable to construct container metrics query: template \"\": empty query produced by metrics query template"
    );
    let e = err("resourceRules:\n  cpu:\n    containerQuery: 'sum(<<.Nope>>)'\n");
    assert!(
        e.starts_with("adapter.yaml: invalid configuration: resourceRules.cpu: unable to construct querier for CPU metrics: unable to construct container metrics query: "),
        "{e}"
    );
}

#[test]
fn default_config_loads() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/adapter/default-config.yaml"
    );
    let cfg = load(path).unwrap();
    let compiled = cfg.compile().unwrap();
    assert_eq!(compiled.rules.len(), 3);
    assert_eq!(compiled.external_rules.len(), 1);
    let rr = compiled.resource_rules.as_ref().unwrap();
    assert_eq!(rr.window, Duration::from_secs(300));
    let (parsed, _) = load_compiled(path, std::fs::read(path).unwrap()).unwrap();
    assert_eq!(parsed, cfg);
    // the rules produce the metric names HPA manifests use
    assert_eq!(
        compiled.rules[0]
            .metric_name_for_series("container_cpu_usage_seconds_total")
            .unwrap(),
        "cpu_usage"
    );
    assert_eq!(
        compiled.rules[1]
            .metric_name_for_series("container_memory_working_set_bytes")
            .unwrap(),
        "memory_working_set_bytes"
    );
}

#[test]
fn load_compiled_rejects_bad_bytes_and_rules() {
    let e = load_compiled("c.yaml", vec![0xff]).unwrap_err().to_string();
    assert!(e.contains("UTF-8"), "{e}");
    let e = load_compiled(
        "c.yaml",
        b"rules:\n- seriesQuery: up\n  metricsQuery: x\n".to_vec(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("c.yaml: invalid configuration: rules[0].resources:"),
        "{e}"
    );
}
