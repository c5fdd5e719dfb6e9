//! Objects with odd labels, huge annotations and arbitrary unicode still produce valid
//! exposition (checked by a strict parser), never a panic.

use ferrocrane_core::exposition::parse::parse_document;
use ferrocrane_ksm::families::{
    FamilyContext, KeyAllowlist, ResourceFamilies, configmap, namespace, node, pod,
};
use proptest::prelude::*;
use serde::de::DeserializeOwned;

fn everything() -> FamilyContext {
    FamilyContext {
        labels: KeyAllowlist::All,
        annotations: KeyAllowlist::All,
    }
}

fn render_all<T: DeserializeOwned>(
    families: ResourceFamilies<T>,
    object: &serde_json::Value,
) -> Result<String, String> {
    let obj: T = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    let enabled: Vec<usize> = (0..families.families.len()).collect();
    Ok(families.render_document_with(&obj, &everything(), &enabled))
}

fn object(
    labels: &[(String, String)],
    annotations: &[(String, String)],
    name: &str,
) -> serde_json::Value {
    let map = |kv: &[(String, String)]| -> serde_json::Map<String, serde_json::Value> {
        kv.iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect()
    };
    serde_json::json!({
        "metadata": {
            "name": name, "namespace": "ns\"1", "uid": "u-1",
            "labels": map(labels), "annotations": map(annotations),
            "creationTimestamp": "2020-01-01T00:00:00Z"
        },
        "spec": { "containers": [{ "name": name, "image": "i" }], "nodeName": name },
        "status": { "phase": name }
    })
}

fn check(doc: &str) -> Result<(), TestCaseError> {
    let parsed = parse_document(doc).map_err(|e| TestCaseError::fail(format!("{e}\n{doc}")))?;
    prop_assert!(!parsed.samples.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_labels_and_annotations_give_valid_exposition(
        labels in prop::collection::vec((".{0,40}", ".{0,40}"), 0..8),
        annotations in prop::collection::vec((".{0,40}", ".{0,200}"), 0..8),
        name in ".{0,30}",
    ) {
        let obj = object(&labels, &annotations, &name);
        for doc in [
            render_all(pod::families(), &obj),
            render_all(configmap::families(), &obj),
            render_all(namespace::families(), &obj),
            render_all(node::families(), &obj),
        ] {
            check(&doc.map_err(TestCaseError::fail)?)?;
        }
    }
}

#[test]
fn huge_annotation_and_colliding_label_names() {
    let huge = "x\n\"\\".repeat(200_000);
    let labels = vec![
        ("app.kubernetes.io/name".to_string(), "a".to_string()),
        ("app-kubernetes-io/name".to_string(), "b".to_string()),
        ("app_kubernetes_io_name".to_string(), "c".to_string()),
        ("ünïcødé/ключ".to_string(), "値".to_string()),
        ("".to_string(), "empty key".to_string()),
    ];
    let obj = object(&labels, &[("big".to_string(), huge.clone())], "p");
    let doc = render_all(pod::families(), &obj).expect("pod");
    let parsed = parse_document(&doc).expect("valid exposition");
    let annotations = parsed
        .samples
        .iter()
        .find(|s| s.name == "kube_pod_annotations")
        .expect("annotations sample");
    assert_eq!(
        annotations
            .labels
            .iter()
            .find(|(k, _)| k == "annotation_big")
            .map(|(_, v)| v.as_str()),
        Some(huge.as_str())
    );
    let label_sample = parsed
        .samples
        .iter()
        .find(|s| s.name == "kube_pod_labels")
        .expect("labels sample");
    let names: std::collections::BTreeSet<&str> = label_sample
        .labels
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        names.len(),
        label_sample.labels.len(),
        "duplicate label names: {names:?}"
    );
}
