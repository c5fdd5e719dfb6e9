//! ksm in the end-to-end tests: start it (or the Go original, with the same flags) against
//! the test cluster, scrape it, and create a throw-away CRD.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::{Cluster, Kubectl, ServiceProcess, binary, http_client, two_ports, wait_until};
use anyhow::Result;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};

pub struct Ksm {
    pub process: ServiceProcess,
    pub metrics: String,
    pub telemetry: String,
}

/// Starts ksm on two free loopback ports and waits for /readyz on the telemetry port.
pub async fn start_ksm(cluster: &Cluster, extra: &[String]) -> Result<Ksm> {
    start_exporter(cluster, "ksm", &binary("ksm")?, extra).await
}

/// Starts the executable at `bin` with ksm's flags (the Go kube-state-metrics takes the same
/// ones and also serves /readyz on its telemetry port), as [`start_ksm`] does.
pub async fn start_exporter(
    cluster: &Cluster,
    name: &str,
    bin: &std::path::Path,
    extra: &[String],
) -> Result<Ksm> {
    let (port, telemetry_port) = two_ports()?;
    let mut args = vec![
        format!("--kubeconfig={}", cluster.kubeconfig()?.display()),
        "--host=127.0.0.1".to_string(),
        format!("--port={port}"),
        "--telemetry-host=127.0.0.1".to_string(),
        format!("--telemetry-port={telemetry_port}"),
    ];
    args.extend_from_slice(extra);
    let mut process = ServiceProcess::start_program(name, bin, &args, &[])?;
    let telemetry = format!("127.0.0.1:{telemetry_port}");
    process
        .wait_ready(
            &format!("http://{telemetry}/readyz"),
            Duration::from_secs(60),
        )
        .await?;
    Ok(Ksm {
        process,
        metrics: format!("127.0.0.1:{port}"),
        telemetry,
    })
}

pub async fn get(url: &str) -> Result<String> {
    Ok(http_client()?
        .get(url)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?)
}

pub async fn scrape(addr: &str) -> Result<String> {
    get(&format!("http://{addr}/metrics")).await
}

pub fn sample_lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Scrapes `addr` until `check` accepts the text; returns it.
pub async fn wait_for_scrape(
    what: &str,
    addr: &str,
    check: impl Fn(&str) -> bool,
) -> Result<String> {
    wait_until(what, Duration::from_secs(60), || async {
        let text = scrape(addr).await?;
        Ok(check(&text).then_some(text))
    })
    .await
}

/// A namespaced CRD `widgets.<unique group>` (kind Widget, version v1, schemaless spec and
/// status); deleted on drop so repeated runs on one cluster never collide.
pub struct TestCrd {
    pub group: String,
    kubectl: Kubectl,
}

pub const CRD_KIND: &str = "Widget";
pub const CRD_PLURAL: &str = "widgets";

impl TestCrd {
    /// `unique` (e.g. the test namespace's name) makes the group unique per run.
    pub fn new(cluster: &Cluster, unique: &str) -> Result<Self> {
        Ok(Self {
            group: format!("{unique}.e2e.ferrocrane.io"),
            kubectl: cluster.kubectl_handle()?,
        })
    }

    pub fn name(&self) -> String {
        format!("{CRD_PLURAL}.{}", self.group)
    }

    /// Creates the CRD and waits until the API server serves it.
    pub async fn create(&self, client: &kube::Client) -> Result<()> {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "metadata": { "name": self.name() },
            "spec": {
                "group": self.group,
                "scope": "Namespaced",
                "names": { "kind": CRD_KIND, "plural": CRD_PLURAL, "singular": "widget", "listKind": "WidgetList" },
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object", "properties": {
                        "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }
                    }}}
                }]
            }
        }))?;
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        api.create(&PostParams::default(), &crd).await?;
        let name = self.name();
        wait_until("CRD established", Duration::from_secs(30), || async {
            let crd = api.get(&name).await?;
            let established = crd
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            Ok(established.then_some(()))
        })
        .await
    }

    pub fn api(&self, client: &kube::Client, namespace: &str) -> Api<kube::api::DynamicObject> {
        let ar = kube::api::ApiResource {
            group: self.group.clone(),
            version: "v1".into(),
            api_version: format!("{}/v1", self.group),
            kind: CRD_KIND.into(),
            plural: CRD_PLURAL.into(),
        };
        Api::namespaced_with(client.clone(), namespace, &ar)
    }

    /// A Widget object to create.
    pub fn widget(
        &self,
        name: &str,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> Result<kube::api::DynamicObject> {
        Ok(serde_json::from_value(serde_json::json!({
            "apiVersion": format!("{}/v1", self.group),
            "kind": CRD_KIND,
            "metadata": { "name": name },
            "spec": spec,
            "status": status,
        }))?)
    }

    /// Creates the CRD and one Widget in `namespace`.
    pub async fn create_with_widget(
        &self,
        client: &kube::Client,
        namespace: &str,
        name: &str,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> Result<()> {
        self.create(client).await?;
        self.api(client, namespace)
            .create(&PostParams::default(), &self.widget(name, spec, status)?)
            .await?;
        Ok(())
    }

    pub async fn delete(&self, client: &kube::Client) -> Result<()> {
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        api.delete(&self.name(), &DeleteParams::default()).await?;
        Ok(())
    }
}

impl Drop for TestCrd {
    /// A destructor cannot await: hand the deletion to kubectl without waiting.
    fn drop(&mut self) {
        self.kubectl.delete_without_waiting(&["crd", &self.name()]);
    }
}

/// The custom resource state configuration the tests use for [`TestCrd`]: a Gauge, a
/// StateSet and an Info family, named with `prefix`.
pub fn widget_crs_config(group: &str, gauge_name: &str) -> String {
    widget_crs_config_with(
        group,
        &widget_gauge(gauge_name, "Desired widgets.", "[spec, replicas]", ""),
    )
}

/// One Gauge metric of a configuration, for [`widget_crs_config_with`]: `path` is a YAML
/// list, `extra` more YAML lines under `gauge:` (indented by ten spaces).
pub fn widget_gauge(name: &str, help: &str, path: &str, extra: &str) -> String {
    format!(
        "    - name: {name}\n      help: {help:?}\n      each:\n        type: Gauge\n        gauge:\n          path: {path}\n{extra}"
    )
}

/// A configuration for [`TestCrd`] with these metrics (YAML list items), then the
/// `widget_phase` StateSet and the `widget_owner` Info.
pub fn widget_crs_config_with(group: &str, metrics: &str) -> String {
    format!(
        r#"kind: CustomResourceStateMetrics
spec:
  resources:
  - groupVersionKind:
      group: {group}
      version: v1
      kind: {CRD_KIND}
    labelsFromPath:
      name: [metadata, name]
      namespace: [metadata, namespace]
    metrics:
{metrics}    - name: widget_phase
      help: Widget phase.
      each:
        type: StateSet
        stateSet:
          labelName: phase
          path: [status, phase]
          list: [Pending, Ready, Failed]
    - name: widget_owner
      help: Widget owner.
      each:
        type: Info
        info:
          labelsFromPath:
            owner: [spec, owner]
"#
    )
}

/// A fresh directory for one test's files.
pub fn temp_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "ksm-e2e-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Replaces a file the way a ConfigMap update does: write aside, then rename over it.
pub fn replace_file(path: &std::path::Path, content: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// The value of the first telemetry sample whose line starts with `prefix`.
pub fn sample_value(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Waits until the telemetry sample starting with `prefix` has `value`.
pub async fn wait_for_telemetry_value(addr: &str, prefix: &str, value: f64) -> Result<()> {
    wait_until(
        &format!("{prefix} = {value}"),
        Duration::from_secs(30),
        || async {
            let t = get(&format!("http://{addr}/metrics")).await?;
            Ok((sample_value(&t, prefix) == Some(value)).then_some(()))
        },
    )
    .await
}
