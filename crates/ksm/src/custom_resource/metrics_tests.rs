//! Ports of upstream's registry_factory_test.go (`Test_values`, `Test_addPathLabels`,
//! `Test_fullName`, ...) plus golden documents from the user documentation.

use super::*;
use crate::custom_resource::config::CustomResourceStateConfig;
use crate::custom_resource::testdata::cr;
use serde_json::json;

fn config(yaml: &str) -> CustomResourceStateConfig {
    CustomResourceStateConfig::parse("test.yaml", yaml).expect("valid config")
}

fn compile_first(yaml: &str) -> CompiledResource {
    let c = config(yaml);
    let r = &c.spec.resources[0];
    CompiledResource::compile(r, &r.group_version_kind).expect("compiles")
}

/// A one-metric resource whose `each` is `each` (YAML flow mapping).
fn family(each: &str) -> CompiledFamily {
    let yaml = format!(
        "spec:\n  resources:\n  - groupVersionKind: {{group: myteam.io, version: v1, kind: Foo}}\n    metrics:\n    - name: m\n      each: {each}\n"
    );
    compile_first(&yaml).families.remove(0)
}

fn ev(value: f64, labels: &[(&str, &str)]) -> EachValue {
    EachValue {
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
    }
}

fn values(each: &str) -> (Vec<EachValue>, Vec<String>) {
    family(each).values(&cr())
}

fn ok(each: &str) -> Vec<EachValue> {
    let (v, errors) = values(each);
    assert!(errors.is_empty(), "{each}: {errors:?}");
    v
}

#[test]
fn gauge_single() {
    assert_eq!(
        ok("{type: Gauge, gauge: {path: [spec, replicas]}}"),
        [ev(1.0, &[])]
    );
}

#[test]
fn gauge_obj_label_from_key() {
    assert_eq!(
        ok("{type: Gauge, gauge: {path: [status, active], labelFromKey: type}}"),
        [
            ev(1.0, &[("type", "type-a")]),
            ev(3.0, &[("type", "type-b")])
        ]
    );
}

#[test]
fn gauge_deep_obj() {
    assert_eq!(
        ok(
            "{type: Gauge, gauge: {path: [status, sub], labelFromKey: type, labelsFromPath: {active: [active]}, valueFrom: [ready]}}"
        ),
        [
            ev(2.0, &[("active", "1"), ("type", "type-a")]),
            ev(4.0, &[("active", "3"), ("type", "type-b")])
        ]
    );
}

#[test]
fn gauge_path_relative_value_from() {
    assert_eq!(
        ok(
            "{type: Gauge, gauge: {path: [metadata], labelsFromPath: {name: [name]}, valueFrom: [creationTimestamp]}}"
        ),
        [ev(1.6563744e+09, &[("name", "foo")])]
    );
    assert_eq!(
        ok(
            "{type: Gauge, gauge: {path: [metadata], labelsFromPath: {name: [name]}, valueFrom: [percentage]}}"
        ),
        [ev(0.39, &[("name", "foo")])]
    );
}

#[test]
fn gauge_non_existent_path() {
    let (v, errors) = values(
        "{type: Gauge, gauge: {path: [foo], labelsFromPath: {name: [name]}, valueFrom: [creationTimestamp]}}",
    );
    assert!(v.is_empty());
    assert_eq!(errors, ["[foo]: got nil while resolving path"]);
}

#[test]
fn gauge_value_from_missing_is_silent() {
    assert_eq!(
        values("{type: Gauge, gauge: {path: [spec, replicas], valueFrom: [non-existent]}}"),
        (vec![], vec![])
    );
    assert_eq!(
        values(
            "{type: Gauge, gauge: {path: [status, condition_values], labelsFromPath: {name: [name]}, valueFrom: [non-existent]}}"
        ),
        (vec![], vec![])
    );
}

#[test]
fn gauge_array() {
    assert_eq!(
        ok(
            "{type: Gauge, gauge: {path: [status, condition_values], labelsFromPath: {name: [name]}, valueFrom: [value]}}"
        ),
        [ev(45.0, &[("name", "a")]), ev(66.0, &[("name", "b")])]
    );
}

#[test]
fn gauge_conversions() {
    for (path, want) in [
        ("[metadata, creationTimestamp]", 1656374400.0),
        ("[status, quantity_milli]", 0.25),
        ("[status, quantity_binarySI]", 5.36870912e+09),
        ("[status, percentage]", 0.28),
        ("[status, uptime]", 43.21),
    ] {
        assert_eq!(
            ok(&format!("{{type: Gauge, gauge: {{path: {path}}}}}")),
            [ev(want, &[])],
            "{path}"
        );
    }
}

#[test]
fn gauge_nil_is_zero() {
    assert_eq!(
        ok("{type: Gauge, gauge: {path: [spec, paused], nilIsZero: true}}"),
        [ev(0.0, &[])]
    );
}

#[test]
fn gauge_status_conditions() {
    assert_eq!(
        ok("{type: Gauge, gauge: {path: [status, conditions, \"[type=Ready]\", status]}}"),
        [ev(1.0, &[])]
    );
    assert_eq!(
        ok(
            "{type: Gauge, gauge: {path: [status, conditions], labelsFromPath: {type: [type]}, valueFrom: [status]}}"
        ),
        [
            ev(0.0, &[("type", "Provisioned")]),
            ev(1.0, &[("type", "Ready")])
        ]
    );
}

#[test]
fn gauge_errors_for_non_numbers() {
    let (v, errors) = values("{type: Gauge, gauge: {path: [status, phase]}}");
    assert!(v.is_empty());
    assert_eq!(
        errors,
        ["[status,phase]: []: strconv.ParseFloat: parsing \"foo\": invalid syntax"]
    );
    let (v, errors) = values("{type: Gauge, gauge: {path: [spec, order], valueFrom: [id]}}");
    assert_eq!(v, [ev(1.0, &[]), ev(3.0, &[])]);
    assert!(errors.is_empty());
    let (_, errors) = values(
        "{type: Gauge, gauge: {path: [status, conditions], labelsFromPath: {type: [type]}, valueFrom: [type]}}",
    );
    assert_eq!(
        errors,
        [
            "[status,conditions]: [0]: [type]: strconv.ParseFloat: parsing \"Ready\": invalid syntax",
            "[status,conditions]: [1]: [type]: strconv.ParseFloat: parsing \"Provisioned\": invalid syntax",
        ]
    );
}

/// A one-segment valueFrom naming a key of the object at `path` takes that key's value
/// directly; the other keys are tried as objects holding it.
#[test]
fn gauge_value_from_key_of_the_object() {
    assert_eq!(
        ok("{type: Gauge, gauge: {path: [status], valueFrom: [uptime]}}"),
        [ev(43.21, &[])]
    );
    assert_eq!(
        ok("{type: Gauge, gauge: {path: [status], valueFrom: [uptime], labelFromKey: k}}"),
        [ev(43.21, &[("k", "uptime")])]
    );
}

#[test]
fn info_cases() {
    assert_eq!(
        ok("{type: Info, info: {labelsFromPath: {version: [spec, version]}}}"),
        [ev(1.0, &[("version", "v0.0.0")])]
    );
    assert_eq!(ok("{type: Info, info: {path: [does, not, exist]}}"), []);
    assert_eq!(
        ok("{type: Info, info: {path: [status, active], labelFromKey: type}}"),
        [
            ev(1.0, &[("type", "type-a")]),
            ev(1.0, &[("type", "type-b")])
        ]
    );
    assert_eq!(
        ok("{type: Info, info: {path: [status, sub], labelsFromPath: {active: [active]}}}"),
        [ev(1.0, &[("active", "1")]), ev(1.0, &[("active", "3")])]
    );
    assert_eq!(
        ok("{type: Info, info: {labelsFromPath: {bar: [metadata, annotations, bar=baz]}}}"),
        [ev(1.0, &[("bar", "baz")])]
    );
}

#[test]
fn info_list_of_scalars_with_empty_path_label() {
    let f = family("{type: Info, info: {path: [spec, refs], labelsFromPath: {ref: []}}}");
    let obj = json!({"spec": {"refs": ["my_other_foo", "foo_2"]}});
    let (v, errors) = f.values(&obj);
    assert!(errors.is_empty());
    assert_eq!(
        v,
        [
            ev(1.0, &[("ref", "foo_2")]),
            ev(1.0, &[("ref", "my_other_foo")])
        ]
    );
}

#[test]
fn stateset_cases() {
    assert_eq!(
        ok(
            "{type: StateSet, stateSet: {path: [status, phase], labelName: phase, list: [foo, bar]}}"
        ),
        [ev(0.0, &[("phase", "bar")]), ev(1.0, &[("phase", "foo")])]
    );
    assert_eq!(
        values(
            "{type: StateSet, stateSet: {path: [does, not, exist], labelName: phase, list: [foo, bar]}}"
        ),
        (vec![], vec![])
    );
    assert_eq!(
        values(
            "{type: StateSet, stateSet: {path: [status], valueFrom: [does, not, exist], labelName: phase, list: [foo, bar]}}"
        ),
        (vec![], vec![])
    );
    // Upstream's test decodes through encoding/json, hence its "float64"; objects from
    // the API server carry integers, which Go decodes as int64.
    assert_eq!(
        values(
            "{type: StateSet, stateSet: {path: [spec, replicas], labelName: phase, list: [\"1\", \"2\"]}}"
        ),
        (
            vec![],
            vec!["[spec,replicas]: expected value for path to be string, got int64".to_string()]
        )
    );
    assert_eq!(
        values(
            "{type: StateSet, stateSet: {path: [status], valueFrom: [uptime], labelName: phase, list: [foo, bar]}}"
        ),
        (
            vec![],
            vec!["[status,uptime]: expected value for path to be string, got float64".to_string()]
        )
    );
}

#[test]
fn stateset_over_a_list() {
    let f = family(
        "{type: StateSet, stateSet: {path: [status, conditions], valueFrom: [status], labelName: s, list: [\"True\", \"False\"], labelsFromPath: {type: [type]}}}",
    );
    let (v, errors) = f.values(&cr());
    assert!(errors.is_empty());
    assert_eq!(
        v,
        [
            ev(1.0, &[("s", "False"), ("type", "Provisioned")]),
            ev(0.0, &[("s", "False"), ("type", "Ready")]),
            ev(0.0, &[("s", "True"), ("type", "Provisioned")]),
            ev(1.0, &[("s", "True"), ("type", "Ready")]),
        ]
    );
}

fn lp(pairs: &[(&str, &[&str])]) -> Vec<(String, ValuePath)> {
    pairs
        .iter()
        .map(|(k, p)| (k.to_string(), ValuePath::compile(p).unwrap()))
        .collect()
}

#[test]
fn add_path_labels_all() {
    let mut m = Labels::new();
    add_path_labels(
        Some(&cr()),
        &lp(&[
            ("bool", &["spec", "order", "-1", "value"]),
            ("number", &["spec", "replicas"]),
            ("string", &["metadata", "labels", "foo"]),
        ]),
        &mut m,
    );
    assert_eq!(
        m,
        ev(
            0.0,
            &[("bool", "false"), ("number", "1"), ("string", "bar")]
        )
        .labels
    );
}

#[test]
fn add_path_labels_stars() {
    let mut m = Labels::new();
    add_path_labels(
        Some(&cr()),
        &lp(&[
            ("*1", &["metadata", "annotations"]),
            ("bar", &["metadata", "labels", "foo"]),
            ("label_object_*", &["metadata", "annotations"]),
        ]),
        &mut m,
    );
    assert_eq!(
        m,
        ev(
            0.0,
            &[
                ("qux", "quxx"),
                ("bar", "bar"),
                ("label_object_qux", "quxx"),
                ("label_object_bar", "baz"),
            ]
        )
        .labels
    );
}

#[test]
fn add_path_labels_index_out_of_range_and_sanitizing() {
    let mut m = Labels::new();
    add_path_labels(
        Some(&cr()),
        &lp(&[("idx", &["spec", "order", "5"])]),
        &mut m,
    );
    assert!(m.is_empty());
    let obj = json!({"metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
    add_path_labels(
        Some(&obj),
        &lp(&[
            ("*", &["metadata", "labels"]),
            (
                "my-label",
                &["metadata", "labels", "app.kubernetes.io/name"],
            ),
        ]),
        &mut m,
    );
    assert_eq!(
        m,
        ev(0.0, &[("app_kubernetes_io_name", "x"), ("my_label", "x")]).labels
    );
}

#[test]
fn full_names() {
    let yaml = |prefix: &str| {
        format!(
            "spec:\n  resources:\n  - groupVersionKind: {{group: apps, version: v1, kind: Deployment}}\n{prefix}    metrics:\n    - name: count\n      each: {{type: Gauge, gauge: {{path: [a]}}}}\n"
        )
    };
    assert_eq!(
        compile_first(&yaml("")).families[0].name,
        "kube_customresource_count"
    );
    assert_eq!(
        compile_first(&yaml("    metricNamePrefix: \"\"\n")).families[0].name,
        "count"
    );
    assert_eq!(
        compile_first(&yaml("    metricNamePrefix: bar_baz\n")).families[0].name,
        "bar_baz_count"
    );
}

#[test]
fn compare_labels_like_upstream() {
    let a = ev(0.0, &[("a", "1")]).labels;
    let b = ev(0.0, &[("a", "1"), ("b", "0")]).labels;
    let c = ev(0.0, &[("a", "2")]).labels;
    assert_eq!(compare_labels(&a, &b), Ordering::Less);
    assert_eq!(compare_labels(&c, &b), Ordering::Greater);
    assert_eq!(compare_labels(&a, &a), Ordering::Equal);
}

#[path = "metrics_golden_tests.rs"]
mod golden;
