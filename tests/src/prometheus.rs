//! The harness' view of a Prometheus: add scrape targets, run instant queries.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::process::{http_client, random_suffix};
use crate::wait::wait_until;

#[derive(Debug, Clone)]
pub struct PrometheusHandle {
    pub url: String,
    targets_dir: PathBuf,
}

/// One sample of an instant-vector result.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Removes its file_sd target file when dropped, so Prometheus stops scraping the target.
#[derive(Debug)]
pub struct ScrapeTarget {
    file: PathBuf,
}

impl Drop for ScrapeTarget {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

#[derive(Deserialize)]
struct ApiResponse {
    status: String,
    data: Option<QueryData>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct QueryData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<VectorSample>,
}

#[derive(Deserialize)]
struct VectorSample {
    metric: BTreeMap<String, String>,
    value: (f64, String),
}

impl PrometheusHandle {
    pub fn new(url: &str, targets_dir: PathBuf) -> Self {
        Self {
            url: url.trim_end_matches('/').to_string(),
            targets_dir,
        }
    }

    /// Makes Prometheus scrape `address` (host:port) under `job`. It goes through file-based
    /// service discovery, so concurrent tests never rewrite the shared config file.
    pub fn add_scrape_target(
        &self,
        job: &str,
        address: &str,
        metrics_path: &str,
    ) -> Result<ScrapeTarget> {
        let group = serde_json::json!([{
            "targets": [address],
            "labels": { "job": job, "__metrics_path__": metrics_path },
        }]);
        std::fs::create_dir_all(&self.targets_dir)?;
        let file = self
            .targets_dir
            .join(format!("{job}-{}.json", random_suffix()));
        // Write then rename: Prometheus must never read a half-written file.
        let tmp = file.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&group)?)?;
        std::fs::rename(&tmp, &file)?;
        Ok(ScrapeTarget { file })
    }

    /// Runs an instant query and returns the vector result.
    pub async fn query(&self, promql: &str) -> Result<Vec<Sample>> {
        let resp = http_client()?
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", promql)])
            .send()
            .await
            .with_context(|| format!("querying {}", self.url))?;
        let body: ApiResponse = resp
            .json()
            .await
            .context("decoding the Prometheus response")?;
        if body.status != "success" {
            bail!(
                "query {promql:?} failed: {}",
                body.error.unwrap_or_default()
            );
        }
        let Some(data) = body.data else {
            bail!("query {promql:?} returned no data")
        };
        if data.result_type != "vector" {
            bail!(
                "query {promql:?} returned a {}, not a vector",
                data.result_type
            );
        }
        data.result
            .into_iter()
            .map(|s| {
                let value = s
                    .value
                    .1
                    .parse::<f64>()
                    .with_context(|| format!("sample value {:?}", s.value.1))?;
                Ok(Sample {
                    labels: s.metric,
                    value,
                })
            })
            .collect()
    }

    /// Waits until `promql` returns at least one sample, and returns them.
    pub async fn wait_for_samples(&self, promql: &str, timeout: Duration) -> Result<Vec<Sample>> {
        wait_until(&format!("samples for {promql}"), timeout, || async {
            let samples = self.query(promql).await?;
            Ok((!samples.is_empty()).then_some(samples))
        })
        .await
    }
}
