//! External metrics from Crane's objects, as Crane's metric-adapter serves them to an EHPA's
//! HPA: `crane_autoscaling_cron` (the replicas the EHPA's crons ask for now) and
//! `crane_autoscaling_prediction` (the largest predicted value of a metric over the
//! prediction window, from the TimeSeriesPrediction the EHPA owns). The selector names the
//! workload (`targetKind`, `targetName`, `targetNamespace`) and the metric
//! (`resourceIdentifier`), each with `=`.
//!
//! Deliberate differences: predictions keep their fraction (Crane truncates to an integer, so
//! a workload under one core predicts 0); a cron request for a workload no EHPA scales is a
//! 404 (Crane dereferences nil); objects are read from watches, not listed per request; and
//! only the HPA's own namespace is looked in.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ferrocrane_autoscaling::crd::autoscaling::EffectiveHorizontalPodAutoscaler;
use ferrocrane_autoscaling::crd::prediction::TimeSeriesPrediction;
use ferrocrane_autoscaling::cron::{DefaultZone, replicas_for};
use ferrocrane_autoscaling::external::{
    CRON_METRIC, PREDICTION_METRIC, RESOURCE_IDENTIFIER, TARGET_KIND, TARGET_NAME,
    TARGET_NAMESPACE, labels, predicted_max,
};
use ferrocrane_core::kube::{reflected, served};
use ferrocrane_core::promql::{Operator, Requirement};
use kube::ResourceExt;
use kube::runtime::reflector::Store;

use super::not_found;
use crate::api::types::{ExternalMetricValue, decimal_quantity, rfc3339_seconds};
use crate::status::Status;

/// EHPAs and TimeSeriesPredictions, each kept by a watch once the API server serves both.
pub struct CraneObjects {
    stores: Arc<OnceLock<Stores>>,
    zone: DefaultZone,
}

struct Stores {
    ehpas: Store<EffectiveHorizontalPodAutoscaler>,
    tsps: Store<TimeSeriesPrediction>,
}

/// How often discovery is asked whether Crane's CRDs are served yet.
const DISCOVERY_RETRY: Duration = Duration::from_secs(30);

impl CraneObjects {
    /// Watches both kinds with `client` (the lister's identity) as soon as the API server
    /// serves both: Crane's CRDs are often installed after the adapter (another chart, a
    /// later `kubectl apply`). Until then the metrics are not listed.
    pub fn start(client: &kube::Client, zone: DefaultZone) -> CraneObjects {
        let stores: Arc<OnceLock<Stores>> = Arc::default();
        let (client, slot) = (client.clone(), stores.clone());
        tokio::spawn(async move {
            let mut said = false;
            loop {
                if served::<EffectiveHorizontalPodAutoscaler>(&client).await
                    && served::<TimeSeriesPrediction>(&client).await
                {
                    tracing::info!(
                        "serving crane_autoscaling_* external metrics from Crane's EHPAs and TimeSeriesPredictions"
                    );
                    let _ = slot.set(Stores {
                        ehpas: reflected(&client),
                        tsps: reflected(&client),
                    });
                    return;
                }
                if !said {
                    tracing::info!(
                        "Crane's EffectiveHorizontalPodAutoscaler and TimeSeriesPrediction CRDs are not served (yet): crane_autoscaling_* external metrics wait for them"
                    );
                    said = true;
                }
                tokio::time::sleep(DISCOVERY_RETRY).await;
            }
        });
        CraneObjects { stores, zone }
    }

    pub fn metric_names(&self) -> Vec<String> {
        match self.stores.get() {
            Some(_) => vec![CRON_METRIC.to_owned(), PREDICTION_METRIC.to_owned()],
            None => Vec::new(),
        }
    }

    pub fn serves(&self, metric: &str) -> bool {
        self.stores.get().is_some() && (metric == CRON_METRIC || metric == PREDICTION_METRIC)
    }

    pub fn values(
        &self,
        namespace: &str,
        metric: &str,
        selector: &[Requirement],
    ) -> Result<Vec<ExternalMetricValue>, Status> {
        let wanted = equalities(selector);
        let target = |key: &str| wanted.get(key).map(String::as_str);
        let (Some(kind), Some(name)) = (target(TARGET_KIND), target(TARGET_NAME)) else {
            return Err(Status::bad_request(format!(
                "{metric} needs the selector labels {TARGET_KIND} and {TARGET_NAME}"
            )));
        };
        if target(TARGET_NAMESPACE).is_some_and(|ns| ns != namespace) {
            return Err(not_found(namespace, metric));
        }
        let now = k8s_openapi::jiff::Timestamp::now();
        let value = if metric == CRON_METRIC {
            self.cron(namespace, kind, name, now)?
        } else {
            let Some(identifier) = target(RESOURCE_IDENTIFIER) else {
                return Err(Status::bad_request(format!(
                    "{metric} needs the selector label {RESOURCE_IDENTIFIER}"
                )));
            };
            self.prediction(namespace, kind, name, identifier, now)?
        };
        Ok(vec![ExternalMetricValue {
            metric_name: metric.to_owned(),
            metric_labels: None,
            timestamp: rfc3339_seconds(now.as_second()),
            value: decimal_quantity(value),
        }])
    }

    /// The replicas the crons of the EHPA scaling `kind`/`name` ask for now.
    fn cron(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
        now: k8s_openapi::jiff::Timestamp,
    ) -> Result<f64, Status> {
        let ehpa = self
            .stores
            .get()
            .map(|s| s.ehpas.state())
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.namespace().as_deref() == Some(namespace))
            .filter(|e| !e.spec.crons.is_empty())
            .filter(|e| {
                e.spec.scale_target_ref.kind == kind && e.spec.scale_target_ref.name == name
            })
            // Two EHPAs scaling one workload: the oldest decides, the same every time.
            .min_by_key(|e| {
                (
                    e.metadata.creation_timestamp.clone().map(|t| t.0),
                    e.name_any(),
                )
            })
            .ok_or_else(|| not_found(namespace, CRON_METRIC))?;
        let min = ehpa.spec.min_replicas.unwrap_or(1);
        let replicas = replicas_for(min, &ehpa.spec.crons, &self.zone, now).map_err(|e| {
            tracing::warn!(ehpa = %ehpa.name_any(), namespace, error = %e, "cron metric");
            Status::internal(format!(
                "EffectiveHorizontalPodAutoscaler {}: {e}",
                ehpa.name_any()
            ))
        })?;
        Ok(f64::from(replicas))
    }

    /// The largest predicted value of `identifier` for `kind`/`name` over the window.
    fn prediction(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
        identifier: &str,
        now: k8s_openapi::jiff::Timestamp,
    ) -> Result<f64, Status> {
        let tsp = self
            .stores
            .get()
            .map(|s| s.tsps.state())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.namespace().as_deref() == Some(namespace))
            .filter(|t| {
                let l = t.labels();
                l.get(labels::MANAGED_BY).map(String::as_str) == Some(labels::EHPA_CONTROLLER)
                    && l.get(labels::TARGET_KIND).map(String::as_str) == Some(kind)
                    && l.get(labels::TARGET_NAME).map(String::as_str) == Some(name)
                    && l.get(labels::TARGET_NAMESPACE).map(String::as_str) == Some(namespace)
            })
            .min_by_key(|t| t.name_any())
            .ok_or_else(|| not_found(namespace, PREDICTION_METRIC))?;
        let status = tsp.status.clone().unwrap_or_default();
        let window = i64::from(tsp.spec.prediction_window_seconds);
        predicted_max(&status, identifier, window, now)
            .map_err(|e| Status::internal(format!("TimeSeriesPrediction {}: {e}", tsp.name_any())))
    }
}

/// `key=value` requirements of the selector (the only kind an EHPA writes).
fn equalities(selector: &[Requirement]) -> BTreeMap<String, String> {
    selector
        .iter()
        .filter(|r| {
            matches!(r.op, Operator::Equals)
                || (matches!(r.op, Operator::In) && r.values.len() == 1)
        })
        .filter_map(|r| Some((r.key.clone(), r.values.first()?.clone())))
        .collect()
}
