//! craned's `--skip-unchanged-writes` (default on) against the real control plane: a second
//! round over unchanged history computes every Recommendation and writes none of them (their
//! resourceVersions stay, `craned_recommendations_unchanged_total` counts them) while the rule's
//! status records the round; a Recommendation whose run-number is lowered (Crane's trigger) is
//! rewritten in the next round and the others are not; with `=false` every round rewrites
//! every Recommendation, as Crane does.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::{Cluster, HistoryPrometheus, ServiceProcess, install_craned_crds, wait_until};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use ferrocrane_e2e::craned::*;

const RUN_NUMBER: &str = "analysis.crane.io/run-number";

/// target name → (resourceVersion, run-number annotation) of its Recommendation.
async fn versions(recs: &Api<DynamicObject>) -> Result<BTreeMap<String, (String, String)>> {
    let mut out = BTreeMap::new();
    for r in recs.list(&Default::default()).await?.items {
        let target = r
            .labels()
            .get("analysis.crane.io/recommendation-target-name")
            .cloned()
            .context("target label")?;
        let run = r.annotations().get(RUN_NUMBER).cloned().unwrap_or_default();
        out.insert(target, (r.resource_version().unwrap_or_default(), run));
    }
    Ok(out)
}

/// Triggers a round of `rule` and waits until its status records it and the trigger is gone.
async fn run_round(rules: &Api<DynamicObject>, rule: &str, craned: &ServiceProcess) -> Result<i64> {
    let before = rules.get(rule).await?.data["status"]["runNumber"]
        .as_i64()
        .unwrap_or(0);
    rules
        .patch(
            rule,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"analysis.crane.io/run-once": format!("r{before}")}}})),
        )
        .await?;
    wait_until(
        "the triggered round recorded",
        Duration::from_secs(90),
        || {
            let rules = rules.clone();
            async move {
                let r = rules.get(rule).await?;
                let run = r.data["status"]["runNumber"].as_i64().unwrap_or(0);
                let triggered = r.annotations().contains_key("analysis.crane.io/run-once");
                Ok((run > before && !triggered).then_some(run))
            }
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", craned.logs()))
}

async fn unchanged_total(metrics_addr: &str) -> Result<f64> {
    let text = scrape(metrics_addr).await?;
    match gauge(&text, "craned_recommendations_unchanged_total", &[]) {
        Some(v) => Ok(v),
        None => bail!("no craned_recommendations_unchanged_total in:\n{text}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unchanged_recommendations_are_not_rewritten() -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned-unchanged").await?;

    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end_minute = now / MINUTE - 1;
    let prometheus = HistoryPrometheus::start(&history(&ns.name, end_minute)).await?;
    create_workloads(&client, &ns.name).await?;

    let config_path = write_config_file("0.15")?;
    let launch =
        CranedLaunch::new(cluster, &prometheus.handle.url, &config_path, &ns.name)?.leader_elect();
    let metrics_addr = launch.metrics_addr();
    let mut craned = launch.start().await?;

    let rule = format!("e2e-unchanged-{}", ns.name);
    let rules = rule_api(&client);
    let _guard = create_rule(cluster, &client, &rule, resource_rule_spec(&ns.name)).await?;
    let recs = recommendation_api(&client, &ns.name);
    let targets: Vec<&str> = workloads().iter().map(|w| w.name).collect();
    for t in &targets {
        wait_ready_recommendation(&recs, &mut craned, t, Duration::from_secs(90)).await?;
    }
    wait_until("round 1 recorded", Duration::from_secs(30), || {
        let rules = rules.clone();
        let rule = rule.clone();
        async move { Ok((rules.get(&rule).await?.data["status"]["runNumber"] == 1).then_some(())) }
    })
    .await?;
    let first = versions(&recs).await?;
    assert_eq!(first.len(), targets.len(), "{first:?}");
    assert!(first.values().all(|(_, run)| run == "1"), "{first:?}");
    assert_eq!(unchanged_total(&metrics_addr).await?, 0.0);

    // Round 2, same history: computed, recorded on the rule, nothing written.
    assert_eq!(run_round(&rules, &rule, &craned).await?, 2);
    let second = versions(&recs).await?;
    assert_eq!(
        second,
        first,
        "round 2 rewrote an unchanged Recommendation; craned log:\n{}",
        craned.logs()
    );
    assert_eq!(unchanged_total(&metrics_addr).await?, targets.len() as f64);
    let text = scrape(&metrics_addr).await?;
    assert!(
        text.contains("crane_analysis_resource_recommendation{"),
        "the gauges stay: {text}"
    );

    // Crane's trigger: the lowered one is rewritten by the next round, the other is not.
    let (lowered, kept) = (targets[0], targets[1]);
    let lowered_rec = recommendations_of(&recs, lowered)
        .await?
        .into_iter()
        .next()
        .context("the lowered target's Recommendation")?;
    recs.patch(
        &lowered_rec.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {RUN_NUMBER: "0"}}})),
    )
    .await?;
    let lowered_version = versions(&recs).await?[lowered].0.clone();
    assert_eq!(run_round(&rules, &rule, &craned).await?, 3);
    let third = versions(&recs).await?;
    assert_eq!(
        third[lowered].1,
        "3",
        "the lowered run-number was not rewritten: {third:?}; craned log:\n{}",
        craned.logs()
    );
    assert_ne!(third[lowered].0, lowered_version);
    assert_eq!(third[kept], first[kept], "{third:?}");
    assert_eq!(
        unchanged_total(&metrics_addr).await?,
        (2 * targets.len() - 1) as f64
    );

    // Crane's behaviour on request: every round rewrites every Recommendation.
    drop(craned);
    let craned: ServiceProcess = launch.arg("--skip-unchanged-writes=false").start().await?;
    assert_eq!(run_round(&rules, &rule, &craned).await?, 4);
    let fourth = versions(&recs).await?;
    for t in &targets {
        assert_eq!(
            fourth[*t].1,
            "4",
            "{fourth:?}; craned log:\n{}",
            craned.logs()
        );
        assert_ne!(fourth[*t].0, third[*t].0, "{t} was not rewritten");
    }
    assert_eq!(unchanged_total(&metrics_addr).await?, 0.0);
    Ok(())
}
