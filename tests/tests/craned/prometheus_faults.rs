//! Prometheus fails in each way a round can meet: the round still completes, the
//! Recommendation keeps its value and says why it is not Ready, and craned keeps running.
//! Once Prometheus answers again, craned retries by itself (30 s after the first failure)
//! rather than at the rule's next round a day later.

use std::time::Duration;

use anyhow::{Context, Result};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{Fault, wait_until};

use crate::bed::Bed;

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_faults_keep_the_last_value_say_why_and_are_retried() -> Result<()> {
    let mut bed = Bed::start("craned-faults", "0.15").await?;
    let good =
        wait_ready_recommendation(&bed.recs, &mut bed.craned, "web", Duration::from_secs(90))
            .await?;
    let good_value = good.data["status"]["recommendedValue"].clone();
    let faults = [
        (Fault::Down, "Connection refused"),
        (Fault::Status(500), "500"),
        (Fault::Garbage, "decod"),
        (Fault::Oversized(8 << 20), "--prometheus-max-response-size"),
    ];
    for (fault, cause) in faults {
        bed.proxy.set(fault.clone()).await?;
        bed.next_round("prometheus-fault", "a round while Prometheus fails")
            .await
            .with_context(|| format!("{fault:?}; craned log:\n{}", bed.craned.logs()))?;
        let failed = wait_until(
            "PrometheusUnavailable on web's recommendation",
            Duration::from_secs(60),
            || async {
                Ok(recommendations_of(&bed.recs, "web")
                    .await?
                    .into_iter()
                    .find(|r| {
                        let s = &r.data["status"];
                        s["conditions"][0]["status"] == "False"
                            && s["conditions"][0]["reason"] == "PrometheusUnavailable"
                    }))
            },
        )
        .await
        .with_context(|| format!("{fault:?}; craned log:\n{}", bed.craned.logs()))?;
        let status = &failed.data["status"];
        assert_eq!(
            status["recommendedValue"], good_value,
            "{fault:?} overwrote the last good value: {status:#}"
        );
        let message = status["conditions"][0]["message"].as_str().unwrap_or("");
        assert!(
            message.contains(cause),
            "{fault:?}: the condition does not name the cause ({cause:?}): {message}"
        );
        bed.proxy.set(Fault::None).await?;
        // No trigger: the retry brings it back.
        wait_until(
            "web's recommendation Ready again without a new round",
            Duration::from_secs(90),
            || async { ready_recommendation(&bed.recs, "web").await },
        )
        .await
        .with_context(|| format!("{fault:?}; craned log:\n{}", bed.craned.logs()))?;
        bed.craned.ensure_running()?;
        eprintln!("{fault:?}: PrometheusUnavailable naming {cause:?}, value kept, retried");
    }
    Ok(())
}
