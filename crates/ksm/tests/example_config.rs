//! The custom resource state example shipped in config/ksm/ parses, validates, and renders
//! what its comments say.

use ferrocrane_ksm::custom_resource::{CompiledResource, CustomResourceStateConfig};

#[test]
fn shipped_custom_resource_example_renders_as_documented() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/ksm/custom-resource-state.yaml"
    );
    let text = std::fs::read_to_string(path).expect("example exists");
    let config = CustomResourceStateConfig::parse(path, &text).expect("example is valid");
    let resource = &config.spec.resources[0];
    let compiled =
        CompiledResource::compile(resource, &resource.group_version_kind).expect("compiles");
    let widget = serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", "uid": "u1", "labels": {"team": "core"}},
        "spec": {"replicas": 3, "owner": "team-a", "size": "500Mi"},
        "status": {"phase": "Ready", "conditions": [{"type": "Available", "status": "True"}],
                   "lastUpdated": "2026-01-02T03:04:05Z"}
    });
    let out = compiled.render_document(&widget);
    let ids = "customresource_group=\"example.com\",customresource_kind=\"Widget\",customresource_version=\"v1\",name=\"w1\",namespace=\"default\"";
    for line in [
        format!("kube_customresource_widget_replicas{{{ids},team=\"core\"}} 3"),
        format!("kube_customresource_widget_size_bytes{{{ids},team=\"core\"}} 5.24288e+08"),
        format!("kube_customresource_widget_phase{{{ids},phase=\"Pending\",team=\"core\"}} 0"),
        format!("kube_customresource_widget_phase{{{ids},phase=\"Ready\",team=\"core\"}} 1"),
        format!("kube_customresource_widget_owner{{{ids},owner=\"team-a\",team=\"core\"}} 1"),
        format!(
            "kube_customresource_widget_condition{{condition=\"Available\",{ids},team=\"core\"}} 1"
        ),
        format!(
            "kube_customresource_widget_last_updated_seconds{{{ids},team=\"core\"}} 1.767323045e+09"
        ),
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in\n{out}");
    }
}
