//! What the chart renders, read: `helm template` of the whole suite, and the pieces the
//! chart tests look at (object names, a Deployment's container and args, a role's grants).

use std::collections::BTreeSet;

use anyhow::Result;
use ferrocrane_e2e::{Helm, Manifest};
use serde_json::Value;

pub const COMPONENTS: [&str; 3] = ["ksm", "adapter", "craned"];
pub const APISERVICES: [&str; 5] = [
    "v1beta1.custom.metrics.k8s.io",
    "v1beta2.custom.metrics.k8s.io",
    "v1beta1.external.metrics.k8s.io",
    "v1beta1.metrics.k8s.io",
    "v1.metrics.k8s.io",
];

pub fn render(extra: &[&str]) -> Result<Manifest> {
    Helm::locate()?.template("fc", "fc-system", extra)
}

pub fn names(m: &Manifest, kind: &str) -> BTreeSet<String> {
    m.of_kind(kind)
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Every (apiGroup, resource, verb) a ClusterRole grants.
pub fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_array().into_iter().flatten() {
        for g in strings(&rule["apiGroups"]) {
            for r in strings(&rule["resources"]) {
                for v in strings(&rule["verbs"]) {
                    out.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    out
}

pub fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

pub fn args(deployment: &Value) -> Vec<String> {
    strings(&container(deployment)["args"])
}
