//! Parsing and validation of custom-resource-state configurations.

use super::*;

/// Upstream's example_config.yaml, minus its stale `value: [count]` key.
pub(crate) const EXAMPLE: &str = r#"
kind: CustomResourceStateMetrics
spec:
  resources:
    -
      groupVersionKind:
        group: myteam.io
        kind: "Foo"
        version: "v1"
      labelsFromPath:
        name: [ metadata, name ]
      metrics:
        - name: "active_count"
          help: "Number Foo Bars active"
          each:
            type: Gauge
            gauge:
              path: [status, active]
              labelFromKey: type
              labelsFromPath:
                bar: [bar]
          commonLabels:
            custom_metric: "yes"

          labelsFromPath:
            "*": [metadata, labels]  # copy all labels from CR labels
            foo: [metadata, labels, foo]  # copy a single label (overrides *)

        - name: "other_count"
          each:
            type: Gauge
            gauge:
              path: [status, other]
          errorLogV: 5

        - name: "info"
          each:
            type: Info
            info:
              path: [spec, version]
          errorLogV: 5

        - name: "phase"
          each:
            type: StateSet
            stateSet:
              path: [status, phase]
              labelName: phase
              list: [Active, Running, Terminating]
          errorLogV: 5
"#;

#[test]
fn upstream_example_deserializes() {
    let c = CustomResourceStateConfig::parse("example.yaml", EXAMPLE).expect("parses");
    let r = &c.spec.resources[0];
    assert_eq!(c.kind.as_deref(), Some("CustomResourceStateMetrics"));
    assert_eq!(
        r.group_version_kind,
        GroupVersionKind::new("myteam.io", "v1", "Foo")
    );
    assert_eq!(r.metrics[0].name, "active_count");
    assert_eq!(r.metrics[1].error_log_v, 5);
    assert_eq!(r.metrics[2].each.kind, MetricKind::Info);
    assert_eq!(r.metrics[3].each.kind, MetricKind::StateSet);
    assert_eq!(
        r.metrics[0].labels_from_path.get("*"),
        Some(&PathSpec::from(["metadata", "labels"]))
    );
    assert_eq!(r.metric_name_prefix(), DEFAULT_PREFIX);
    assert_eq!(
        r.full_name(&r.metrics[0]),
        "kube_customresource_active_count"
    );
}

#[test]
fn stale_key_in_upstream_example_is_rejected_with_its_line() {
    let text = EXAMPLE.replace(
        "              labelsFromPath:\n                bar: [bar]\n",
        "              labelsFromPath:\n                bar: [bar]\n              value: [count]\n",
    );
    let err = CustomResourceStateConfig::parse("crs.yaml", &text)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("crs.yaml:22:15: unknown field `value`"),
        "{err}"
    );
    assert!(err.contains("value"), "{err}");
}

#[test]
fn type_is_case_insensitive_and_unknown_types_fail() {
    for t in ["gauge", "GAUGE", "Gauge"] {
        let y = format!(
            "spec:\n  resources:\n  - groupVersionKind: {{group: a.io, version: v1, kind: A}}\n    metrics:\n    - name: x\n      each:\n        type: {t}\n        gauge:\n          path: [a]\n"
        );
        CustomResourceStateConfig::parse("c", &y).expect(t);
    }
    let y = "spec:\n  resources:\n  - groupVersionKind: {group: a.io}\n    metrics:\n    - name: x\n      each:\n        type: Counter\n";
    let err = CustomResourceStateConfig::parse("c", y)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown metric type \"Counter\""), "{err}");
    assert!(err.starts_with("c:7:"), "{err}");
}

#[test]
fn scalars_are_strings_and_nulls_are_empty() {
    let y = r#"
spec:
  resources:
  - groupVersionKind: {group: a.io, version: 1, kind: A}
    metricNamePrefix: ""
    commonLabels:
    labelsFromPath:
      whole:
    metrics:
    - name: x
      each:
        type: gauge
        gauge:
          path: [spec, order, 0, value]
          nilIsZero: true
"#;
    let c = CustomResourceStateConfig::parse("c", y).expect("parses");
    let r = &c.spec.resources[0];
    assert_eq!(r.group_version_kind.version, "1");
    assert_eq!(r.metric_name_prefix(), "");
    assert_eq!(r.full_name(&r.metrics[0]), "x");
    assert!(r.common_labels.is_empty());
    assert_eq!(r.labels_from_path.get("whole"), Some(&PathSpec::default()));
    let g = r.metrics[0].each.gauge.as_ref().unwrap();
    assert_eq!(g.path, PathSpec::from(["spec", "order", "0", "value"]));
    assert!(g.nil_is_zero);
}

fn invalid(y: &str) -> String {
    CustomResourceStateConfig::parse("crs.yaml", y)
        .unwrap_err()
        .to_string()
}

#[test]
fn validation_names_resource_and_metric() {
    let base = "spec:\n  resources:\n  - groupVersionKind: {group: G, version: v1, kind: Foo}\n    metrics:\n    - name: NAME\n      each:\n        type: TYPE\n";
    let mk = |g: &str, name: &str, t: &str, rest: &str| {
        base.replace("G,", &format!("{g},"))
            .replace("NAME", name)
            .replace("TYPE", t)
            + rest
    };
    let e = invalid(&mk("\"*\"", "x", "Gauge", "        gauge: {path: [a]}\n"));
    assert!(
        e.contains("spec.resources[0] (*_v1_Foo).groupVersionKind.group: is required"),
        "{e}"
    );
    let e = invalid(&mk("a.io", "x", "Gauge", ""));
    assert_eq!(
        e,
        "crs.yaml: invalid configuration: spec.resources[0] (a.io_v1_Foo).metrics[0] (x).each.gauge: is required for this type"
    );
    let e = invalid(&mk(
        "a.io",
        "x",
        "StateSet",
        "        stateSet: {path: [a], list: [A]}\n",
    ));
    assert!(
        e.ends_with("metrics[0] (x).each.stateSet.labelName: is required"),
        "{e}"
    );
    let e = invalid(&mk(
        "a.io",
        "x",
        "Gauge",
        "        gauge: {path: [status, conditions, \"[Ready]\"]}\n",
    ));
    assert!(
        e.ends_with("metrics[0] (x).each.gauge.path: invalid list lookup: [Ready]"),
        "{e}"
    );
    let e = invalid(&mk(
        "a.io",
        "x",
        "Info",
        "        info: {labelsFromPath: {cond: [status, \"[Ready]\"]}}\n",
    ));
    assert!(
        e.ends_with("each.info.labelsFromPath.cond: invalid list lookup: [Ready]"),
        "{e}"
    );
    let e = invalid(&mk(
        "a.io",
        "bad-name",
        "Gauge",
        "        gauge: {path: [a]}\n",
    ));
    assert!(
        e.contains("metrics[0] (bad-name).name: \"kube_customresource_bad-name\" is not a valid"),
        "{e}"
    );
    let e = invalid(&mk("a.io", "\"\"", "Gauge", "        gauge: {path: [a]}\n"));
    assert!(e.ends_with("metrics[0].name: is required"), "{e}");
    let e = invalid(&mk(
        "a.io",
        "x",
        "Gauge",
        "        gauge: {path: [a], labelFromKey: \"a-b\"}\n",
    ));
    assert!(
        e.contains("each.gauge.labelFromKey: \"a-b\" is not a valid"),
        "{e}"
    );
}

#[test]
fn wildcards() {
    let g = GroupVersionKind::new("a.io", "*", "");
    assert!(g.version_is_wildcard() && g.kind_is_wildcard());
    assert_eq!(g.to_string(), "a.io_*_");
}
