//! The recommendation configuration file is reloaded without a restart: a new margin applies
//! to the next round; a bad edit is refused (counted, the file named in the log) and rounds go
//! on with the last good configuration.

use std::time::Duration;

use anyhow::{Context, Result};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::wait_until;

use crate::bed::Bed;

/// craned's `craned_config_reloads_total{result}` at `addr`, 0 when absent.
async fn reloads(addr: &str, result: &str) -> Result<f64> {
    let text = scrape(addr).await?;
    Ok(gauge(
        &text,
        "craned_config_reloads_total",
        &[&format!("result=\"{result}\"")],
    )
    .unwrap_or(0.0))
}

#[tokio::test(flavor = "multi_thread")]
async fn configuration_edits_apply_without_restart_and_a_bad_one_is_refused() -> Result<()> {
    let mut bed = Bed::start("craned-reload", "0.15").await?;
    wait_ready_recommendation(&bed.recs, &mut bed.craned, "web", Duration::from_secs(90)).await?;
    bed.wait_web_app(
        "web's recommendation with margin 0.15",
        bed.web_app_targets(0.15),
    )
    .await?;

    // A new margin: wait for the reload, then trigger a round; the targets change.
    std::fs::write(&bed.config_path, config_file("0.5"))?;
    wait_until(
        "the configuration reload",
        Duration::from_secs(60),
        || async { Ok((reloads(&bed.metrics_addr, "success").await? >= 1.0).then_some(())) },
    )
    .await?;
    bed.trigger("now").await?;
    bed.wait_web_app(
        "web's recommendation with the new margin",
        bed.web_app_targets(0.5),
    )
    .await
    .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;
    // The round is recorded and the trigger annotation removed once it is done.
    wait_until(
        "round 2 recorded, trigger removed",
        Duration::from_secs(30),
        || async {
            let r = bed.rules.get(&bed.rule_name).await?;
            let triggered = r
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key("analysis.crane.io/run-once");
            Ok((r.data["status"]["runNumber"] == 2 && !triggered).then_some(()))
        },
    )
    .await?;

    // A bad edit is refused: counted as a failed reload, named in the log, and the next round
    // still runs on the last good configuration (margin 0.5).
    let failures_before = reloads(&bed.metrics_addr, "failure").await?;
    std::fs::write(
        &bed.config_path,
        "recommenders: [this is not: a configuration\n",
    )?;
    wait_until(
        "the bad reload refused",
        Duration::from_secs(60),
        || async {
            Ok((reloads(&bed.metrics_addr, "failure").await? > failures_before).then_some(()))
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;
    let log = bed.craned.logs();
    assert!(
        log.contains(&bed.config_path.display().to_string()),
        "the refused reload names the file:\n{log}"
    );
    bed.next_round("bad-config", "a round after the bad edit")
        .await
        .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;
    bed.wait_web_app(
        "web's recommendation still from the last good configuration",
        bed.web_app_targets(0.5),
    )
    .await
    .with_context(|| format!("craned log:\n{}", bed.craned.logs()))?;
    bed.craned.ensure_running()
}
