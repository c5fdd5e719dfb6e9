//! craned against the real control plane and a Prometheus holding 7 days of backfilled
//! cAdvisor-style history: a RecommendationRule yields Recommendations whose CPU and memory
//! targets equal the values computed here, independently, from the same synthetic series,
//! with Crane's labels, owner, annotation and gauges; deleting a Deployment deletes its
//! Recommendation and its gauges.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::wait_until;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams};

use crate::bed::Bed;

#[tokio::test(flavor = "multi_thread")]
async fn resource_recommendations_equal_the_targets_computed_from_history() -> Result<()> {
    let mut bed = Bed::start("craned-values", "0.15").await?;
    let deployments: Api<Deployment> = Api::namespaced(bed.client.clone(), &bed.ns.name);
    for (i, w) in workloads().into_iter().enumerate() {
        let rec =
            wait_ready_recommendation(&bed.recs, &mut bed.craned, w.name, Duration::from_secs(90))
                .await?;
        if i == 0 {
            // craned's default path: the values below come from remote read, evaluated in
            // craned (craned/remote_read.rs proves it equals the range queries).
            let log = bed.craned.logs();
            assert!(log.contains("reading history with remote read"), "{log}");
        }
        let got = targets_of(&rec)?;
        for c in &w.containers {
            let want = expected(&c.usage, bed.end_minute, 0.15);
            assert_eq!(
                got.get(c.name),
                Some(&want),
                "{}/{}: {:#?}",
                w.name,
                c.name,
                rec.data["status"]
            );
            let (cpu_req, mem_req) = (c.cpu_request, c.memory_request);
            // currentInfo holds the Deployment's requests.
            let current = rec.data["status"]["currentInfo"].as_str().unwrap_or("");
            assert!(
                current.contains(&format!("\"cpu\":\"{cpu_req}\""))
                    && current.contains(&format!("\"memory\":\"{mem_req}\"")),
                "{current}"
            );
        }
        // Crane's labels and owner.
        let labels = rec.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels["analysis.crane.io/recommendation-rule-name"],
            bed.rule_name
        );
        assert_eq!(
            labels["analysis.crane.io/recommendation-target-kind"],
            "Deployment"
        );
        assert_eq!(
            labels["analysis.crane.io/recommendation-rule-recommender"],
            "Resource"
        );
        assert_eq!(rec.data["spec"]["type"], "Resource");
        let owners = rec.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(owners[0].kind, "RecommendationRule");
        // StatusAndAnnotation (the default) annotates the Deployment.
        let d = deployments.get(w.name).await?;
        let ann = d.metadata.annotations.unwrap_or_default();
        assert!(
            ann.get("analysis.crane.io/resource-recommendation")
                .is_some_and(|a| a.contains("containers:")),
            "{ann:?}"
        );
    }

    // The gauges hold the same values.
    let (web_cpu, web_mem) = bed.web_app_targets(0.15);
    wait_until("web's resource gauges", Duration::from_secs(30), || {
        let addr = bed.metrics_addr.clone();
        async move {
            let text = scrape(&addr).await?;
            let app = |r: &str| {
                gauge(
                    &text,
                    "crane_analysis_resource_recommendation",
                    &[
                        "owner_name=\"web\"",
                        "container=\"app\"",
                        &format!("resource=\"{r}\""),
                    ],
                )
            };
            let ok = app("cpu") == Some(web_cpu as f64 / 1000.0)
                && app("memory") == Some(web_mem as f64)
                && text.contains("crane_analysis_recommendation_execution_total{")
                && text.contains("crane_analysis_recommendations_status{");
            if ok {
                Ok(Some(()))
            } else {
                bail!("not yet:\n{text}")
            }
        }
    })
    .await?;

    // The rule's status lists the run.
    wait_until("the rule's status", Duration::from_secs(30), || async {
        let r = bed.rules.get(&bed.rule_name).await?;
        let s = &r.data["status"];
        let ok = s["runNumber"] == 1
            && s["lastUpdateTime"].is_string()
            && s["recommendations"].as_array().map(Vec::len) == Some(2);
        if ok {
            Ok(Some(()))
        } else {
            bail!("status: {s:#}")
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_deployment_deletes_its_recommendation_and_gauges() -> Result<()> {
    let mut bed = Bed::start("craned-delete", "0.15").await?;
    let deployments: Api<Deployment> = Api::namespaced(bed.client.clone(), &bed.ns.name);
    for target in ["web", "db"] {
        wait_ready_recommendation(&bed.recs, &mut bed.craned, target, Duration::from_secs(90))
            .await?;
    }
    wait_until("db's gauges", Duration::from_secs(30), || {
        let addr = bed.metrics_addr.clone();
        async move {
            Ok(scrape(&addr)
                .await?
                .contains("owner_name=\"db\"")
                .then_some(()))
        }
    })
    .await?;

    deployments.delete("db", &DeleteParams::default()).await?;
    wait_until(
        "db's Recommendation deleted",
        Duration::from_secs(60),
        || async {
            Ok(recommendations_of(&bed.recs, "db")
                .await?
                .is_empty()
                .then_some(()))
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;
    wait_until("db's gauges gone", Duration::from_secs(30), || {
        let addr = bed.metrics_addr.clone();
        async move { Ok((!scrape(&addr).await?.contains("owner_name=\"db\"")).then_some(())) }
    })
    .await?;
    let text = scrape(&bed.metrics_addr).await?;
    assert!(
        text.contains("owner_name=\"web\""),
        "web's gauges went with db's:\n{text}"
    );
    assert_eq!(recommendations_of(&bed.recs, "web").await?.len(), 1);
    Ok(())
}
