//! Golden documents: whole configurations rendered for one object, as the user documentation
//! shows them.

use super::*;

const FOO: &str = r#"{
  "kind": "Foo", "apiVersion": "myteam.io/v1",
  "metadata": {"annotations": {"bar": "baz", "qux": "quxx"}, "labels": {"foo": "bar"}, "name": "foo", "namespace": "ns"},
  "spec": {"version": "v1.2.3", "order": [{"id": 1, "value": true}, {"id": 3, "value": false}], "replicas": 1,
           "refs": ["my_other_foo", "foo_2", "foo_with_extensions"]},
  "status": {"phase": "Pending", "active": {"type-a": 1, "type-b": 3},
             "conditions": [{"name": "a", "value": 45}, {"name": "b", "value": 66}],
             "sub": {"type-a": {"active": 1, "ready": 2}, "type-b": {"active": 3, "ready": 4}},
             "uptime": 43.21}
}"#;

fn foo() -> Value {
    serde_json::from_str(FOO).expect("json")
}

const HEAD: &str = "kind: CustomResourceStateMetrics\nspec:\n  resources:\n    - groupVersionKind:\n        group: myteam.io\n        kind: \"Foo\"\n        version: \"v1\"\n";

#[test]
fn golden_single_value() {
    let doc = compile_first(&format!(
        "{HEAD}      metrics:\n        - name: \"uptime\"\n          help: \"Foo uptime\"\n          each:\n            type: Gauge\n            gauge:\n              path: [status, uptime]\n"
    ))
    .render_document(&foo());
    assert_eq!(
        doc,
        "# HELP kube_customresource_uptime Foo uptime\n\
         # TYPE kube_customresource_uptime gauge\n\
         kube_customresource_uptime{customresource_group=\"myteam.io\",customresource_kind=\"Foo\",customresource_version=\"v1\"} 43.21\n"
    );
}

#[test]
fn golden_kitchen_sink() {
    let doc = compile_first(&format!(
        r#"{HEAD}      commonLabels:
        crd_type: "foo"
      labelsFromPath:
        name: [metadata, name]
      metrics:
        - name: "ready_count"
          help: "Number Foo Bars ready"
          each:
            type: Gauge
            gauge:
              path: [status, sub]
              labelFromKey: type
              labelsFromPath:
                active: [active]
              valueFrom: [ready]
          commonLabels:
            custom_metric: "yes"
          labelsFromPath:
            "*": [metadata, labels]
            "lorem_*": [metadata, annotations]
            "**": [metadata, annotations]
            name: [metadata, name]
            foo: [metadata, labels, foo]
"#
    ))
    .render_document(&foo());
    let common = "_bar=\"baz\",_qux=\"quxx\"";
    assert_eq!(
        doc,
        format!(
            "# HELP kube_customresource_ready_count Number Foo Bars ready\n\
             # TYPE kube_customresource_ready_count gauge\n\
             kube_customresource_ready_count{{{common},active=\"1\",crd_type=\"foo\",custom_metric=\"yes\",customresource_group=\"myteam.io\",customresource_kind=\"Foo\",customresource_version=\"v1\",foo=\"bar\",lorem_bar=\"baz\",lorem_qux=\"quxx\",name=\"foo\",type=\"type-a\"}} 2\n\
             kube_customresource_ready_count{{{common},active=\"3\",crd_type=\"foo\",custom_metric=\"yes\",customresource_group=\"myteam.io\",customresource_kind=\"Foo\",customresource_version=\"v1\",foo=\"bar\",lorem_bar=\"baz\",lorem_qux=\"quxx\",name=\"foo\",type=\"type-b\"}} 4\n"
        )
    );
}

#[test]
fn golden_non_map_arrays_info() {
    let doc = compile_first(&format!(
        "{HEAD}      labelsFromPath:\n        name: [metadata, name]\n      metrics:\n        - name: \"ref_info\"\n          help: \"Reference to other Foo\"\n          each:\n            type: Info\n            info:\n              path: [spec, refs]\n              labelsFromPath:\n                ref: []\n"
    ))
    .render_document(&foo());
    let l = "customresource_group=\"myteam.io\",customresource_kind=\"Foo\",customresource_version=\"v1\",name=\"foo\"";
    assert_eq!(
        doc,
        format!(
            "# HELP kube_customresource_ref_info Reference to other Foo\n\
             # TYPE kube_customresource_ref_info gauge\n\
             kube_customresource_ref_info{{{l},ref=\"foo_2\"}} 1\n\
             kube_customresource_ref_info{{{l},ref=\"foo_with_extensions\"}} 1\n\
             kube_customresource_ref_info{{{l},ref=\"my_other_foo\"}} 1\n"
        )
    );
}

#[test]
fn golden_stateset_and_custom_prefix() {
    let doc = compile_first(&format!(
        "{HEAD}      metricNamePrefix: myteam_foos\n      metrics:\n        - name: \"status_phase\"\n          help: \"Foo status_phase\"\n          each:\n            type: StateSet\n            stateSet:\n              labelName: phase\n              path: [status, phase]\n              list: [Pending, Bar, Baz]\n"
    ))
    .render_document(&foo());
    let l = "customresource_group=\"myteam.io\",customresource_kind=\"Foo\",customresource_version=\"v1\"";
    assert_eq!(
        doc,
        format!(
            "# HELP myteam_foos_status_phase Foo status_phase\n\
             # TYPE myteam_foos_status_phase gauge\n\
             myteam_foos_status_phase{{{l},phase=\"Bar\"}} 0\n\
             myteam_foos_status_phase{{{l},phase=\"Baz\"}} 0\n\
             myteam_foos_status_phase{{{l},phase=\"Pending\"}} 1\n"
        )
    );
}

#[test]
fn golden_openmetrics_types() {
    let c = compile_first(&format!(
        "{HEAD}      metrics:\n        - name: a_info\n          each: {{type: Info, info: {{labelsFromPath: {{version: [spec, version]}}}}}}\n        - name: phase\n          each: {{type: StateSet, stateSet: {{path: [status, phase], labelName: phase, list: [Pending]}}}}\n"
    ));
    let mut out = Vec::new();
    for f in &c.families {
        write_header(&mut out, &f.name, &f.help, f.kind, Format::OpenMetrics);
    }
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "# HELP kube_customresource_a_info \n# TYPE kube_customresource_a_info info\n\
         # HELP kube_customresource_phase \n# TYPE kube_customresource_phase stateset\n"
    );
}

#[test]
fn golden_vpa_same_name_different_labels() {
    let vpa = json!({
        "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "vpa-example", "namespace": "namespace-example"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "target-name-example"}},
        "status": {"recommendation": {"containerRecommendations": [
            {"containerName": "consumer", "lowerBound": {"cpu": "100m", "memory": "262144k"}}
        ]}}
    });
    let metric = |res: &str, unit: &str| {
        format!(
            "        - name: \"verticalpodautoscaler_status_recommendation_containerrecommendations_lowerbound\"\n          help: \"Minimum {res}\"\n          commonLabels:\n            unit: \"{unit}\"\n            resource: \"{res}\"\n          each:\n            type: Gauge\n            gauge:\n              path: [status, recommendation, containerRecommendations]\n              labelsFromPath:\n                container: [containerName]\n              valueFrom: [lowerBound, {res}]\n"
        )
    };
    let yaml = format!(
        "kind: CustomResourceStateMetrics\nspec:\n  resources:\n    - groupVersionKind:\n        group: autoscaling.k8s.io\n        kind: \"VerticalPodAutoscaler\"\n        version: \"v1\"\n      labelsFromPath:\n        verticalpodautoscaler: [metadata, name]\n        namespace: [metadata, namespace]\n        target_api_version: [apiVersion]\n        target_kind: [spec, targetRef, kind]\n        target_name: [spec, targetRef, name]\n      metrics:\n{}{}",
        metric("memory", "byte"),
        metric("cpu", "core")
    );
    let doc = compile_first(&yaml).render_document(&vpa);
    let name = "kube_customresource_verticalpodautoscaler_status_recommendation_containerrecommendations_lowerbound";
    let l = |res: &str, unit: &str| {
        format!(
            "container=\"consumer\",customresource_group=\"autoscaling.k8s.io\",customresource_kind=\"VerticalPodAutoscaler\",customresource_version=\"v1\",namespace=\"namespace-example\",resource=\"{res}\",target_api_version=\"autoscaling.k8s.io/v1\",target_kind=\"Deployment\",target_name=\"target-name-example\",unit=\"{unit}\",verticalpodautoscaler=\"vpa-example\""
        )
    };
    assert_eq!(
        doc,
        format!(
            "# HELP {name} Minimum memory\n# TYPE {name} gauge\n{name}{{{}}} 2.62144e+08\n\
             # HELP {name} Minimum cpu\n# TYPE {name} gauge\n{name}{{{}}} 0.1\n",
            l("memory", "byte"),
            l("cpu", "core")
        )
    );
}

#[test]
fn golden_wildcard_gvk_labels_show_the_resolved_gvk() {
    let c = config(
        "spec:\n  resources:\n  - groupVersionKind: {group: myteam.io, version: \"*\", kind: \"*\"}\n    metrics:\n    - name: myobject_info\n      help: Foo Bar Baz\n      each: {type: Info, info: {path: [metadata], labelsFromPath: {object: [name], namespace: [namespace]}}}\n",
    );
    let r = &c.spec.resources[0];
    let bar =
        CompiledResource::compile(r, &GroupVersionKind::new("myteam.io", "v1", "Bar")).unwrap();
    let obj = json!({"metadata": {"name": "bar", "namespace": "ns"}});
    assert_eq!(
        bar.render_document(&obj),
        "# HELP kube_customresource_myobject_info Foo Bar Baz\n\
         # TYPE kube_customresource_myobject_info gauge\n\
         kube_customresource_myobject_info{customresource_group=\"myteam.io\",customresource_kind=\"Bar\",customresource_version=\"v1\",namespace=\"ns\",object=\"bar\"} 1\n"
    );
}

#[test]
fn label_precedence() {
    let c = compile_first(
        "spec:\n  resources:\n  - groupVersionKind: {group: g.io, version: v1, kind: K}\n    commonLabels: {customresource_group: overwritten, a: resource, b: resource}\n    labelsFromPath: {c: [metadata, name]}\n    metrics:\n    - name: m\n      commonLabels: {b: metric, c: metric, customresource_kind: metric}\n      each: {type: Gauge, gauge: {path: [spec], labelFromKey: c, valueFrom: [n]}}\n",
    );
    let doc = c.render_document(&json!({"metadata": {"name": "obj"}, "spec": {"n": 5}}));
    assert!(
        doc.ends_with(
            "m{a=\"resource\",b=\"metric\",c=\"n\",customresource_group=\"g.io\",customresource_kind=\"metric\",customresource_version=\"v1\"} 5\n"
        ),
        "{doc}"
    );
}

#[test]
fn nil_is_zero_without_the_path_keeps_the_base_labels() {
    let c = compile_first(
        "spec:\n  resources:\n  - groupVersionKind: {group: g.io, version: v1, kind: K}\n    labelsFromPath: {name: [metadata, name], missing: [metadata, nope]}\n    metrics:\n    - name: paused\n      each: {type: Gauge, gauge: {path: [spec, paused], nilIsZero: true}}\n",
    );
    let doc = c.render_document(&json!({"metadata": {"name": "obj"}}));
    assert!(
        doc.ends_with(
            "kube_customresource_paused{customresource_group=\"g.io\",customresource_kind=\"K\",customresource_version=\"v1\",name=\"obj\"} 0\n"
        ),
        "{doc}"
    );
}

#[test]
fn label_values_are_escaped_and_go_formatted() {
    let c = compile_first(
        "spec:\n  resources:\n  - groupVersionKind: {group: g.io, version: v1, kind: K}\n    metricNamePrefix: \"\"\n    metrics:\n    - name: i\n      each: {type: Info, info: {labelsFromPath: {q: [spec, q], big: [spec, big], obj: [spec, obj]}}}\n",
    );
    let doc = c.render_document(&json!({"spec": {"q": "a\"b\\c\nd", "big": 1e6, "obj": {"x": 1}}}));
    assert!(
        doc.ends_with(
            "i{big=\"1e+06\",customresource_group=\"g.io\",customresource_kind=\"K\",customresource_version=\"v1\",obj=\"map[x:1]\",q=\"a\\\"b\\\\c\\nd\"} 1\n"
        ),
        "{doc}"
    );
}

#[test]
fn families_without_samples_render_empty() {
    let c = compile_first(&format!(
        "{HEAD}      metrics:\n        - name: gone\n          each: {{type: Gauge, gauge: {{path: [status, nothing]}}}}\n"
    ));
    assert_eq!(c.render(&foo()), vec![Vec::<u8>::new()]);
}
